import assert from 'node:assert/strict';
import { test } from 'node:test';
import { evictionsPerPod, phaseTimes, rolloutBound } from '../../bench/vm-rollout-figures.ts';
import type { ObservedNode, RunObservations } from '../../src/whatif/observations.ts';
import { buildReport } from '../../src/whatif/report.ts';

const node = (name: string, phases: [string, number][], finished = true): ObservedNode => ({
  name,
  phases: phases.map(([phase, atMs]) => ({ phase, atMs })),
  reboots: finished ? 1 : 0,
  notReady: false,
  finished,
  explain: [],
  windows: [],
});
const observations = (
  nodes: ObservedNode[],
  evictions: RunObservations['evictions'] = [],
): RunObservations => ({
  elapsedMs: 100_000,
  timedOut: false,
  rebootMs: 10_000,
  nodes,
  evictions,
  pdbs: [],
  violations: [],
  calendarStartMs: 0,
  windowStretches: [],
});

const a = node('a', [
  ['Idle', 0],
  ['Draining', 1000],
  ['RebootGranted', 5000],
  ['Rebooting', 6000],
  ['Idle', 20_000],
]);
const b = node('b', [
  ['Idle', 0],
  ['Draining', 20_500],
  ['RebootGranted', 30_500],
  ['Rebooting', 31_000],
  ['Idle', 45_000],
]);

test("each phase's mean and max time, from entering it to entering the next; a phase never left is not counted", () => {
  const stuck = node('c', [['Draining', 2000]], false);
  assert.deepEqual(phaseTimes(observations([a, b, stuck])), [
    { phase: 'Idle', meanMs: 10_750, maxMs: 20_500, count: 2 },
    { phase: 'Draining', meanMs: 7000, maxMs: 10_000, count: 2 },
    { phase: 'RebootGranted', meanMs: 750, maxMs: 1000, count: 2 },
    { phase: 'Rebooting', meanMs: 14_000, maxMs: 14_000, count: 2 },
  ]);
});

test('the bound packs each finished node’s slot time into the slots with no gap; efficiency is the bound over the last finish', () => {
  const { boundMs, efficiencyPct } = rolloutBound(buildReport(observations([a, b])), 1);
  assert.equal(boundMs, 19_000 + 24_500);
  assert.equal(Math.round(efficiencyPct), Math.round((43_500 / 45_000) * 100));
});

test("evictions per pod count the API server's 201s of the workload's pods, not refusals or other workloads", () => {
  const e = (pod: string, code: number, workload = 'default/Deployment/web') => ({
    atMs: 0,
    pod,
    workload,
    code,
  });
  const o = observations(
    [a],
    [e('default/w1', 201), e('default/w1', 429), e('default/w2', 201), e('x/y', 201, 'x/Deployment/y')],
  );
  assert.equal(evictionsPerPod(o, 'default/Deployment/web', 4), 0.5);
});
