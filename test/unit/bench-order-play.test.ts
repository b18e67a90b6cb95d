import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fitContention, type Measured, Order, play, replayDrains, spread } from '../../bench/order-play.ts';

const node = (pods: number, admittedMs = 0, drainMs = 500, restMs = 9_000): Measured => ({
  pods,
  drainMs,
  restMs,
  admittedMs,
});

describe('the drain contention model', () => {
  it('shares the eviction rate between the drains in progress, after their fixed part', () => {
    const c = { baseMs: 1_000, podsPerSecond: 10 };
    const together = [node(10, 0), node(10, 0)];
    for (const ms of replayDrains(together, c).values()) assert.equal(ms, 3_000, '1 s + 20 pods at 10/s');
    const apart = [node(10, 0), node(10, 10_000)];
    for (const ms of replayDrains(apart, c).values()) assert.equal(ms, 2_000, '1 s + 10 pods at 10/s');
  });

  it('finds the contention that made the drains', () => {
    const truth = { baseMs: 1_500, podsPerSecond: 7 };
    const nodes = Array.from({ length: 40 }, (_, i) => node(10 + (i % 5), i * 700));
    for (const [n, ms] of replayDrains(nodes, truth)) n.drainMs = ms;
    const fit = fitContention(nodes);
    assert.deepEqual({ baseMs: fit.baseMs, podsPerSecond: fit.podsPerSecond }, truth);
    assert.equal(fit.rmsErrorMs, 0);
  });
});

describe('spread', () => {
  const cases: Array<[number[], number[]]> = [
    [
      [0, 0, 0, 0, 5, 7],
      [0, 0, 5, 0, 0, 7],
    ],
    [
      [3, 0, 0, 0],
      [0, 0, 0, 3],
    ],
    [
      [1, 2],
      [1, 2],
    ],
    [
      [0, 0],
      [0, 0],
    ],
  ];
  for (const [pods, want] of cases) {
    it(`${pods} → ${want}`, () => {
      assert.deepEqual(
        spread(pods.map((p) => node(p))).map((n) => n.pods),
        want,
      );
    });
  }
});

describe('play', () => {
  const c = { baseMs: 0, podsPerSecond: 10 };

  it('fills K slots as they free: no pods, equal slots, the bound exactly', () => {
    const r = play([node(0), node(0), node(0), node(0)], 2, c, Order.measured, 9_000);
    assert.equal(r.rolloutMs, 2 * 9_500);
    assert.equal(r.meanDrainMs, 500);
    assert.equal(r.efficiency, 1);
  });

  it('puts nodes with pods together when asked, and their drains grow', () => {
    // Two slots; two nodes with 10 pods, two without, admitted alternately.
    const nodes = [node(10, 0), node(0, 1), node(10, 2), node(0, 3)];
    const asAdmitted = play(nodes, 2, c, Order.measured, 9_000);
    const heavyFirst = play(nodes, 2, c, Order.mostPods, 9_000);
    // As admitted: each heavy drain has the rate alone (1 s). Heavy first: they share it (2 s each).
    assert.equal(asAdmitted.meanDrainMs, (1_000 + 500 + 1_000 + 500) / 4);
    assert.equal(heavyFirst.meanDrainMs, (2_000 + 500 + 2_000 + 500) / 4);
    assert.ok(heavyFirst.rolloutMs > asAdmitted.rolloutMs);
  });
});
