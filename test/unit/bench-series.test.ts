import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { goalCell, medianRun, type RunFigures, seriesBody } from '../../bench/rollout-series.ts';

const run = (efficiency: number, grantP99Ms: number, more: Partial<RunFigures> = {}): RunFigures => ({
  elapsedMs: 450_000,
  efficiency,
  grantP50Ms: 200,
  grantP99Ms,
  endIdleMsPerSlot: 20_000,
  apiserverCpuMsPerRequest: 3.6,
  maxDisrupted: 100,
  violations: 0,
  leadershipLost: 0,
  evictionsPerPod: 1.05,
  report: { id: 'rollout-1000', title: 't', body: 'b', command: 'c' },
  ...more,
});

/** The cells of the row whose first cell is `first`. */
const row = (body: string, first: string) =>
  body
    .split('\n')
    .find((l) => l.startsWith(`| ${first} |`))
    ?.split('|')
    .slice(1, -1)
    .map((c) => c.trim());

describe('medianRun', () => {
  const cases: Array<[string, number[], number]> = [
    ['one run is its own median', [0.93], 0],
    ['odd count: the middle one by efficiency, wherever it ran', [0.96, 0.9, 0.93], 2],
    ['even count: the lower middle (a measured run, never a mean)', [0.97, 0.91, 0.95, 0.93], 3],
    ['ties keep one of the tied runs', [0.94, 0.94, 0.94], 1],
  ];
  for (const [name, effs, want] of cases)
    it(name, () => assert.equal(medianRun(effs.map((e) => run(e, 500))), want));
  it('refuses an empty series', () => assert.throws(() => medianRun([]), /at least one run/));
});

describe('seriesBody', () => {
  const body = seriesBody(
    [
      run(0.955, 800),
      run(0.927, 1908, { apiserverCpuMsPerRequest: 3.81 }),
      run(0.941, 946, { maxDisrupted: 101, violations: 2, evictionsPerPod: 1.15 }),
    ],
    100,
  );

  it('has one row a run, the median marked', () => {
    assert.deepEqual(row(body, '1')?.slice(1, 5), ['450.0 s', '95.5 %', '200 ms / 800 ms', '20.0 s']);
    assert.equal(row(body, '2')?.[5], '3.81 ms');
    assert.deepEqual(row(body, '3 *')?.slice(-3), ['101', '2', '0']);
    assert.ok(row(body, '3 *'), 'run 3 (94.1 %) is the median of 95.5, 92.7 and 94.1 %');
    assert.equal(row(body, '1 *'), undefined);
  });
  it('says how many runs met each goal, with the range', () => {
    assert.deepEqual(row(body, 'efficiency'), ['efficiency', '92.7 % – 95.5 %', '≥ 95.0 %', '1 of 3']);
    assert.deepEqual(row(body, 'grant latency p99'), [
      'grant latency p99',
      '800 ms – 1908 ms',
      '< 1000 ms',
      '2 of 3',
    ]);
  });
  it('counts a run over the budget or with a violation as unsafe, and sums the violations', () => {
    const safety = row(body, 'safety: no violation, at most K = 100 disrupted');
    assert.deepEqual(safety?.slice(1), ['100 – 101 disrupted, 2 violations in all', 'every run', '2 of 3']);
  });
});

describe('the goals can fail', () => {
  it('evictions per pod is held to at most 1.10 (issue 52), and a run above it counts as missing it', () => {
    const body = seriesBody([run(0.95, 500), run(0.95, 500, { evictionsPerPod: 1.15 })], 100);
    assert.deepEqual(row(body, 'evictions per pod'), [
      'evictions per pod',
      '1.05 – 1.15',
      '≤ 1.10',
      '1 of 2',
    ]);
  });
  it('a goal cell says when the figure missed it', () => {
    assert.equal(goalCell('≤ 1.10', true), '≤ 1.10');
    assert.equal(goalCell('≤ 1.10', false), '≤ 1.10 (**missed**)');
  });
});
