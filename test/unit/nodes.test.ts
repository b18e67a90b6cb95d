import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isReady, kwokNode } from '../../src/sim/cluster/nodes.ts';

test('kwokNode marks the node for KWOK and labels zone, hostname and OS', () => {
  const node = kwokNode({ name: 'n-1', zone: 'zone-b', labels: { extra: 'x' } });
  assert.equal(node.metadata?.annotations?.['kwok.x-k8s.io/node'], 'fake');
  assert.equal(node.metadata?.labels?.['topology.kubernetes.io/zone'], 'zone-b');
  assert.equal(node.metadata?.labels?.['kubernetes.io/hostname'], 'n-1');
  assert.equal(node.metadata?.labels?.extra, 'x');
  assert.equal(node.status?.allocatable?.pods, '110');
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
