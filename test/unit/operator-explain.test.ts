import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Phase } from '../../src/api/phases.ts';
import type { UpdatePolicySpec } from '../../src/api/update-policy.ts';
import type { Ledger } from '../../src/operator/decide/ledger-view.ts';
import { viewNode } from '../../src/operator/decide/node-view.ts';
import { explainNode } from '../../src/operator/policies/explain.ts';
import type { PolicyBlockers } from '../../src/operator/policies/pool-holds.ts';
import { planPools } from '../../src/operator/policies/pool-plan.ts';
import type { HealthReading } from '../../src/policy/health-checks.ts';
import { resolvePolicy } from '../../src/policy/resolve.ts';
import { NOW, needs, node, state } from './operator-fixtures.ts';

const spec: UpdatePolicySpec = {
  healthChecks: [
    { name: 'ceph', object: { apiVersion: 'v1', kind: 'ConfigMap', name: 'ceph', expression: 'true' } },
  ],
};
const failing: HealthReading = {
  at: NOW.getTime(),
  checks: [{ name: 'ceph', healthy: false, reading: 'ConfigMap ceph: false' }],
};

function explain(name: string, ledger: Ledger, health?: HealthReading): string[] {
  const current = resolvePolicy({ metadata: { name: 'all', generation: 1 }, spec });
  assert.ok(current.ok);
  const nodes = [
    viewNode(node('waiting', { annotations: needs })),
    viewNode(node('holder', { annotations: { ...needs, ...state(Phase.afterReboot, 60) } })),
  ];
  const blockers = (): PolicyBlockers | undefined => (health ? { health } : undefined);
  const plan = planPools({
    state: {
      known: true,
      crdMissing: false,
      policies: [{ name: 'all', uid: 'u', generation: 1, current, lastValid: current.policy }],
    },
    paused: false,
    nodes,
    ledger,
    now: NOW,
    blockers,
  });
  return explainNode({
    node: nodes.find((n) => n.name === name) ?? assert.fail(name),
    plan,
    ledger,
    now: NOW,
  });
}

const ledger: Ledger = { slots: { holder: { since: '2026-11-21T11:50:00.000Z', pool: 'all' } } };

test('nuo policy explain names a failing health check with what it read, for a waiting node and a slot holder', () => {
  assert.ok(
    explain('waiting', ledger, failing).includes(
      'waits: waiting: health check ceph fails: ConfigMap ceph: false',
    ),
  );
  assert.ok(
    explain('holder', ledger, failing).includes(
      'health checks: health check ceph fails: ConfigMap ceph: false; once back, it keeps its slot until they pass',
    ),
  );
  assert.ok(
    explain('holder', ledger).includes(
      'health checks: not evaluated yet; once back, it keeps its slot until they pass',
    ),
  );
  const passing = { ...failing, checks: [{ name: 'ceph', healthy: true, reading: 'ConfigMap ceph: true' }] };
  assert.ok(!explain('holder', ledger, passing).some((l) => l.startsWith('health checks:')));
  assert.ok(!explain('waiting', ledger, passing).some((l) => l.includes('health check')));
});
