import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { UpdatePolicySpec } from '../../src/api/update-policy.ts';
import { checksWait } from '../../src/operator/decide/health-gate.ts';
import {
  expireReadings,
  healthGate,
  nodeBlocks,
  type PolicyBlockers,
  policyHold,
} from '../../src/operator/policies/pool-holds.ts';
import { roundIntervalMs } from '../../src/operator/read/blocker-watch.ts';
import { HEALTH_MAX_AGE_MS } from '../../src/operator/read/health-reads.ts';
import { POD_READ_TIMEOUT_MS, tooOld } from '../../src/operator/read/pod-reads.ts';
import { type ResolvedPolicy, resolvePolicy } from '../../src/policy/resolve.ts';

const NOW = new Date('2026-11-27T12:00:00Z');

const resolved = (spec: UpdatePolicySpec): ResolvedPolicy => {
  const r = resolvePolicy({ metadata: { name: 'p', generation: 1 }, spec });
  assert.ok(r.ok, JSON.stringify(!r.ok && r.errors));
  return r.policy;
};

const CHECK = {
  name: 'ceph',
  object: { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'default', name: 'ceph', expression: 'true' },
};
/** A policy with every kind of reading, maxAge 1m. */
const EVERY = resolved({
  blockers: {
    prometheus: { url: 'http://prom:9090' },
    pods: [{ selector: { matchLabels: { app: 'backup' } }, scope: 'Node' }],
  },
  healthChecks: [CHECK],
});
/** Readings that all pass: no alert, no blocking pod, the check healthy. */
const CLEAR: PolicyBlockers = {
  prometheus: { blocked: false, reason: 'no matching alert firing' },
  pods: [],
  health: { at: NOW.getTime(), checks: [{ name: 'ceph', healthy: true, reading: 'ConfigMap ceph: true' }] },
};

test('a reading older than readings.maxAge, on the monotonic clock from when it was taken, is replaced by its age; a fresh one stays', () => {
  const taken = { prometheus: 1_000, pods: 50_000, health: 61_000 };
  const at = 100_000; // 99 s, 50 s and 39 s after each was taken
  assert.deepEqual(expireReadings(CLEAR, taken, 60_000, at), {
    ...CLEAR,
    prometheus: { expired: { ageMs: 99_000, maxAgeMs: 60_000 } },
  });
  assert.deepEqual(expireReadings(CLEAR, taken, 60_000, 61_000), CLEAR, 'exactly maxAge old still counts');
  assert.deepEqual(expireReadings({}, taken, 60_000, at), {}, 'nothing read: nothing to expire');
  assert.deepEqual(expireReadings(CLEAR, {}, 60_000, at), CLEAR, 'no time known (a reading taken just now)');
});

test('an expired reading holds the pool, fails closed, and says how old it is in the condition but not in the reason', () => {
  assert.equal(policyHold(EVERY, [], NOW, CLEAR), undefined, 'every reading fresh and clear: no hold');
  const cases: Array<[string, keyof PolicyBlockers, string, string]> = [
    ['Prometheus', 'prometheus', 'PrometheusUnavailable', 'the Prometheus reading'],
    ['the pod blockers', 'pods', 'PodBlocker', 'the pod blockers reading'],
    ['the health checks', 'health', 'HealthCheck', 'the health checks reading'],
  ];
  for (const [what, part, code, words] of cases) {
    const at = (age: number) => ({ ...CLEAR, [part]: { expired: { ageMs: age, maxAgeMs: 60_000 } } });
    const hold = policyHold(EVERY, [], NOW, at(95_400));
    assert.equal(hold?.code, code, what);
    assert.equal(hold?.reason, `waiting: ${words} is too old (readings.maxAge 60 s)`, what);
    assert.match(hold?.detail ?? '', /^the reading is 95 s old, older than maxAge 60 s/, what);
    assert.equal(
      policyHold(EVERY, [], NOW, at(180_000))?.reason,
      hold?.reason,
      `${what}: the reason a waiting node shows does not change as the reading ages`,
    );
  }
});

test('an expired pod reading holds no single node (node-scoped blockers): the whole pool waits instead', () => {
  const expired = { expired: { ageMs: 90_000, maxAgeMs: 60_000 } };
  assert.deepEqual(nodeBlocks(EVERY, expired), new Map());
  assert.deepEqual(
    nodeBlocks(EVERY, [{ namespace: 'b', name: 'backup-0', node: 'n1', blocker: 0 }]).get('n1')?.reason,
    'waiting: pod b/backup-0 (blockers.pods[0]) is running on it',
  );
});

test("a finished node's health gate waits on an expired health reading, naming maxAge", () => {
  const gate = healthGate(EVERY, { expired: { ageMs: 90_000, maxAgeMs: 60_000 } });
  assert.deepEqual(gate, { expired: 'their reading is too old (readings.maxAge 60 s)' });
  assert.equal(checksWait(gate, 0), 'the health checks (their reading is too old (readings.maxAge 60 s))');
});

test('readings.maxAge and readings.timeout: defaults 1m and 10s, each bounded, the timeout less than maxAge', () => {
  assert.deepEqual(resolved({}).readings, { maxAgeMs: 60_000, timeoutMs: 10_000 });
  assert.deepEqual(resolved({ readings: { maxAge: '5m', timeout: '30s' } }).readings, {
    maxAgeMs: 300_000,
    timeoutMs: 30_000,
  });
  const errors = (readings: UpdatePolicySpec['readings']) => {
    const r = resolvePolicy({ metadata: { name: 'p' }, spec: { readings } });
    return r.ok ? [] : r.errors.map((e) => `${e.field}: ${e.message}`);
  };
  assert.deepEqual(errors({ maxAge: '2h' }), ['readings.maxAge: 2h: must be from 10s to 1h']);
  assert.deepEqual(errors({ maxAge: '1m', timeout: '500ms' }), [
    'readings.timeout: 500ms: must be from 1s to 5m',
  ]);
  assert.deepEqual(errors({ maxAge: '20s', timeout: '20s' }), [
    'readings.timeout: 20s: must be less than maxAge (20s): a reading that took longer would be too old when it lands',
  ]);
  assert.match(errors({ maxAge: 'soon' }).join(), /^readings\.maxAge: /);
});

test('the blockers are read every interval, or often enough to renew a reading before it is maxAge old', () => {
  const table: Array<[number, { maxAgeMs: number; timeoutMs: number }, number]> = [
    [15_000, { maxAgeMs: 60_000, timeoutMs: 10_000 }, 15_000],
    [60_000, { maxAgeMs: 60_000, timeoutMs: 10_000 }, 25_000],
    [15_000, { maxAgeMs: 10_000, timeoutMs: 9_000 }, 1_000],
  ];
  for (const [interval, readings, want] of table)
    assert.equal(roundIntervalMs(interval, readings), want, JSON.stringify([interval, readings]));
});

test("a node's pods read too long ago (the reads since failed or hung) count as not read", () => {
  assert.equal(tooOld(undefined, 60_000, 100_000), true, 'never read');
  assert.equal(tooOld({}, 60_000, 100_000), true, 'no read succeeded');
  assert.equal(tooOld({ valueAt: 40_000 }, 60_000, 100_000), false, 'exactly maxAge old');
  assert.equal(tooOld({ valueAt: 39_999 }, 60_000, 100_000), true, 'older');
  assert.ok(
    POD_READ_TIMEOUT_MS < HEALTH_MAX_AGE_MS,
    'a read that times out leaves the reading short of too old',
  );
});
