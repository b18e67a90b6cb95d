import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type Moves, moves, movesLine, type PodSeen } from '../../src/sim/moves.ts';

const nodes = ['a', 'b', 'c', 'd'];

test('evictions per pod: the bound adds the pods of the K least-loaded nodes, and moves beyond P split by when the pod was placed', () => {
  const rows: { name: string; pods: PodSeen[]; k: number; firstUpdatedAt?: number; want: Moves }[] = [
    {
      name: 'nothing evicted yet: the bound counts a node with no pods among the fewest',
      pods: [{ node: 'a' }, { node: 'a' }, { node: 'b' }, { node: 'c' }],
      k: 2,
      want: { pods: 4, evictions: 0, bound: 5, again: 0, forced: 0, missed: 0 },
    },
    {
      name: 'every pod moved once, the first wave’s twice: at the bound, each second move forced',
      pods: [
        { node: 'a', evictedAt: 1 },
        { node: 'b', evictedAt: 1 },
        { node: 'c', evictedAt: 20 },
        { node: 'd', evictedAt: 30 },
        { node: 'c', boundAt: 2, evictedAt: 20 },
        { node: 'd', boundAt: 2, evictedAt: 30 },
        { node: 'a', boundAt: 21 },
        { node: 'b', boundAt: 21 },
        { node: 'a', boundAt: 31 },
        { node: 'b', boundAt: 31 },
      ],
      k: 2,
      firstUpdatedAt: 10,
      want: { pods: 4, evictions: 6, bound: 6, again: 2, forced: 2, missed: 0 },
    },
    {
      name: 'a pod placed on a node still to drain after one was updated: missed',
      pods: [
        { node: 'a', evictedAt: 1 },
        { node: 'b', evictedAt: 12 },
        { node: 'c' },
        { node: 'b', boundAt: 2, evictedAt: 12 },
        { node: 'c', boundAt: 13, evictedAt: 40 },
        { node: 'a', boundAt: 41 },
      ],
      k: 1,
      firstUpdatedAt: 10,
      want: { pods: 3, evictions: 4, bound: 3, again: 2, forced: 1, missed: 1 },
    },
    {
      name: 'no node updated yet: every second move is forced',
      pods: [
        { node: 'a', evictedAt: 1 },
        { node: 'b', boundAt: 2, evictedAt: 5 },
      ],
      k: 1,
      want: { pods: 1, evictions: 2, bound: 1, again: 1, forced: 1, missed: 0 },
    },
  ];
  for (const r of rows) assert.deepEqual(moves(r.pods, nodes, r.k, r.firstUpdatedAt), r.want, r.name);
});

test('the summary line says evictions per pod against the bound', () => {
  const line = movesLine({ pods: 18, evictions: 30, bound: 22, again: 12, forced: 4, missed: 8 });
  assert.equal(
    line,
    '30 evictions of 18 pods: 1.67 per pod; bound 22 (1.22 per pod); moved again 12 (4 placed before any node was updated, 8 on a node still to drain while an updated one was there)',
  );
});
