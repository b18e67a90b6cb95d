import assert from 'node:assert/strict';
import test from 'node:test';
import type { Plan, PlanSpec } from '../../src/api/plan.ts';
import { NUO_PLANS } from '../../src/api/plan-groups.ts';
import {
  completionLabels,
  nameTaken,
  type PlanEntry,
  passPlan,
  planDrainSettings,
  planPrepare,
} from '../../src/operator/plans/plan-resolve.ts';
import type { DrainSettings } from '../../src/operator/write/drain-runner.ts';

const upgrade = { image: 'example.com/os' };
const spec = (over: Partial<PlanSpec> = {}): PlanSpec => ({ version: 'v1', upgrade, ...over }) as PlanSpec;

test('planPrepare: a drain (asked for, or implied by a reboot), a cordon, or neither', () => {
  assert.equal(planPrepare(spec({ drain: {} })), 'drain');
  assert.equal(planPrepare(spec({ reboot: true })), 'drain', 'nuo reboots only a drained node');
  assert.equal(planPrepare(spec({ cordon: true })), 'cordon');
  assert.equal(planPrepare(spec()), 'none');
});

test('completionLabels: SUC’s $(LATEST_VERSION) (the resolved version) and $(LATEST_HASH)', () => {
  const labels = completionLabels(
    spec({
      postCompleteLabels: {
        'k3s.io/version': '$(LATEST_VERSION)',
        'os/hash': 'h-$(LATEST_HASH)',
        plain: 'x',
      },
    }),
    'v1.30.2-k3s1',
    'abc',
  );
  assert.deepEqual(labels, { 'k3s.io/version': 'v1.30.2-k3s1', 'os/hash': 'h-abc', plain: 'x' });
  assert.deepEqual(completionLabels(spec(), 'v1', 'abc'), {});
});

test('planDrainSettings: kubectl drain’s options as SUC passes them, in nuo’s engine; every drain ends', () => {
  const pool: DrainSettings = {
    timeoutMs: 600_000,
    gracePeriodSeconds: 30,
    deleteEmptyDirData: false,
    force: false,
    podSelector: 'app=x',
    onFailure: { action: 'Skip', afterAttempts: 3 },
  };
  assert.equal(planDrainSettings(spec(), pool), pool, 'a Plan without drain: the pool’s (a reboot’s drain)');
  const defaults = planDrainSettings(spec({ drain: {} }), pool);
  assert.deepEqual(defaults, {
    timeoutMs: 600_000,
    gracePeriodSeconds: -1,
    deleteEmptyDirData: true,
    force: false,
    podSelector: '',
    ignoreDaemonSets: true,
    skipWaitForDeleteTimeoutSeconds: 0,
    onFailure: { action: 'Skip', afterAttempts: 3 },
  });
  const set = planDrainSettings(
    spec({
      drain: {
        timeout: '5m',
        gracePeriod: 10,
        deleteLocalData: false,
        force: true,
        ignoreDaemonSets: false,
        skipWaitForDeleteTimeout: 60,
        podSelector: { matchLabels: { tier: 'web' } },
      },
    }),
    pool,
  );
  assert.equal(set.timeoutMs, 300_000);
  assert.equal(set.gracePeriodSeconds, 10);
  assert.equal(set.deleteEmptyDirData, false, 'the old flag name says no');
  assert.equal(set.force, true);
  assert.equal(set.ignoreDaemonSets, false, 'DaemonSet pods refused, as kubectl without the flag');
  assert.equal(set.skipWaitForDeleteTimeoutSeconds, 60);
  assert.equal(set.podSelector, 'tier=web');
  assert.equal(
    planDrainSettings(spec({ drain: { timeout: 120e9 } }), pool).timeoutMs,
    120_000,
    'nanoseconds',
  );
  assert.equal(
    planDrainSettings(spec({ drain: { timeout: 0 } }), pool).timeoutMs,
    600_000,
    '0 is no timeout: the pool’s',
  );
});

test('nameTaken: the first Plan by ref keeps a name every namespace shares', () => {
  const taken = nameTaken([
    { ref: 'ops/os', name: 'os' },
    { ref: 'apps/os', name: 'os' },
    { ref: 'ops/kernel', name: 'kernel' },
  ]);
  assert.deepEqual([...taken], [['ops/os', 'apps/os']]);
  const long = 'k'.repeat(70);
  assert.deepEqual(
    [
      ...nameTaken([
        { ref: 'ops/a', name: `${long}a` },
        { ref: 'ops/b', name: `${long}b` },
        { ref: 'apps/a', name: `${long}a` },
      ]),
    ],
    [['ops/a', 'apps/a']],
    'long names: two that differ past 63 characters are two names; the same long name twice is taken',
  );
});

const entry = (s: PlanSpec, over: Partial<PlanEntry> = {}): PlanEntry => ({
  ref: 'ops/os',
  group: NUO_PLANS,
  name: 'os',
  namespace: 'ops',
  uid: 'u',
  generation: 1,
  plan: {
    apiVersion: 'nuo.dev/v1alpha1',
    kind: 'Plan',
    metadata: { name: 'os', namespace: 'ops' },
    spec: s,
  } as Plan,
  errors: [],
  version: 'v1',
  hash: 'h1',
  ...over,
});

test('passPlan: ready only when valid and resolved; its selector, concurrency and completion', () => {
  const t = Date.parse('2026-11-25T12:00:00Z'); // a Wednesday
  const p = passPlan(
    entry(spec({ concurrency: 3, nodeSelector: { matchLabels: { os: 'linux' } }, postCompleteDelay: '2m' })),
    t,
  );
  assert.equal(p.ready, true);
  assert.equal(p.selects({ os: 'linux' }), true);
  assert.equal(p.selects({ os: 'windows' }), false);
  assert.equal(p.concurrency, 3);
  assert.equal(p.completion.postCompleteDelayMs, 120_000);
  assert.equal(p.hold, undefined);
  for (const [what, over] of [
    ['invalid', { errors: [{ field: 'spec.window', message: 'x' }] }],
    ['no version yet', { version: undefined }],
    ['no hash yet', { hash: undefined }],
  ] as const) {
    const q = passPlan(entry(spec(), over as Partial<PlanEntry>), t);
    assert.equal(q.ready, false, what);
    assert.equal(q.selects({}), false, `${what}: selects no node`);
  }
  assert.equal(passPlan(entry(spec()), t).selects({ any: 'thing' }), true, 'no selector: every node');
});

test('passPlan: outside its window the Plan holds its nodes until the window opens', () => {
  const t = Date.parse('2026-11-25T12:00:00Z'); // Wednesday noon UTC
  const closed = passPlan(
    entry(spec({ window: { days: ['thursday'], startTime: '01:00', endTime: '03:00', timeZone: 'UTC' } })),
    t,
  );
  assert.match(closed.hold?.reason ?? '', /outside Plan ops\/os's window \(opens 2026-11-26T01:00:00.000Z\)/);
  assert.equal(closed.hold?.until, Date.parse('2026-11-26T01:00:00Z'));
  const open = passPlan(
    entry(spec({ window: { days: ['wednesday'], startTime: '11:00', endTime: '13:00', timeZone: 'UTC' } })),
    t,
  );
  assert.equal(open.hold, undefined);
  // On a simulated clock showing Thursday 00:30 now, 60 times as fast: it opens in half a real minute.
  const clock = { origin: Date.parse('2026-11-26T00:30:00Z'), start: t, speed: 60 };
  const sim = passPlan(
    entry(spec({ window: { days: ['thursday'], startTime: '01:00', endTime: '03:00', timeZone: 'UTC' } })),
    t,
    undefined,
    clock,
  );
  assert.match(sim.hold?.reason ?? '', /\(opens 2026-11-26T01:00:00.000Z\)/);
  assert.equal(sim.hold?.until, t + 30_000);
  const inside = passPlan(
    entry(spec({ window: { days: ['thursday'], startTime: '01:00', endTime: '03:00', timeZone: 'UTC' } })),
    t + 60_000,
    undefined,
    clock,
  );
  assert.equal(inside.hold, undefined, 'a real minute on, 01:30 on the simulated clock: open');
});

test("passPlan: onFailure Stop carries the Plan's generation and its status's failures; Retry (the default) none", () => {
  const failed = [{ node: 'a', error: 'x', at: '2026-01-01T00:00:00Z', hash: 'h', generation: 1 }];
  const stopping = entry({ ...spec(), onFailure: 'Stop' });
  stopping.plan.status = { failed };
  assert.deepEqual(passPlan(stopping, 0).stop, { generation: 1, failed });
  assert.equal(passPlan(entry(spec()), 0).stop, undefined);
  assert.equal(passPlan(entry({ ...spec(), onFailure: 'Retry' }), 0).stop, undefined);
});
