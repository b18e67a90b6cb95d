import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ObservedNode, RunObservations } from '../../src/whatif/observations.ts';
import { instantMap, retimed, stretch } from '../../src/whatif/retime.ts';

const node = (name: string, phases: [string, number][], o: Partial<ObservedNode> = {}): ObservedNode => ({
  name,
  pool: 'main',
  phases: phases.map(([phase, atMs]) => ({ phase, atMs })),
  reboots: 1,
  notReady: false,
  finished: true,
  explain: [],
  windows: [],
  ...o,
});

const run = (nodes: ObservedNode[], o: Partial<RunObservations> = {}): RunObservations => ({
  elapsedMs: 6000,
  timedOut: false,
  rebootMs: 1000,
  nodes,
  evictions: [],
  pdbs: [],
  violations: [],
  ...o,
});

const times = (o: RunObservations) =>
  Object.fromEntries(o.nodes.map((n) => [n.name, n.phases.map((p) => p.atMs)]));

/** One slot: a drains 0–1 s, is down 1.2–2.2 s and soaks to 2.7 s; b takes the slot 0.1 s after. */
const oneSlot = () =>
  run([
    node('a', [
      ['Pending', 0],
      ['Draining', 0],
      ['RebootGranted', 1000],
      ['Rebooting', 1200],
      ['AfterReboot', 2200],
      ['Idle', 2700],
    ]),
    node('b', [
      ['Pending', 0],
      ['Draining', 2800],
      ['RebootGranted', 3800],
      ['Rebooting', 4000],
      ['AfterReboot', 5000],
      ['Idle', 5500],
    ]),
  ]);

test('stretch: the host down, the soak and a failed attempt are multiplied back; drains and the rest are kept', () => {
  const cases: [string, number][] = [
    ['Rebooting', 10],
    ['AfterReboot', 10],
    ['Failed', 10],
    ['Draining', 1],
    ['RebootGranted', 1],
    ['BeforeReboot', 1],
    ['Upgrading', 1],
    ['Pending', 1],
  ];
  for (const [phase, want] of cases) assert.equal(stretch(phase, 10), want, phase);
});

test('retimed: drains and reactions kept, reboots and soaks ×speed; the next attempt as soon after the freed slot', () => {
  const back = retimed(oneSlot(), 10);
  assert.deepEqual(times(back), {
    a: [0, 0, 1000, 1200, 11_200, 16_200],
    b: [0, 16_300, 17_300, 17_500, 27_500, 32_500],
  });
  assert.equal(back.elapsedMs, 32_500 + 500, 'the run ended 0.5 s after the last finish, as in the twin');
  assert.equal(back.rebootMs, 10_000);
  assert.equal(back.speed, 10);
});

test('retimed leaves a real-time run as it is', () => {
  const o = oneSlot();
  assert.equal(retimed(o, 1), o);
});

test('retimed: a retry waits its backoff ×speed after its own attempt; a drain that gave up is kept as it ran', () => {
  const o = run([
    node('a', [
      ['Pending', 0],
      ['Draining', 0],
      ['Pending', 3000],
      ['Draining', 3500],
      ['RebootGranted', 4000],
      ['Rebooting', 4100],
      ['AfterReboot', 4600],
      ['Idle', 4700],
    ]),
  ]);
  assert.deepEqual(times(retimed(o, 10)), { a: [0, 0, 3000, 8000, 8500, 8600, 13_600, 14_600] });
});

test('retimed: pools free their own slots; an attempt started with the rollout keeps its start', () => {
  const o = run([
    node('a', [
      ['Draining', 0],
      ['RebootGranted', 500],
      ['Rebooting', 500],
      ['AfterReboot', 1500],
      ['Idle', 1500],
    ]),
    node('b', [
      ['Pending', 0],
      ['Draining', 1600],
      ['RebootGranted', 2100],
      ['Rebooting', 2100],
      ['AfterReboot', 3100],
      ['Idle', 3100],
    ]),
    node(
      'c',
      [
        ['Pending', 0],
        ['Draining', 1700],
        ['RebootGranted', 2200],
      ],
      { pool: 'other', finished: false },
    ),
  ]);
  const back = times(retimed(o, 10));
  assert.deepEqual(back.b, [0, 10_600, 11_100, 11_100, 21_100, 21_100], "a's slot, freed at 10.5 s");
  assert.deepEqual(back.c, [0, 1700, 2200], 'no slot of its pool was freed: as in the twin');
});

test('retimed: a run with windows is multiplied back whole (the simulated clock paced it); a run past its deadline lasted the deadline', () => {
  const windowed = oneSlot();
  for (const n of windowed.nodes) n.windows = ['inside window cron "0 * * * *" for 20m UTC'];
  assert.deepEqual(times(retimed(windowed, 10)).b, [0, 28_000, 38_000, 40_000, 50_000, 55_000]);
  const late = run(oneSlot().nodes, { timedOut: true, elapsedMs: 9000 });
  assert.equal(retimed(late, 10).elapsedMs, 90_000);
});

test('retimed: evictions and pod creations mapped in order, never slower than real time', () => {
  const o = oneSlot();
  o.evictions = [
    { atMs: 500, pod: 'shop/web-1', code: 201, createdMs: -40_000, workload: 'shop/Deployment/web' },
    { atMs: 3000, pod: 'shop/web-2', code: 201, createdMs: 600, workload: 'shop/Deployment/web' },
  ];
  const [first, second] = retimed(o, 10).evictions;
  assert.equal(first?.atMs, 500, 'during the first drain: kept');
  assert.equal(first?.createdMs, -40_000, 'before the rollout: kept');
  assert.ok((second?.createdMs ?? 0) > (first?.atMs ?? 0), 'made after the first eviction, still after it');
  assert.ok((second?.atMs ?? 0) > 16_200 && (second?.atMs ?? 0) < 17_300, "during b's drain, mapped back");
});

test('instantMap: through the points, slope at least 1, bisected; before the first and after the last at slope 1', () => {
  const at = instantMap([
    [1000, 1000],
    [2000, 11_000],
    [3000, 10_000],
  ]);
  const cases: [number, number][] = [
    [-500, -500],
    [0, 0],
    [500, 500],
    [1500, 6000],
    [2000, 11_000],
    [3000, 12_000],
    [3500, 12_500],
  ];
  for (const [t, want] of cases) assert.equal(at(t), want, `${t}`);
});
