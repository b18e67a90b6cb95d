import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { resolvePolicy } from '../../src/policy/resolve.ts';
import type { EvictionAudit } from '../../src/sim/whatif-observe.ts';
import { policyBudgets, refusingPdb, workloadOf } from '../../src/sim/whatif-observe.ts';

const node = (name: string, labels: Record<string, string>): V1Node => ({ metadata: { name, labels } });

test("policyBudgets: each policy's nodes by selector, its slots counted over them, its zones'", () => {
  const resolve = (name: string, spec: object) => {
    const r = resolvePolicy({ metadata: { name }, spec });
    if (!r.ok) throw new Error(JSON.stringify(r.errors));
    return r.policy;
  };
  const nodes = [
    node('a', { pool: 'web' }),
    node('b', { pool: 'web' }),
    node('c', { pool: 'web' }),
    node('d', { pool: 'web' }),
    node('e', { pool: 'db' }),
  ];
  const budgets = policyBudgets(
    [
      resolve('web', {
        nodeSelector: { matchLabels: { pool: 'web' } },
        maxUnavailable: '50%',
        maxUnavailablePerZone: 1,
      }),
      resolve('db', { nodeSelector: { matchLabels: { pool: 'db' } }, maxUnavailable: 3 }),
    ],
    nodes,
  );
  assert.deepEqual(
    budgets.map((b) => [
      b.name,
      b.max,
      b.zones,
      b.protocol,
      nodes.filter((n) => b.selects(n.metadata?.labels ?? {})).length,
    ]),
    [
      ['web', 2, { label: 'topology.kubernetes.io/zone', max: 1 }, 'nuo', 4],
      ['db', 3, undefined, 'nuo', 1],
    ],
  );
});

const pod = (owner?: { kind: string; name: string }, hash?: string): V1Pod => ({
  metadata: {
    name: 'p',
    namespace: 'shop',
    ...(hash ? { labels: { 'pod-template-hash': hash } } : {}),
    ...(owner ? { ownerReferences: [{ apiVersion: 'apps/v1', ...owner, uid: 'u', controller: true }] } : {}),
  },
});

test("workloadOf: a pod's top-level owner, a ReplicaSet's Deployment by the template hash", () => {
  const cases: [V1Pod, string | undefined][] = [
    [pod({ kind: 'ReplicaSet', name: 'web-7c9f8' }, '7c9f8'), 'shop/Deployment/web'],
    [pod({ kind: 'ReplicaSet', name: 'batch' }), 'shop/ReplicaSet/batch'],
    [pod({ kind: 'ReplicaSet', name: 'web-other' }, '7c9f8'), 'shop/ReplicaSet/web-other'],
    [pod({ kind: 'StatefulSet', name: 'db' }), 'shop/StatefulSet/db'],
    [pod(), undefined],
  ];
  for (const [p, want] of cases) assert.equal(workloadOf(p), want, JSON.stringify(p.metadata));
});

test('refusingPdb: the PDB a refused eviction names in its audit event', () => {
  const event = (causes: { reason?: string; message?: string }[]): EvictionAudit =>
    ({ responseStatus: { code: 429, details: { causes } } }) as EvictionAudit;
  assert.equal(
    refusingPdb(
      event([
        {
          reason: 'DisruptionBudget',
          message: 'The disruption budget api needs 2 healthy pods and has 2 currently',
        },
      ]),
    ),
    'api',
  );
  assert.equal(refusingPdb(event([{ reason: 'Other', message: 'disruption budget api' }])), undefined);
  assert.equal(refusingPdb({ responseStatus: { code: 201 } } as EvictionAudit), undefined);
});
