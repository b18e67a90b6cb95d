import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { VM_NODE_LABEL } from '../../src/sim/vm/config-disk.ts';
import { vmNodeSpecs } from '../../src/sim/vm/vms.ts';
import { daemonSet, deployment, placementSummary } from '../../src/sim/workload.ts';

const on = (nodeName?: string): V1Pod => ({ spec: { containers: [], ...(nodeName ? { nodeName } : {}) } });

test('placementSummary: pods counted per node in the nodes’ order, empty nodes shown, the rest last', () => {
  const nodes = ['node-0', 'node-1', 'node-2'];
  const cases: [V1Pod[], string][] = [
    [[], 'node-0 0 · node-1 0 · node-2 0'],
    [[on('node-2'), on('node-0'), on('node-2')], 'node-0 1 · node-1 0 · node-2 2'],
    [[on('node-1'), on(), on('node-9')], 'node-0 0 · node-1 1 · node-2 0 · unscheduled or elsewhere 2'],
    [[on('node-1'), on('node-1'), on('node-1'), on('node-1')], 'node-0 0 · node-1 4 · node-2 0'],
  ];
  for (const [pods, want] of cases) assert.equal(placementSummary(nodes, pods), want);
});

test("the sample workloads' pods are required off VM nodes, whose containerd cannot pull their images", () => {
  const offVms = { key: VM_NODE_LABEL, operator: 'DoesNotExist' };
  for (const spec of [
    deployment('demo', 'web', 2).spec?.template.spec,
    daemonSet('demo', 'ds').spec?.template.spec,
  ]) {
    const terms =
      spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
    assert.deepEqual(terms, [{ matchExpressions: [offVms] }]);
  }
});

test('vmNodeSpecs: VMs named vm-N and spread over the zones round-robin, as the KWOK nodes are', () => {
  assert.deepEqual(vmNodeSpecs(4, 3), [
    { name: 'vm-0', zone: 'zone-a' },
    { name: 'vm-1', zone: 'zone-b' },
    { name: 'vm-2', zone: 'zone-c' },
    { name: 'vm-3', zone: 'zone-a' },
  ]);
  assert.deepEqual(vmNodeSpecs(0, 3), []);
});
