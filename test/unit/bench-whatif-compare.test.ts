import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compare, outcome } from '../../bench/whatif-compare.ts';
import type { NodeLine, WhatifReport } from '../../src/whatif/report.ts';

const node = (name: string, finishMs?: number): NodeLine => ({
  name,
  attempts: [],
  finished: finishMs !== undefined,
  ...(finishMs !== undefined ? { finishMs } : {}),
});

const report = (nodes: NodeLine[], waits: [string, string, number?][] = []): WhatifReport => ({
  finished: nodes.every((n) => n.finished),
  elapsedMs: 100_000,
  rebootMs: 10_000,
  pools: [],
  waves: [],
  nodes,
  drainWaits: waits.map(([n, pdb, lastMs = 0]) => ({
    node: n,
    pdb,
    refusals: 1,
    firstMs: 0,
    lastMs,
    why: '',
  })),
  stuck: [],
  evictedAgain: [],
  windows: [],
  violations: [],
});

test('outcome: the last finish, the nodes that never finished and the PDB that refused each last', () => {
  const o = outcome(
    report(
      [node('b'), node('a', 30_000), node('c', 50_000), node('d')],
      [
        ['b', 'shop/web', 5000],
        ['b', 'shop/db', 9000],
        ['a', 'shop/cache', 1000],
      ],
    ),
  );
  // b's web refusal went on (db held it after), a finished, d waited on no PDB.
  assert.deepEqual(o, { lastFinishMs: 50_000, stuck: ['b', 'd'], blockedPdbs: ['shop/db'] });
  assert.deepEqual(outcome(report([node('a')])), { stuck: ['a'], blockedPdbs: [] });
});

test('compare: total error in %, per-node finish error over nodes finished in both, set equality', () => {
  const cases: {
    real: WhatifReport;
    predicted: WhatifReport;
    want: Pick<ReturnType<typeof compare>, 'totalErrorPct' | 'finishError' | 'sameStuck' | 'sameBlockedPdbs'>;
  }[] = [
    {
      real: report([node('a', 40_000), node('b', 100_000), node('c', 60_000)]),
      predicted: report([node('a', 44_000), node('b', 90_000), node('c', 61_000)]),
      want: {
        totalErrorPct: -10,
        finishError: { medianMs: 4000, maxMs: 10_000, nodes: 3 },
        sameStuck: true,
        sameBlockedPdbs: true,
      },
    },
    {
      // b stuck for real, predicted to finish: it counts in no finish error, and the sets differ.
      real: report([node('a', 50_000), node('b')], [['b', 'x/pdb']]),
      predicted: report([node('a', 55_000), node('b', 80_000)]),
      want: {
        totalErrorPct: 60,
        finishError: { medianMs: 5000, maxMs: 5000, nodes: 1 },
        sameStuck: false,
        sameBlockedPdbs: false,
      },
    },
    {
      real: report([node('a')], [['a', 'x/pdb']]),
      predicted: report([node('a')], [['a', 'x/pdb']]),
      want: { sameStuck: true, sameBlockedPdbs: true },
    },
  ];
  for (const c of cases) {
    const { real: _r, predicted: _p, ...got } = compare(c.real, c.predicted);
    assert.deepEqual(got, c.want);
  }
});
