import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  BASE_FAULT_KINDS,
  DEFAULT_TIMINGS,
  describePlan,
  EVERYTHING_KINDS,
  FAULT_KINDS,
  FaultKind,
  Forgery,
  PAUSABLE,
  planRun,
} from '../../src/sim/chaos-plan.ts';

const NODES = ['node-0', 'node-1', 'node-2', 'node-3', 'node-4', 'node-5'];

describe('chaos plan', () => {
  test('same seed ⇒ the same plan: updates, reboot times, faults with their offsets and targets', () => {
    for (let seed = 0; seed < 50; seed++) {
      const a = planRun(seed, NODES, 2);
      const b = planRun(seed, [...NODES].reverse(), 2);
      assert.deepEqual(b, a, `seed ${seed} (node order does not matter)`);
      assert.equal(describePlan(b), describePlan(a));
    }
  });

  test('different seeds give different plans', () => {
    const plans = new Set(
      Array.from({ length: 50 }, (_, s) => JSON.stringify({ ...planRun(s, NODES, 2), seed: 0 })),
    );
    assert.ok(plans.size > 45, `${plans.size} distinct plans of 50`);
  });

  test('every plan keeps to its constraints', () => {
    const kinds = new Set<string>();
    let stalls = 0;
    for (let seed = 0; seed < 500; seed++) {
      for (const k of [1, 2, 3]) {
        const p = planRun(seed, NODES, k, DEFAULT_TIMINGS, { everything: seed % 2 === 0 });
        assert.equal(p.seed, seed);
        assert.ok(p.updates.length >= 3 && p.updates.length <= NODES.length, 'at least half the nodes');
        const names = p.updates.map((u) => u.node);
        assert.deepEqual(names, [...new Set(names)].sort(), 'distinct, by name');
        for (const u of p.updates) {
          assert.ok(NODES.includes(u.node));
          assert.ok(u.rebootMs >= DEFAULT_TIMINGS.rebootMinMs && u.rebootMs <= DEFAULT_TIMINGS.rebootMaxMs);
        }
        if (p.neverReturns !== undefined) {
          stalls++;
          assert.ok(k >= 2, 'never with maxUnavailable 1: its held slot would stall every other node');
          assert.ok(names.includes(p.neverReturns), 'the node that never returns is one being updated');
        }
        for (const once of [FaultKind.restartApiserver, FaultKind.restartEtcd, FaultKind.skewClock])
          assert.ok(p.faults.filter((f) => f.kind === once).length <= 1, `at most one ${once}`);
        assert.ok(p.faults.some((f) => f.kind === FaultKind.killLeader));
        assert.ok(p.faults.some((f) => f.kind === FaultKind.restartAgent));
        for (let i = 0; i < p.faults.length; i++) {
          const f = p.faults[i];
          assert.ok(f && f.atMs >= 1000 && f.atMs < p.boundMs, 'strikes within the run');
          if (i > 0) assert.ok((p.faults[i - 1]?.atMs ?? 0) <= f.atMs, 'sorted by offset');
          if (f.kind === FaultKind.restartAgent) {
            assert.ok(NODES.includes(f.node));
            assert.ok(f.downMs >= 0 && f.downMs <= 2000);
          }
          if (f.kind === FaultKind.pauseLeader)
            assert.ok(f.pauseMs >= 4000 && f.pauseMs <= 8000, 'past a 3 s Lease');
          if (f.kind === FaultKind.pauseComponent) {
            assert.ok(PAUSABLE.includes(f.component));
            assert.ok(f.pauseMs >= 2000 && f.pauseMs <= 8000);
          }
          if (f.kind === FaultKind.skewClock) assert.ok(Math.abs(f.skewS) >= 30 && Math.abs(f.skewS) <= 900);
          if (f.kind === FaultKind.adminCordon || f.kind === FaultKind.hostileAnnotations)
            assert.ok(NODES.includes(f.node));
          if (f.kind === FaultKind.deleteNode) {
            assert.ok(
              names.includes(f.node) && f.node !== p.neverReturns,
              'a node being updated that returns',
            );
            assert.ok(f.downMs >= 1000 && f.downMs <= 5000);
          }
          if (f.kind === FaultKind.forgeGrant) assert.ok(Object.values(Forgery).includes(f.forgery));
          if (f.kind === FaultKind.stepClock) assert.ok(f.stepS <= -120 && f.stepS >= -600, 'back minutes');
          if (f.kind === FaultKind.kubeletLate) {
            assert.ok(names.includes(f.node) && f.node !== p.neverReturns, 'a node that reboots and returns');
            assert.ok(f.lateMs >= 3000 && f.lateMs <= 12_000);
          }
          if (f.kind === FaultKind.hangHealth)
            assert.ok(f.pauseMs >= 12_000 && f.pauseMs <= 25_000, 'past a query timeout and the interval');
          if (EVERYTHING_KINDS.includes(f.kind)) assert.equal(seed % 2, 0, 'only with everything on');
          kinds.add(f.kind);
        }
        assert.ok(p.boundMs >= DEFAULT_TIMINGS.slackMs + DEFAULT_TIMINGS.slackPerWaveMs);
      }
    }
    assert.deepEqual([...kinds].sort(), [...FAULT_KINDS].sort(), 'every kind of fault occurs');
    assert.ok(stalls > 50, `some plans have a node that never returns (${stalls})`);
  });

  test('the bound is ceil(n/K)·(max reboot + soak + 15 s) + 60 s + 120 s (eviction limbo), over the slots left', () => {
    for (let seed = 0; seed < 100; seed++) {
      const p = planRun(seed, NODES, 2);
      const maxReboot = Math.max(...p.updates.map((u) => u.rebootMs));
      const toFinish = p.updates.length - (p.neverReturns ? 1 : 0);
      const slots = p.neverReturns ? 1 : 2;
      assert.equal(p.boundMs, Math.ceil(toFinish / slots) * (maxReboot + 1000 + 15_000) + 60_000 + 120_000);
    }
  });

  test("the chaos test's seeds (12 and 13 of 6 nodes, budget 2) strike every base kind of fault and plan a node that never returns", () => {
    const plans = [12, 13].map((seed) => planRun(seed, NODES, 2));
    const kinds = new Set(plans.flatMap((p) => p.faults.map((f) => f.kind)));
    assert.deepEqual([...kinds].sort(), [...BASE_FAULT_KINDS].sort());
    assert.ok(plans.some((p) => p.neverReturns));
  });

  test('with everything on, a seed draws its base faults as without, then the kinds a clock file and a Prometheus allow', () => {
    for (let seed = 0; seed < 100; seed++) {
      const base = planRun(seed, NODES, 2);
      const all = planRun(seed, NODES, 2, DEFAULT_TIMINGS, { everything: true });
      const { faults: baseFaults, ...baseRest } = base;
      const { faults: allFaults, ...allRest } = all;
      assert.deepEqual(allRest, baseRest, `seed ${seed}: the same updates, reboots and bound`);
      assert.deepEqual(
        allFaults.filter((f) => BASE_FAULT_KINDS.includes(f.kind)),
        baseFaults,
        `seed ${seed}: the same base faults`,
      );
      assert.ok(baseFaults.every((f) => !EVERYTHING_KINDS.includes(f.kind)));
    }
  });

  test('at least 8 kinds of fault', () => {
    assert.ok(FAULT_KINDS.length >= 8, `${FAULT_KINDS.length} kinds`);
  });

  test('bad input is refused', () => {
    assert.throws(() => planRun(1, ['node-0'], 1), /at least 2 nodes/);
    assert.throws(() => planRun(1, NODES, 0), /positive integer/);
  });
});
