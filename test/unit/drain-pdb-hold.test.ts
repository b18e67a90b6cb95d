import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Pod, V1PodDisruptionBudget } from '@kubernetes/client-node';
import { pdbHold } from '../../src/drain/pdb-hold.ts';

const pod = (name: string, node: string, ready: boolean, deleting = false): V1Pod => ({
  metadata: { name, namespace: 'shop', ...(deleting ? { deletionTimestamp: new Date() } : {}) },
  spec: { nodeName: node, containers: [] },
  status: { conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
});

const pdb = (
  spec: V1PodDisruptionBudget['spec'],
  status: { current: number; desired: number; expected: number; allowed: number } | undefined,
  generations: { generation: number; observed: number } = { generation: 1, observed: 1 },
): V1PodDisruptionBudget => ({
  metadata: { name: 'web', namespace: 'shop', generation: generations.generation },
  spec,
  ...(status
    ? {
        status: {
          currentHealthy: status.current,
          desiredHealthy: status.desired,
          expectedPods: status.expected,
          disruptionsAllowed: status.allowed,
          observedGeneration: generations.observed,
        },
      }
    : {}),
});

test('pdbHold: the counts, what holds the PDB at zero and what would unblock it', () => {
  const ready3 = [pod('web-a', 'n1', true), pod('web-b', 'n2', true), pod('web-c', 'n3', true)];
  const table: Array<[string, V1PodDisruptionBudget, V1Pod[], string]> = [
    [
      'minAvailable equal to the replicas: no eviction ever',
      pdb({ minAvailable: 3 }, { current: 3, desired: 3, expected: 3, allowed: 0 }),
      ready3,
      'shop/web: 3 of 3 pod(s) healthy, 3 needed (minAvailable 3), 0 disruption(s) allowed; it allows no eviction even with every pod healthy: lower minAvailable (or raise maxUnavailable) or add replicas, or delete the pod by hand',
    ],
    [
      'maxUnavailable 0 reads the same way',
      pdb({ maxUnavailable: 0 }, { current: 2, desired: 2, expected: 2, allowed: 0 }),
      ready3.slice(0, 2),
      'shop/web: 2 of 2 pod(s) healthy, 2 needed (maxUnavailable 0), 0 disruption(s) allowed; it allows no eviction even with every pod healthy: lower minAvailable (or raise maxUnavailable) or add replicas, or delete the pod by hand',
    ],
    [
      'an unhealthy pod elsewhere holds it: named; no AlwaysAllow hint (it would not help this node)',
      pdb({ minAvailable: 2 }, { current: 1, desired: 2, expected: 3, allowed: 0 }),
      [pod('web-a', 'n1', true), pod('web-b', 'n2', false), pod('web-c', 'n3', false, true)],
      'shop/web: 1 of 3 pod(s) healthy, 2 needed (minAvailable 2), 0 disruption(s) allowed; not healthy: web-b, web-c; they count against it until they are Ready',
    ],
    [
      'an unhealthy pod on the drained node: AlwaysAllow would let it go',
      pdb({ minAvailable: 2 }, { current: 1, desired: 2, expected: 3, allowed: 0 }),
      [pod('web-a', 'n1', false), pod('web-b', 'n2', true), pod('web-c', 'n3', false)],
      'shop/web: 1 of 3 pod(s) healthy, 2 needed (minAvailable 2), 0 disruption(s) allowed; not healthy: web-a, web-c; they count against it until they are Ready; web-a on n1 would be evicted at once with unhealthyPodEvictionPolicy: AlwaysAllow',
    ],
    [
      'under AlwaysAllow already, no hint',
      pdb(
        { minAvailable: 2, unhealthyPodEvictionPolicy: 'AlwaysAllow' },
        { current: 1, desired: 2, expected: 3, allowed: 0 },
      ),
      [pod('web-a', 'n1', false), pod('web-b', 'n2', true), pod('web-c', 'n3', false)],
      'shop/web: 1 of 3 pod(s) healthy, 2 needed (minAvailable 2), 0 disruption(s) allowed; not healthy: web-a, web-c; they count against it until they are Ready',
    ],
    [
      'every pod healthy, none allowed: replacements of earlier evictions pending',
      pdb({ maxUnavailable: 1 }, { current: 3, desired: 3, expected: 4, allowed: 0 }),
      ready3,
      'shop/web: 3 of 4 pod(s) healthy, 3 needed (maxUnavailable 1), 0 disruption(s) allowed; every pod it covers is healthy: earlier evictions are still being replaced',
    ],
    [
      'a status older than the spec',
      pdb(
        { minAvailable: 1 },
        { current: 3, desired: 3, expected: 3, allowed: 0 },
        { generation: 2, observed: 1 },
      ),
      ready3,
      'shop/web: 3 of 3 pod(s) healthy, 3 needed (minAvailable 1), 0 disruption(s) allowed; its status predates its last change: the disruption controller has not counted it yet',
    ],
    [
      'no status yet',
      pdb({ minAvailable: '50%' }, undefined),
      ready3,
      'shop/web: no status yet: the disruption controller has not counted it',
    ],
  ];
  for (const [name, p, pods, want] of table)
    assert.equal(pdbHold({ key: 'shop/web', pdb: p, pods }, 'n1'), want, name);
});

test('pdbHold names five unhealthy pods and counts the rest', () => {
  const pods = Array.from({ length: 8 }, (_, i) => pod(`web-${i}`, `n${i + 2}`, false));
  const line = pdbHold(
    {
      key: 'shop/web',
      pdb: pdb({ minAvailable: 1 }, { current: 0, desired: 1, expected: 8, allowed: 0 }),
      pods,
    },
    'n1',
  );
  assert.match(line, /not healthy: web-0, web-1, web-2, web-3, web-4 and 3 more;/);
});
