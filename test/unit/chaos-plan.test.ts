import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DEFAULT_TIMINGS, describePlan, FAULT_KINDS, FaultKind, planRun } from '../../src/sim/chaos-plan.ts';

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
        const p = planRun(seed, NODES, k);
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
        assert.ok(p.faults.filter((f) => f.kind === FaultKind.restartApiserver).length <= 1);
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

  test('bad input is refused', () => {
    assert.throws(() => planRun(1, ['node-0'], 1), /at least 2 nodes/);
    assert.throws(() => planRun(1, NODES, 0), /positive integer/);
  });
});
