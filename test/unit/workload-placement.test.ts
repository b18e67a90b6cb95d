import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { placementSummary } from '../../src/sim/workload.ts';

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
