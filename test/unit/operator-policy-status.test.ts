import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Node } from '@kubernetes/client-node';
import { Annotations } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import type { UpdatePolicySpec } from '../../src/api/update-policy.ts';
import { decide } from '../../src/operator/decide/decide.ts';
import type { Ledger } from '../../src/operator/decide/ledger-view.ts';
import { viewNode } from '../../src/operator/decide/node-view.ts';
import type { PolicyEntry } from '../../src/operator/policies/policies.ts';
import { policyStatus, statusChanged, statusPatch } from '../../src/operator/policies/policy-status.ts';
import { planPools } from '../../src/operator/policies/pool-plan.ts';
import { resolvePolicy } from '../../src/policy/resolve.ts';
import { NOW, needs, node } from './operator-fixtures.ts';

function entry(spec: unknown, generation = 3): PolicyEntry {
  const current = resolvePolicy({
    metadata: { name: 'workers', generation },
    spec: spec as UpdatePolicySpec,
  });
  return {
    name: 'workers',
    uid: 'u',
    generation,
    current,
    ...(current.ok ? { lastValid: current.policy } : {}),
  };
}

function pass(
  e: PolicyEntry,
  now = NOW,
  blockers?: Parameters<typeof planPools>[0]['blockers'],
  ledger: Ledger = { slots: {} },
  extra: V1Node[] = [],
) {
  const nodes = [
    viewNode(node('a', { annotations: needs })),
    viewNode(node('b')),
    ...extra.map((n) => viewNode(n)),
  ];
  const plan = planPools({
    state: { known: true, crdMissing: false, policies: [e] },
    paused: false,
    nodes,
    ledger,
    now,
    ...(blockers ? { blockers } : {}),
  });
  const pool = plan.pools.find((p) => p.name === 'workers');
  if (!pool) return { status: policyStatus({ entry: e, conflicts: [], completed: false, now }) };
  const snapshot = {
    nodes: pool.nodes,
    ledger,
    draining: new Set<string>(),
    admitting: new Set<string>(),
    health: new Map(),
  };
  const decision = decide(snapshot, pool.config, now);
  return {
    status: policyStatus({ entry: e, pool: { pool, decision }, conflicts: [], completed: false, now }),
    decision,
  };
}

const condition = (s: ReturnType<typeof policyStatus>, type: string) =>
  s.conditions?.find((c) => c.type === type);

test('a valid, open policy: Ready, not Blocked, Progressing while a node needs a reboot, with the numbers', () => {
  const { status } = pass(entry({ maxUnavailable: 2 }));
  assert.equal(status.observedGeneration, 3);
  assert.deepEqual(
    status.conditions?.map((c) => [c.type, c.status, c.reason]),
    [
      ['Ready', 'True', 'Valid'],
      ['Blocked', 'False', 'NotBlocked'],
      ['Progressing', 'True', 'Updating'],
      ['NodesConflict', 'False', 'NoOverlap'],
      ['Halted', 'False', 'NotHalted'],
    ],
  );
  assert.equal(condition(status, 'Halted')?.message, 'no failure budget');
  assert.equal(condition(status, 'Progressing')?.message, '1 node(s) in an attempt, 0 waiting');
  assert.equal(status.nodes, 2);
  assert.equal(status.budget, 2);
  assert.equal(
    status.conditions?.every((c) => c.observedGeneration === 3),
    true,
  );
});

test('outside its window: Blocked OutsideWindow with the next window; paused: Blocked Paused', () => {
  const windowed = pass(
    entry({ windows: { weekly: [{ days: ['Sun'], start: '01:00', end: '02:00' }] } }),
  ).status;
  assert.deepEqual(
    [condition(windowed, 'Blocked')?.status, condition(windowed, 'Blocked')?.reason],
    ['True', 'OutsideWindow'],
  );
  assert.equal(windowed.nextWindow, '2026-11-22T01:00:00.000Z');
  const paused = pass(entry({ paused: true })).status;
  assert.equal(condition(paused, 'Blocked')?.reason, 'Paused');
});

test("a failing health check: Blocked HealthCheck, the check and what it read in the message; the node's reason names the check only", () => {
  const check = {
    name: 'ceph',
    object: { apiVersion: 'v1', kind: 'ConfigMap', name: 'c', expression: 'true' },
  };
  const reading = { at: 1, checks: [{ name: 'ceph', healthy: false, reading: 'ConfigMap c: false' }] };
  const { status, decision } = pass(entry({ healthChecks: [check] }), NOW, () => ({ health: reading }));
  assert.deepEqual(
    [condition(status, 'Blocked')?.reason, condition(status, 'Blocked')?.message],
    ['HealthCheck', 'waiting: health check ceph fails: ConfigMap c: false'],
  );
  const waiting = decision?.actions.find((a) => a.node === 'a');
  assert.equal(
    waiting && 'reason' in waiting ? waiting.reason : undefined,
    'waiting: health check ceph fails',
  );
});

test('invalid: Ready False InvalidSpec naming each field, and Blocked', () => {
  const status = pass(entry({ windows: { cron: [{ schedule: 'every day', duration: '1h' }] } })).status;
  assert.equal(condition(status, 'Ready')?.status, 'False');
  assert.equal(condition(status, 'Ready')?.reason, 'InvalidSpec');
  assert.match(condition(status, 'Ready')?.message ?? '', /windows\.cron\[0\]\.schedule/);
  assert.equal(condition(status, 'Blocked')?.status, 'True');
});

test('a second pass that changes nothing builds the same status: nothing to write; a change keeps unchanged times', () => {
  const first = entry({});
  const { status } = pass(first);
  const again = pass({ ...first, status }, new Date(NOW.getTime() + 60_000)).status;
  assert.equal(statusChanged(status, again), false);
  const paused = entry({ paused: true });
  const after = pass({ ...paused, status }, new Date(NOW.getTime() + 120_000)).status;
  assert.equal(statusChanged(status, after), true);
  assert.equal(condition(after, 'Ready')?.lastTransitionTime, condition(status, 'Ready')?.lastTransitionTime);
  assert.notEqual(
    condition(after, 'Blocked')?.lastTransitionTime,
    condition(status, 'Blocked')?.lastTransitionTime,
  );
});

test('waves: the rollout in the status; its first wave of 1 caps the slots below maxUnavailable', () => {
  const { status, decision } = pass(entry({ maxUnavailable: 2, rollout: { waves: { initial: 1 } } }));
  assert.deepEqual(status.rollout, {
    started: NOW.toISOString(),
    wave: 1,
    waveSize: 1,
    completedInWave: 0,
    failedAttempts: 0,
  });
  assert.equal(status.budget, 1, 'the wave is the tighter cap');
  assert.deepEqual(
    decision?.actions.filter((a) => a.type === 'admit').map((a) => a.node),
    ['a'],
  );
});

test('a spent failure budget: Halted True, Blocked Halted, nothing admitted; a resume after the failures clears it', () => {
  const failed = {
    since: NOW.toISOString(),
    wave: 1,
    waveSince: NOW.toISOString(),
    completed: 0,
    counted: [],
  };
  const ledger: Ledger = {
    slots: {},
    rollouts: {
      workers: {
        ...failed,
        failed: { 'x@1': '2026-11-21T11:00:00.000Z', 'y@1': '2026-11-21T11:10:00.000Z' },
      },
    },
  };
  const spec = { maxUnavailable: 2, rollout: { failureBudget: { maxFailedAttempts: 2 } } };
  const { status, decision } = pass(entry(spec), NOW, undefined, ledger);
  assert.equal(condition(status, 'Halted')?.status, 'True');
  assert.equal(condition(status, 'Halted')?.reason, 'FailureBudgetSpent');
  assert.match(condition(status, 'Halted')?.message ?? '', /2 failed attempt.*nuo policy resume workers/);
  assert.equal(condition(status, 'Blocked')?.reason, 'Halted');
  assert.equal(status.rollout?.failedAttempts, 2);
  assert.deepEqual(
    decision?.actions.filter((a) => a.type === 'admit'),
    [],
  );
  const resumed = { at: new Date('2026-11-21T11:30:00Z'), by: 'alice' };
  const after = pass({ ...entry(spec), resumed }, NOW, undefined, ledger);
  assert.equal(condition(after.status, 'Halted')?.status, 'False');
  assert.equal(
    condition(after.status, 'Halted')?.message,
    '0 of 2 failed attempt(s) allowed; resumed at 2026-11-21T11:30:00.000Z by alice',
  );
  assert.deepEqual(after.status.resumed, { at: '2026-11-21T11:30:00.000Z', by: 'alice' });
  assert.deepEqual(
    after.decision?.actions.filter((a) => a.type === 'admit').map((a) => a.node),
    ['a'],
  );
});

test('statusPatch: a field the new status leaves out is written null, at any depth', () => {
  const before = {
    nodes: 2,
    nextWindow: 'T',
    rollout: { started: 'S', wave: 2, waveSize: 2, completedInWave: 0, failedAttempts: 0, nextWave: 'W' },
  };
  const next = {
    nodes: 3,
    rollout: { started: 'S', wave: 3, waveSize: 4, completedInWave: 0, failedAttempts: 0 },
  };
  assert.deepEqual(statusPatch(before, next), {
    nodes: 3,
    nextWindow: null,
    rollout: { started: 'S', wave: 3, waveSize: 4, completedInWave: 0, failedAttempts: 0, nextWave: null },
  });
  assert.deepEqual(statusPatch(before, { nodes: 1 }), { nodes: 1, nextWindow: null, rollout: null });
});

test('Progressing names a drain that PodDisruptionBudgets hold, with what holds it', () => {
  const reason =
    'draining, waiting on shop/web: 3 of 3 pod(s) healthy, 3 needed (minAvailable 3), 0 disruption(s) allowed';
  const draining = node('c', {
    annotations: {
      [Annotations.state]: Phase.draining,
      [Annotations.stateReason]: reason,
      [Annotations.stateSince]: NOW.toISOString(),
    },
  });
  const ledger: Ledger = { slots: { c: { since: NOW.toISOString(), pool: 'workers' } } };
  const { status } = pass(entry({ maxUnavailable: 2 }), NOW, undefined, ledger, [draining]);
  assert.equal(
    condition(status, 'Progressing')?.message,
    `2 node(s) in an attempt, 0 waiting; c is ${reason}`,
  );
});

test('durations: attempts measured add to the status kept; none measured changes nothing', () => {
  const e = entry({});
  const measured = policyStatus({
    entry: e,
    conflicts: [],
    completed: true,
    samples: [{ drainSeconds: 12, rebootSeconds: 61, returnSeconds: 3 }],
    now: NOW,
  });
  assert.deepEqual(measured.durations, {
    samples: 1,
    drainSeconds: [12],
    rebootSeconds: [61],
    returnSeconds: [3],
    drainP50Seconds: 12,
    rebootP50Seconds: 61,
    returnP50Seconds: 3,
  });
  const later = policyStatus({
    entry: { ...e, status: measured },
    conflicts: [],
    completed: false,
    now: NOW,
  });
  assert.deepEqual(later.durations, measured.durations, 'kept from the status before');
  assert.equal(statusChanged(measured, later), false);
  assert.equal(pass(e).status.durations, undefined, 'nothing measured yet: none');
});
