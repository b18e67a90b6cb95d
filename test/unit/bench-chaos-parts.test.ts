import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type ChaosPart, mergeParts } from '../../bench/chaos-parts.ts';

const part = (seed: number, runs: number, more: Partial<ChaosPart> = {}): ChaosPart => ({
  seed,
  runs,
  nodes: 6,
  maxUnavailable: 2,
  finished: runs,
  expectedStalls: 1,
  injected: { 'kill-leader': runs, 'forge-grant': 1 },
  skipped: 0,
  violations: { budget: 0, 'not-finished': 0 },
  runaways: 0,
  elapsedMs: 1000 * runs,
  versions: { kubernetes: 'v1.37.1' },
  ...more,
});

test('contiguous parts add up, in any order', () => {
  const m = mergeParts([part(51, 50, { violations: { budget: 1 } }), part(1, 50), part(101, 100)]);
  assert.equal(m.seed, 1);
  assert.equal(m.runs, 200);
  assert.equal(m.finished, 200);
  assert.equal(m.expectedStalls, 3);
  assert.deepEqual(m.injected, { 'kill-leader': 200, 'forge-grant': 3 });
  assert.deepEqual(m.violations, { budget: 1, 'not-finished': 0 });
  assert.equal(m.elapsedMs, 200_000);
});

test('overlapping or missing seeds, or another setting, are refused', () => {
  assert.throws(() => mergeParts([part(1, 50), part(40, 10)]), /part from seed 40 overlaps seeds up to 50/);
  assert.throws(() => mergeParts([part(1, 50), part(60, 10)]), /seeds 51…59 are missing/);
  assert.throws(() => mergeParts([part(1, 50), part(51, 10, { nodes: 8 })]), /ran 8 nodes/);
  assert.throws(
    () => mergeParts([part(1, 50), part(51, 10, { plans: true })]),
    /from seed 51 ran 6 nodes, maxUnavailable 2, --plans; the first ran 6 nodes, maxUnavailable 2$/,
  );
  assert.throws(
    () => mergeParts([part(1, 50, { policies: true }), part(51, 10)]),
    /the first ran .*--policies/,
  );
  assert.throws(
    () => mergeParts([part(1, 50), part(51, 10, { fluo: true })]),
    /from seed 51 ran 6 nodes, maxUnavailable 2, --fluo; the first ran 6 nodes, maxUnavailable 2$/,
  );
  assert.throws(() => mergeParts([]), /no campaign parts/);
});

test('gates parts add up what they did to the gates; a gates part beside another setting is refused', () => {
  const gates = (seed: number, halts: number) =>
    part(seed, 10, { gates: true, gatesSeen: { halts, resumes: halts, remediations: 10 } });
  const m = mergeParts([gates(11, 3), gates(1, 4)]);
  assert.deepEqual(m.gatesSeen, { halts: 7, resumes: 7, remediations: 20 });
  assert.throws(
    () => mergeParts([gates(1, 1), part(11, 10)]),
    /from seed 11 ran 6 nodes, maxUnavailable 2; the first ran 6 nodes, maxUnavailable 2, --gates$/,
  );
});
