import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseBtime } from '../../src/agent/linux.ts';
import { agentStep } from '../../src/agent/step.ts';
import { Annotations } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import { decide } from '../../src/operator/decide/decide.ts';
import { remediationOnly } from '../../src/operator/decide/need.ts';
import { type NodeView, viewNode } from '../../src/operator/decide/node-view.ts';
import { stepHolder } from '../../src/operator/decide/phase-steps.ts';
import {
  policyReading,
  RATE_WINDOW_MS,
  rateWait,
  refreshReading,
  refreshSpread,
  remediationRate,
  remediationReading,
  shortDuration,
} from '../../src/operator/decide/policy-need.ts';
import type { PolicyReading } from '../../src/operator/decide/policy-reading.ts';
import { patchFor } from '../../src/operator/write/node-writes.ts';
import { resolvePolicy } from '../../src/policy/resolve.ts';
import { ago, decideConfig, NOW, node } from './operator-fixtures.ts';

const t = NOW.getTime();
const MIN = 60_000;
const HOUR = 3_600_000;
const KERNEL = { conditions: [{ type: 'KernelDeadlock', status: 'True', forMs: 5 * MIN }], maxPerHour: 1 };
const cond = (type: string, status: string, sinceMin?: number) => ({
  type,
  status,
  ...(sinceMin === undefined ? {} : { since: new Date(t - sinceMin * MIN) }),
});

test('a condition asks for a remediation once it has held its status for `for`, and says since when', () => {
  const table: Array<[string, NodeView['conditions'], PolicyReading]> = [
    ['no such condition', [cond('DiskPressure', 'True', 60)], {}],
    ['the condition, not in its status', [cond('KernelDeadlock', 'False', 60)], {}],
    [
      'held 4 of 5 minutes: due in one',
      [cond('KernelDeadlock', 'True', 4)],
      { dueAt: t + MIN, faulty: true },
    ],
    [
      'held 6 minutes: due',
      [cond('KernelDeadlock', 'True', 6)],
      {
        need: {
          kind: 'remediation',
          reason: `remediation: KernelDeadlock=True since ${new Date(t - 6 * MIN).toISOString()} (for 5m or more)`,
        },
        faulty: true,
      },
    ],
    ['no transition time: faulty, never due on a guess', [cond('KernelDeadlock', 'True')], { faulty: true }],
  ];
  for (const [what, conditions, want] of table)
    assert.deepEqual(remediationReading({ name: 'node-a', conditions }, KERNEL, t), want, what);
});

test('a boot older than maxUptime plus its spread asks for a refresh; a younger one says when it will', () => {
  const max = 24 * HOUR;
  const spread = refreshSpread('node-a', max);
  const boot = (msAgo: number) => ({ name: 'node-a', bootTime: new Date(t - msAgo) });
  assert.deepEqual(refreshReading({ name: 'node-a' }, max, t), {}, 'no boot time reported: never');
  assert.deepEqual(refreshReading(boot(HOUR), max, t), { dueAt: t - HOUR + max + spread }, 'young');
  assert.deepEqual(refreshReading(boot(max + spread - 1), max, t), { dueAt: t + 1 }, 'within its spread');
  assert.deepEqual(refreshReading(boot(max + spread), max, t), {
    need: {
      kind: 'refresh',
      reason: `refresh: up since ${new Date(t - max - spread).toISOString()} (maxUptime 1d)`,
    },
  });
});

test("each node's refresh spread is its own, fixed by its name, within a tenth of maxUptime", () => {
  const max = 7 * 24 * HOUR;
  const spreads = Array.from({ length: 50 }, (_, i) => refreshSpread(`node-${i}`, max));
  for (const s of spreads) assert.ok(s >= 0 && s < max / 10, `${s} within [0, max/10)`);
  assert.ok(new Set(spreads).size >= 45, 'nodes booted together come due at different times');
  assert.equal(refreshSpread('node-7', max), refreshSpread('node-7', max), 'the same on every operator');
});

test('a remediation comes before a refresh; the earliest moment either comes due is kept', () => {
  const n = {
    name: 'n',
    conditions: [cond('KernelDeadlock', 'True', 6)],
    bootTime: new Date(t - 100 * HOUR),
  };
  assert.equal(policyReading(n, { remediation: KERNEL, maxUptimeMs: HOUR }, t).need?.kind, 'remediation');
  assert.equal(
    policyReading({ ...n, conditions: [] }, { remediation: KERNEL, maxUptimeMs: HOUR }, t).need?.kind,
    'refresh',
  );
  const young = { name: 'n', conditions: [cond('KernelDeadlock', 'True', 1)], bootTime: new Date(t) };
  assert.deepEqual(policyReading(young, { remediation: KERNEL, maxUptimeMs: 10 * HOUR }, t), {
    dueAt: t + 4 * MIN,
    faulty: true,
  });
  assert.deepEqual(policyReading(n, {}, t), {}, 'a policy that asks for neither');
});

test('the rate limit counts the remediations the ledger recorded, a node registered again without its annotation too', () => {
  const iso = (minAgo: number) => new Date(t - minAgo * MIN).toISOString();
  const table: Array<
    [string, Parameters<typeof remediationRate>[0], { node: string; at: string }[], number[]]
  > = [
    [
      'a node deleted and registered again: its annotation is gone, the ledger still counts it',
      [{ name: 'a' }],
      [{ node: 'a', at: iso(10) }],
      [t - 10 * MIN],
    ],
    [
      "the ledger and the node name the same remediation: counted once, at the ledger's time",
      [{ name: 'a', remediatedAt: new Date(t - 10 * MIN + 50) }],
      [{ node: 'a', at: iso(10) }],
      [t - 10 * MIN],
    ],
    [
      'an annotation the ledger does not know (written before it kept them): counted',
      [{ name: 'a', remediatedAt: new Date(t - 20 * MIN) }, { name: 'b' }],
      [{ node: 'b', at: iso(10) }],
      [t - 20 * MIN, t - 10 * MIN],
    ],
    ['older than the hour: not counted', [{ name: 'a' }], [{ node: 'a', at: iso(61) }], []],
  ];
  for (const [what, nodes, recorded, recent] of table)
    assert.deepEqual(remediationRate(nodes, recorded, 1, t).recent, recent, what);
});

test('the rate limit counts the pool’s remediations within the hour, and those of the pass', () => {
  const at = (minAgo: number, name = `n${minAgo}`) => ({ name, remediatedAt: new Date(t - minAgo * MIN) });
  const rate = remediationRate([at(90), at(30), { name: 'never' }, at(10)], [], 2, t);
  assert.deepEqual(
    rate,
    { maxPerHour: 2, recent: [t - 30 * MIN, t - 10 * MIN], expired: [] },
    'older than an hour left out',
  );
  // Counted from when the deciding leader first saw each: one written 50 minutes ago on another leader's
  // clock, first seen now, holds a full hour; the ledger's records out of the hour are handed back.
  const firstSeen = new Map([['remediation/x/2026-11-24T11:10:00.000Z', t]]);
  const observed = (key: string, _mark: string, written: number) => firstSeen.get(key) ?? written;
  const records = [
    { node: 'x', at: '2026-11-24T11:10:00.000Z' },
    { node: 'y', at: new Date(t - 61 * MIN).toISOString() },
  ];
  const seen = remediationRate([], records, 1, t, RATE_WINDOW_MS, observed);
  assert.deepEqual(seen.recent, [t], 'from its first sight');
  assert.equal(rateWait(seen, 0)?.until, t + RATE_WINDOW_MS, 'a full hour from then');
  assert.deepEqual(seen.expired, [records[1]]);
  const table: Array<[string, number, number, number | undefined | 'none']> = [
    ['none within the hour', 1, 0, 'none'],
    ['one of two used', 2, 0, 'none'],
    ['one of one used: until it leaves the hour', 1, 0, t - 10 * MIN + RATE_WINDOW_MS],
  ];
  for (const [what, max, pass, until] of table) {
    const recent = what === 'none within the hour' ? [] : [t - 10 * MIN];
    const wait = rateWait({ maxPerHour: max, recent }, pass);
    if (until === 'none') assert.equal(wait, undefined, what);
    else assert.equal(wait?.until, until, what);
  }
  // On a calendar 60 times as fast an hour is a real minute: only the one 10 s ago counts, until it leaves it.
  const sim = remediationRate([at(30), { name: 'b', remediatedAt: new Date(t - 10_000) }], [], 1, t, MIN);
  assert.deepEqual(sim, { maxPerHour: 1, recent: [t - 10_000], expired: [], hourMs: MIN });
  assert.equal(rateWait(sim, 0)?.until, t - 10_000 + MIN);
  const passOnly = rateWait({ maxPerHour: 1, recent: [] }, 1);
  assert.match(passOnly?.reason ?? '', /^waiting: remediation rate limit \(1 an hour in the pool/);
  assert.equal(passOnly?.until, undefined, 'taken this pass: the next pass knows when');
  assert.equal(
    rateWait({ maxPerHour: 2, recent: [t - 50 * MIN, t - 20 * MIN] }, 1)?.until,
    t - 20 * MIN + HOUR,
  );
});

/** A node outside an attempt whose policy asks for a remediation. */
const remediable = (name: string, annotations: Record<string, string> = {}): NodeView => ({
  ...viewNode(node(name, { annotations })),
  policyAsks: {
    need: { kind: 'remediation', reason: 'remediation: KernelDeadlock=True since then' },
    faulty: true,
  },
});

test('decide admits one remediation an hour through the budget; the others wait for the rate limit', () => {
  const snapshot = (nodes: NodeView[]) => ({
    nodes,
    ledger: { slots: {} },
    draining: new Set<string>(),
    admitting: new Set<string>(),
    health: new Map(),
  });
  const cfg = { ...decideConfig, maxUnavailable: { kind: 'count' as const, value: 3 } };
  const first = decide(
    snapshot([remediable('a'), remediable('b')]),
    { ...cfg, remediationRate: { maxPerHour: 1, recent: [] } },
    NOW,
  );
  const admit = first.actions.find((a) => a.type === 'admit');
  assert.deepEqual(admit, {
    type: 'admit',
    node: 'a',
    reason: 'remediation: KernelDeadlock=True since then',
    for: 'Remediation',
    remediation: true,
  });
  const b = first.actions.find((a) => a.node === 'b');
  assert.equal(b?.type, 'pending');
  assert.match(b && 'reason' in b ? b.reason : '', /remediation rate limit/);

  const recent = t - 20 * MIN;
  const later = decide(
    snapshot([remediable('b'), { ...remediable('c'), rebootNeeded: true }]),
    { ...cfg, remediationRate: { maxPerHour: 1, recent: [recent] } },
    NOW,
  );
  assert.deepEqual(
    later.actions.filter((a) => a.type === 'admit').map((a) => a.node),
    ['c'],
    "an agent's need takes no remediation of the pool's",
  );
  assert.equal(later.wakeAt, recent + HOUR, 'looks again when the rate limit lets the next one go');
});

test('a remediation admission records its time; a completion that leaves the condition counts an ineffective reboot', () => {
  const n = remediable('a');
  const write = patchFor(
    { type: 'admit', node: 'a', reason: 'r', for: 'Remediation', remediation: true },
    n,
    decideConfig,
    NOW,
  );
  assert.equal(write.annotations[Annotations.remediatedAt], NOW.toISOString());
  assert.equal(
    patchFor({ type: 'admit', node: 'a', reason: 'r', for: 'Reboot' }, n, decideConfig, NOW).annotations[
      Annotations.remediatedAt
    ],
    undefined,
  );
  const back = (faulty: boolean): NodeView => ({
    ...viewNode(
      node('a', {
        annotations: { [Annotations.state]: Phase.afterReboot, [Annotations.stateSince]: ago(600) },
        readySince: ago(300),
      }),
    ),
    ...(faulty ? { policyAsks: { faulty: true } } : {}),
  });
  const step = (n: NodeView) =>
    stepHolder(n, {
      config: decideConfig,
      now: NOW,
      draining: new Set(),
      health: new Map([[n.name, { daemonSetPodsReady: true, detail: 'ready' }]]),
      wake: () => {},
      slotOf: () => undefined,
    });
  assert.deepEqual(step(back(true)), [
    { type: 'complete', node: 'a', reason: 'rebooted and healthy', needSurvived: true },
  ]);
  assert.deepEqual(step(back(false)), [{ type: 'complete', node: 'a', reason: 'rebooted and healthy' }]);
  // A refresh whose boot time, for the new boot, is still past maxUptime: the boot time does not advance,
  // so the refresh was ineffective, and counts towards the reboot loop like any other.
  const stuck: NodeView = {
    ...back(false),
    policyAsks: {
      need: { kind: 'refresh', reason: 'refresh: up since 2026-01-01T00:00:00.000Z (maxUptime 1d)' },
    },
  };
  assert.deepEqual(step(stuck), [
    { type: 'complete', node: 'a', reason: 'rebooted and healthy', needSurvived: true },
  ]);
});

test('the agent reports its boot time with its need, once; the kernel says it in /proc/stat', () => {
  const boot = '2026-11-20T08:00:00.000Z';
  const input = {
    bootId: 'b',
    grant: undefined,
    detection: { need: 'not-needed' as const, reason: 'up to date' },
    rebootRequested: false,
    unschedulable: false,
    bootTime: boot,
  };
  const reported = { [Annotations.bootTime]: boot, [Annotations.bootTimeBootId]: 'b' };
  assert.deepEqual(agentStep({ ...input, annotations: {} }).patch, reported, 'with the boot it belongs to');
  assert.deepEqual(agentStep({ ...input, annotations: reported }), {});
  // A boot whose time the agent cannot read: the time of an earlier boot goes, rather than stand for it.
  const { bootTime: _unread, ...blind } = input;
  const earlier = { [Annotations.bootTime]: '2026-11-01T08:00:00.000Z', [Annotations.bootTimeBootId]: 'a' };
  assert.deepEqual(agentStep({ ...blind, annotations: earlier }).patch, {
    [Annotations.bootTime]: null,
    [Annotations.bootTimeBootId]: null,
  });
  assert.deepEqual(agentStep({ ...blind, annotations: reported }), {}, "this boot's own stays");
  assert.equal(
    parseBtime('cpu  1 2 3\nbtime 1795161600\nprocesses 9\n', '/proc/stat').toISOString(),
    '2026-11-20T08:00:00.000Z',
  );
  assert.throws(() => parseBtime('cpu 1\n', '/proc/stat'), /\/proc\/stat has no btime line/);
  assert.equal(shortDuration(168 * HOUR), '7d');
  assert.equal(shortDuration(90 * MIN), '90m');
});

test("a node's view keeps its conditions but Ready and nuo's lifecycle ones, without heartbeats, and its boot and remediation times", () => {
  const v = viewNode({
    metadata: {
      name: 'n',
      annotations: {
        [Annotations.bootTime]: '2026-11-20T08:00:00Z',
        [Annotations.bootTimeBootId]: 'boot-7',
        [Annotations.remediatedAt]: 'soon',
      },
    },
    status: {
      nodeInfo: { bootID: 'boot-7' } as never,
      conditions: [
        { type: 'Ready', status: 'True' },
        { type: 'MaintenancePlanned', status: 'True', reason: 'NuoRebootNeeded' },
        {
          type: 'KernelDeadlock',
          status: 'True',
          lastTransitionTime: '2026-11-21T11:00:00Z' as never,
          lastHeartbeatTime: '2026-11-21T11:59:00Z' as never,
        },
      ],
    },
  });
  assert.deepEqual(v.conditions, [
    { type: 'KernelDeadlock', status: 'True', since: new Date('2026-11-21T11:00:00Z') },
  ]);
  assert.deepEqual(v.bootTime, new Date('2026-11-20T08:00:00Z'));
  const rebooted = viewNode({
    metadata: {
      name: 'n',
      annotations: { [Annotations.bootTime]: '2026-11-20T08:00:00Z', [Annotations.bootTimeBootId]: 'boot-7' },
    },
    status: { nodeInfo: { bootID: 'boot-8' } as never },
  });
  assert.equal(
    rebooted.bootTime,
    undefined,
    "an earlier boot's time, or one not tied to a boot, is not this boot's",
  );
  assert.equal(v.remediatedAt, undefined);
  assert.match(v.problems.join('; '), /nuo.dev\/remediated-at="soon" is not an RFC 3339 time/);
});

test('a policy resolves its remediation with defaults, and its maxUptime', () => {
  const r = resolvePolicy({
    metadata: { name: 'p' },
    spec: {
      remediation: { conditions: [{ type: 'KernelDeadlock' }, { type: 'X', status: 'False', for: '1h' }] },
      reboot: { maxUptime: '168h' },
    },
  });
  assert.ok(r.ok);
  assert.deepEqual(r.policy.remediation, {
    conditions: [
      { type: 'KernelDeadlock', status: 'True', forMs: 5 * MIN },
      { type: 'X', status: 'False', forMs: HOUR },
    ],
    maxPerHour: 1,
  });
  assert.equal(r.policy.reboot.maxUptimeMs, 168 * HOUR);
  const none = resolvePolicy({ metadata: { name: 'p' }, spec: {} });
  assert.ok(none.ok && none.policy.remediation === undefined && none.policy.reboot.maxUptimeMs === undefined);
});

test('a remediation is all the node needs only when no agent, request or Plan asks for a reboot too', () => {
  const base = remediable('a');
  const table: Array<[string, NodeView, boolean]> = [
    ['the condition alone', base, true],
    ["the agent's need too", { ...base, rebootNeeded: true }, false],
    ['a request due', { ...base, rebootRequested: new Date(t - MIN) }, false],
    ['a request for later', { ...base, rebootRequested: new Date(t + MIN) }, true],
    ['a refresh', { ...base, policyAsks: { need: { kind: 'refresh', reason: 'refresh' } } }, false],
  ];
  for (const [what, n, want] of table) assert.equal(remediationOnly(n, t), want, what);
});
