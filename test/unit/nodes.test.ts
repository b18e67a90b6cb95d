import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { KWOK_NODE } from '../../src/sim/cluster/component-args.ts';
import { isReady, kwokNode } from '../../src/sim/cluster/nodes.ts';
import { needsReadyAgain, STAY_UNREADY_LABEL } from '../../src/sim/cluster/pod-readiness.ts';

test('kwokNode marks the node for KWOK and labels zone, hostname and OS', () => {
  const node = kwokNode({ name: 'n-1', zone: 'zone-b', labels: { extra: 'x' } });
  assert.equal(node.metadata?.annotations?.['kwok.x-k8s.io/node'], 'fake');
  assert.equal(node.metadata?.labels?.['topology.kubernetes.io/zone'], 'zone-b');
  assert.equal(node.metadata?.labels?.['kubernetes.io/hostname'], 'n-1');
  assert.equal(node.metadata?.labels?.extra, 'x');
  assert.equal(node.status?.allocatable?.pods, '110');
  assert.equal(node.spec, undefined, 'no taint, not cordoned');
});

test("kwokNode copies a twin's node: taints, cordon, capacity, no zone; KWOK's type label wins", () => {
  const node = kwokNode({
    name: 'n-2',
    zone: undefined,
    labels: { type: 'gpu', pool: 'a' },
    taints: [{ key: 'gpu', value: 'yes', effect: 'NoSchedule' }],
    unschedulable: true,
    capacity: { cpu: '8', memory: '32Gi', pods: '50' },
    allocatable: { cpu: '7500m', memory: '30Gi', pods: '50' },
  });
  assert.equal(node.metadata?.labels?.['topology.kubernetes.io/zone'], undefined);
  assert.equal(node.metadata?.labels?.pool, 'a');
  assert.equal(node.metadata?.labels?.type, 'kwok', 'createNodes waits for nodes by it');
  assert.deepEqual(node.spec, {
    taints: [{ key: 'gpu', value: 'yes', effect: 'NoSchedule' }],
    unschedulable: true,
  });
  assert.equal(node.status?.allocatable?.cpu, '7500m');
  assert.equal(node.status?.capacity?.cpu, '8');
  const sameAsCapacity = kwokNode({ name: 'n-3', zone: 'z', capacity: { cpu: '4', pods: '10' } });
  assert.deepEqual(sameAsCapacity.status?.allocatable, { cpu: '4', pods: '10' });
});

test('isReady reads the Ready condition', () => {
  const cases = [
    { conditions: undefined, want: false },
    { conditions: [{ type: 'Ready', status: 'True' }], want: true },
    { conditions: [{ type: 'Ready', status: 'False' }], want: false },
    { conditions: [{ type: 'Ready', status: 'Unknown' }], want: false },
    { conditions: [{ type: 'MemoryPressure', status: 'True' }], want: false },
  ];
  for (const { conditions, want } of cases) {
    assert.equal(isReady({ status: { conditions } }), want, JSON.stringify(conditions));
  }
});

test('needsReadyAgain: only a running pod marked NotReady on a Ready KWOK node, as a kubelet would repair it', () => {
  const kwok = { annotations: { [KWOK_NODE]: 'fake' } };
  const readyNode = { metadata: kwok, status: { conditions: [{ type: 'Ready', status: 'True' }] } };
  const downNode = { metadata: kwok, status: { conditions: [{ type: 'Ready', status: 'False' }] } };
  const realNode = { status: { conditions: [{ type: 'Ready', status: 'True' }] } };
  const pod = (phase: string, ready: string | undefined, deleting = false): V1Pod => ({
    metadata: { name: 'p', ...(deleting ? { deletionTimestamp: new Date() } : {}) },
    status: { phase, ...(ready ? { conditions: [{ type: 'Ready', status: ready }] } : {}) },
  });
  const cases: { name: string; pod: V1Pod; node: V1Node | undefined; want: boolean }[] = [
    { name: 'marked NotReady, node Ready', pod: pod('Running', 'False'), node: readyNode, want: true },
    { name: 'marked NotReady, node down', pod: pod('Running', 'False'), node: downNode, want: false },
    { name: 'marked NotReady on a real kubelet', pod: pod('Running', 'False'), node: realNode, want: false },
    { name: 'marked NotReady, node unknown', pod: pod('Running', 'False'), node: undefined, want: false },
    { name: 'already Ready', pod: pod('Running', 'True'), node: readyNode, want: false },
    { name: 'no Ready condition yet', pod: pod('Running', undefined), node: readyNode, want: false },
    { name: 'Pending: KWOK readies it', pod: pod('Pending', 'False'), node: readyNode, want: false },
    { name: 'Succeeded', pod: pod('Succeeded', 'False'), node: readyNode, want: false },
    { name: 'being deleted', pod: pod('Running', 'False', true), node: readyNode, want: false },
    {
      name: 'playing an unready replica',
      pod: { ...pod('Running', 'False'), metadata: { name: 'p', labels: { [STAY_UNREADY_LABEL]: 'true' } } },
      node: readyNode,
      want: false,
    },
    {
      name: 'the label set to something else',
      pod: { ...pod('Running', 'False'), metadata: { name: 'p', labels: { [STAY_UNREADY_LABEL]: 'no' } } },
      node: readyNode,
      want: true,
    },
  ];
  for (const c of cases) assert.equal(needsReadyAgain(c.pod, c.node), c.want, c.name);
});
