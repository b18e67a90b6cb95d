import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ALL_MIN_NODES, allPools, describeAll, KURED_MS, planAll } from '../../src/sim/chaos-all-plan.ts';
import { DEFAULT_TIMINGS, FaultKind, planRun } from '../../src/sim/chaos-plan.ts';

const NODES = Array.from({ length: 12 }, (_, i) => `node-${String(i).padStart(2, '0')}`);
const drawn = (seed: number) => planRun(seed, NODES, 2, DEFAULT_TIMINGS, { everything: true });

describe('chaos with everything on: the plan', () => {
  test('the pools: two FLUO, two FleetLock, one kured and two Plan nodes by name, the rest gated', () => {
    const p = allPools([...NODES].reverse());
    assert.deepEqual(p, {
      fluo: ['node-00', 'node-01'],
      fleetlock: ['node-02', 'node-03'],
      kured: ['node-04'],
      plan: ['node-05', 'node-06'],
      gates: ['node-07', 'node-08', 'node-09', 'node-10', 'node-11'],
    });
  });

  test('too few nodes is refused, naming the least', () => {
    assert.throws(() => allPools(NODES.slice(0, ALL_MIN_NODES - 1)), /at least 10 nodes/);
  });

  test("same seed ⇒ the same plan; the run's own draws are the seed's, fitted to the pools", () => {
    for (let seed = 1; seed <= 60; seed++) {
      const a = planAll(drawn(seed));
      assert.deepEqual(planAll(drawn(seed)), a, `seed ${seed}`);
      assert.equal(describeAll(a.all), describeAll(planAll(drawn(seed)).all));
      const { pools } = a.all;
      const d = drawn(seed);
      assert.deepEqual(
        a.plan.updates.map((u) => u.node).filter((n) => !pools.gates.includes(n)),
        d.updates.map((u) => u.node).filter((n) => !pools.gates.includes(n) && !pools.plan.includes(n)),
        `seed ${seed}: every update but the Plan nodes', whose Job reboots them`,
      );
      assert.equal(a.plan.neverReturns, undefined, `seed ${seed}: every node returns (the gated one late)`);
      if (d.neverReturns && pools.gates.includes(d.neverReturns))
        assert.equal(
          a.all.gates.late?.node,
          d.neverReturns,
          `seed ${seed}: the never-returning node is late`,
        );
      assert.equal(a.plan.faults.length, d.faults.length, `seed ${seed}: every fault kept`);
      for (const f of a.plan.faults)
        if (f.kind === FaultKind.adminCordon || f.kind === FaultKind.deleteNode)
          assert.ok(!pools.kured.includes(f.node), `seed ${seed}: no ${f.kind} on kured's node`);
      assert.ok(a.plan.boundMs >= d.boundMs + KURED_MS, `seed ${seed}: a bound with room for kured`);
    }
  });

  test('the gates and the people act inside the gates pool; the Plan selects its nodes, its Job reboots them after a prepare', () => {
    for (let seed = 1; seed <= 60; seed++) {
      const { all } = planAll(drawn(seed));
      const gates = new Set(all.pools.gates);
      for (const n of [
        all.autoscaler.node,
        all.doNotDisrupt.node,
        all.gates.remediation.node,
        ...all.gates.refresh,
        ...all.blockers.map((b) => b.node),
      ])
        assert.ok(gates.has(n), `seed ${seed}: ${n} is gated`);
      if (all.gates.late) assert.ok(gates.has(all.gates.late.node));
      assert.deepEqual(all.blockers.map((b) => b.scope).sort(), ['Node', 'Pool']);
      assert.ok(all.metric.length >= 1 && all.metric.every((m) => m.forMs >= 3000));
      assert.deepEqual(all.upgrade.nodes, all.pools.plan);
      assert.equal(all.upgrade.hostReboot, true);
      assert.equal(all.upgrade.prepareJob, true);
      assert.equal(all.upgrade.reboot, false, 'the Job reboots, not nuo after it');
      assert.ok(all.upgrade.concurrency >= 1 && all.upgrade.concurrency <= all.pools.plan.length);
    }
  });

  test('the do-not-disrupt pod stands on a gated node no fault deletes and not the late one, mostly an updated one', () => {
    let onUpdated = 0;
    for (let seed = 1; seed <= 100; seed++) {
      const { plan, all } = planAll(drawn(seed));
      const deleted = plan.faults.flatMap((f) => (f.kind === FaultKind.deleteNode ? [f.node] : []));
      assert.ok(!deleted.includes(all.doNotDisrupt.node), `seed ${seed}: not deleted`);
      assert.notEqual(all.doNotDisrupt.node, all.gates.late?.node, `seed ${seed}: not the late node`);
      if (plan.updates.some((u) => u.node === all.doNotDisrupt.node)) onUpdated++;
    }
    assert.ok(onUpdated > 80, `mostly on an updated node (${onUpdated}/100)`);
  });

  test('the autoscaler taints a gated node with its update ahead, not the late one, when there is such a node', () => {
    for (let seed = 1; seed <= 100; seed++) {
      const { plan, all } = planAll(drawn(seed));
      const candidates = plan.updates
        .map((u) => u.node)
        .filter((n) => all.pools.gates.includes(n) && n !== all.gates.late?.node);
      if (candidates.length > 0) assert.ok(candidates.includes(all.autoscaler.node), `seed ${seed}`);
      else assert.ok(all.pools.gates.includes(all.autoscaler.node), `seed ${seed}: some gated node`);
    }
  });
});
