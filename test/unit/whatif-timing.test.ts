import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { UpdatePolicyObject } from '../../src/whatif/objects.ts';
import type { RunObservations } from '../../src/whatif/observations.ts';
import {
  compressDuration,
  compressPolicy,
  observedAtSpeed,
  poolTimes,
  TimingError,
  twinTiming,
} from '../../src/whatif/timing.ts';

const policy = (spec: UpdatePolicyObject['spec']): UpdatePolicyObject => ({
  apiVersion: 'nuo.dev/v1alpha1',
  kind: 'UpdatePolicy',
  metadata: { name: 'main' },
  spec,
});

test('compressDuration divides a Go duration into whole milliseconds', () => {
  const cases: [string, number, string][] = [
    ['30s', 10, '3000ms'],
    ['10m', 10, '60000ms'],
    ['1h30m', 60, '90000ms'],
    ['1m', 7, '8571ms'],
    ['0', 10, '0'],
    ['0s', 10, '0'],
    ['1ms', 10, '0'],
    ['90s', 1, '90000ms'],
  ];
  for (const [text, speed, want] of cases)
    assert.equal(compressDuration(text, speed), want, `${text} / ${speed}`);
});

test('compressPolicy divides every duration, defaults included, but the drain timeout, and keeps the rest', () => {
  const p = policy({
    maxUnavailable: 2,
    drain: { timeout: '5m', force: true },
    reboot: { soak: '1m', retryBackoff: '20s' },
    notifications: [{ secretKey: 'slack', blockedFor: '30m' }],
    coexistence: { kured: { daemonSet: { namespace: 'kube-system', name: 'kured' }, lockTTL: '2m' } },
  });
  const c = compressPolicy(p, 10);
  assert.equal(c.spec.maxUnavailable, 2);
  assert.equal(c.spec.drain?.force, true);
  assert.equal(c.spec.drain?.timeout, '5m', 'drains run at their own pace in a twin');
  assert.deepEqual(
    {
      rebootTimeout: c.spec.reboot?.rebootTimeout,
      returnTimeout: c.spec.reboot?.returnTimeout,
      soak: c.spec.reboot?.soak,
      minGrantSpacing: c.spec.reboot?.minGrantSpacing,
      retryBackoff: c.spec.reboot?.retryBackoff,
      retryBackoffMax: c.spec.reboot?.retryBackoffMax,
    },
    // The defaults (10m, 10m, 0s, 1h) divided as the given ones are.
    {
      rebootTimeout: '60000ms',
      returnTimeout: '60000ms',
      soak: '6000ms',
      minGrantSpacing: '0',
      retryBackoff: '2000ms',
      retryBackoffMax: '360000ms',
    },
  );
  assert.equal(c.spec.notifications?.[0]?.blockedFor, '180000ms');
  assert.equal(c.spec.coexistence?.kured?.lockTTL, '12000ms');
  assert.equal(p.spec.drain?.timeout, '5m', 'the given policy is left as it was');
  assert.equal(compressPolicy(p, 1), p, 'speed 1 changes nothing');
});

test('compressPolicy keeps windows and scheduled budgets as written, and divides the failed-slot TTL, remediation waits and the pause between waves', () => {
  const windows: NonNullable<UpdatePolicyObject['spec']['windows']>[] = [
    { weekly: [{ days: ['Mon'], start: '01:00', end: '05:00' }] },
    { cron: [{ schedule: '0 2 * * *', duration: '3h' }] },
    { exclusions: [{ start: '2026-12-24', end: '2026-12-27' }] },
  ];
  for (const w of windows) assert.deepEqual(compressPolicy(policy({ windows: w }), 10).spec.windows, w);
  const budgets = [{ name: 'night', nodes: 2, windows: windows[1] }];
  assert.deepEqual(compressPolicy(policy({ budgets }), 10).spec.budgets, budgets);
  const more = compressPolicy(
    policy({
      reboot: { failedSlotTTL: '30m' },
      remediation: { conditions: [{ type: 'KernelDeadlock', for: '5m' }] },
    }),
    10,
  );
  assert.equal(more.spec.reboot?.failedSlotTTL, '180000ms');
  assert.equal(more.spec.remediation?.conditions[0]?.for, '30000ms');
  const waves = compressPolicy(policy({ rollout: { waves: { initial: 1, pauseBetween: '10m' } } }), 10);
  assert.equal(waves.spec.rollout?.waves?.pauseBetween, '60000ms');
});

test('twinTiming: host down for reboot plus return, divided by speed, with the deadline', () => {
  const cases: {
    flags: Parameters<typeof twinTiming>[1];
    spec?: UpdatePolicyObject['spec'];
    want: { hostDownMs: number; timeoutMs: number } | RegExp;
  }[] = [
    {
      flags: { rebootMs: 60_000, returnMs: 0, speed: 1, timeoutMs: 600_000 },
      want: { hostDownMs: 60_000, timeoutMs: 600_000 },
    },
    {
      flags: { rebootMs: 60_000, returnMs: 20_000, speed: 10, timeoutMs: 600_000 },
      want: { hostDownMs: 8000, timeoutMs: 60_000 },
    },
    {
      flags: { rebootMs: 1000, returnMs: 0, speed: 0.5, timeoutMs: 1000 },
      want: /--speed must be from 1 to 100, got 0.5/,
    },
    {
      flags: { rebootMs: 1000, returnMs: 0, speed: 101, timeoutMs: 1000 },
      want: /--speed must be from 1 to 100/,
    },
    {
      // 4 min to boot, 2 more to be Ready: only the boot counts against a 5 min rebootTimeout.
      flags: { rebootMs: 240_000, returnMs: 120_000, speed: 1, timeoutMs: 1000 },
      spec: { reboot: { rebootTimeout: '5m' } },
      want: /UpdatePolicy main's hosts \(360 s: reboot flag, return flag\) exceeds its reboot.rebootTimeout \(300 s\)/,
    },
    {
      // A boot longer than the timeout fails for real too: predicted, not refused.
      flags: { rebootMs: 360_000, returnMs: 60_000, speed: 1, timeoutMs: 1000 },
      spec: { reboot: { rebootTimeout: '5m' } },
      want: { hostDownMs: 420_000, timeoutMs: 1000 },
    },
  ];
  for (const c of cases) {
    const run = () => twinTiming([policy(c.spec ?? {})], c.flags);
    if (c.want instanceof RegExp)
      assert.throws(run, (e) => e instanceof TimingError && (c.want as RegExp).test(e.message));
    else {
      const t = run();
      assert.deepEqual({ hostDownMs: t.hostDownMs, timeoutMs: t.timeoutMs }, c.want, JSON.stringify(c.flags));
      assert.equal(t.policies.length, 1);
    }
  }
});

test('observedAtSpeed multiplies every time back, and leaves a real-time run alone', () => {
  const o: RunObservations = {
    elapsedMs: 5000,
    timedOut: false,
    rebootMs: 600,
    nodes: [
      {
        name: 'n1',
        phases: [
          { phase: 'BeforeReboot', atMs: 100 },
          { phase: 'Idle', atMs: 2500, reason: 'done' },
        ],
        reboots: 1,
        notReady: false,
        finished: true,
        explain: [],
        windows: [],
      },
    ],
    evictions: [
      { atMs: 200, pod: 'a/p', code: 201, createdMs: -40 },
      { atMs: 300, pod: 'a/q', code: 429, pdb: 'a/pdb' },
    ],
    pdbs: [{ name: 'a/pdb', disruptionsAllowed: 0 }],
    violations: [],
  };
  const back = observedAtSpeed(o, 10);
  assert.equal(back.elapsedMs, 50_000);
  assert.equal(back.rebootMs, 6000);
  assert.equal(back.speed, 10);
  assert.deepEqual(
    back.nodes[0]?.phases.map((p) => p.atMs),
    [1000, 25_000],
  );
  assert.equal(back.nodes[0]?.phases[1]?.reason, 'done');
  assert.deepEqual(
    back.evictions.map((e) => [e.atMs, e.createdMs]),
    [
      [2000, -400],
      [3000, undefined],
    ],
  );
  assert.deepEqual(back.pdbs, o.pdbs);
  assert.equal(observedAtSpeed(o, 1), o);
});

const measured = (
  name: string,
  rebootP50Seconds?: number,
  returnP50Seconds?: number,
): UpdatePolicyObject => ({
  ...policy({}),
  metadata: { name },
  status: {
    durations: {
      samples: 7,
      drainSeconds: [],
      rebootSeconds: [],
      returnSeconds: [],
      ...(rebootP50Seconds !== undefined ? { rebootP50Seconds } : {}),
      ...(returnP50Seconds !== undefined ? { returnP50Seconds } : {}),
    },
  },
});

test('poolTimes: a flag given wins, else the median nuo measured in the pool, else the default', () => {
  const cases: Array<
    [string, UpdatePolicyObject | undefined, { rebootMs?: number; returnMs?: number }, object]
  > = [
    [
      'no flag, no measure: the defaults',
      undefined,
      {},
      { rebootMs: 60_000, returnMs: 0, rebootFrom: 'default', returnFrom: 'default' },
    ],
    [
      'no flag: the measures',
      measured('main', 95.5, 12),
      {},
      {
        rebootMs: 95_500,
        returnMs: 12_000,
        rebootFrom: 'measured',
        returnFrom: 'measured',
        measuredAttempts: 7,
      },
    ],
    [
      '--reboot-time given: it, and the measured return',
      measured('main', 95.5, 12),
      { rebootMs: 30_000 },
      { rebootMs: 30_000, returnMs: 12_000, rebootFrom: 'flag', returnFrom: 'measured', measuredAttempts: 7 },
    ],
    [
      'both flags: no measure used',
      measured('main', 95.5, 12),
      { rebootMs: 30_000, returnMs: 0 },
      { rebootMs: 30_000, returnMs: 0, rebootFrom: 'flag', returnFrom: 'flag' },
    ],
    [
      'a status without a reboot median: the default for it',
      measured('main', undefined, 3),
      {},
      {
        rebootMs: 60_000,
        returnMs: 3000,
        rebootFrom: 'default',
        returnFrom: 'measured',
        measuredAttempts: 7,
      },
    ],
  ];
  for (const [what, m, flags, want] of cases)
    assert.deepEqual(poolTimes('main', m, flags), { pool: 'main', ...want }, what);
});

test('twinTiming: each pool down for its own times, measured in the snapshot policy of its name', () => {
  const given = [
    { ...policy({}), metadata: { name: 'a' } },
    { ...policy({}), metadata: { name: 'b' } },
  ];
  const t = twinTiming(given, { speed: 10, timeoutMs: 600_000 }, [measured('a', 40, 10)]);
  assert.deepEqual(t.hostDownMsByPool, { a: 5000, b: 6000 });
  assert.equal(t.hostDownMs, 6000, 'pools that differ: the defaults');
  const one = twinTiming([given[0] as UpdatePolicyObject], { speed: 10, timeoutMs: 600_000 }, [
    measured('a', 40, 10),
  ]);
  assert.equal(one.hostDownMs, 5000, 'the one time the pools share');
  assert.deepEqual(
    t.times.map((x) => [x.pool, x.rebootFrom, x.returnFrom]),
    [
      ['a', 'measured', 'measured'],
      ['b', 'default', 'default'],
      [undefined, 'default', 'default'],
    ],
  );
});
