import assert from 'node:assert/strict';
import { test } from 'node:test';
import { expectedReboots, gatedRun, planGates, RETURN_TIMEOUT_MS } from '../../src/sim/chaos-gates-plan.ts';
import { planRun } from '../../src/sim/chaos-plan.ts';

const NODES = ['node-0', 'node-1', 'node-2', 'node-3', 'node-4', 'node-5'];

test("a gates plan is the seed's, and leaves the run's own plan as the seed draws it", () => {
  const plan = planRun(7, NODES, 2);
  assert.deepEqual(planGates(plan), planGates(planRun(7, NODES, 2)));
  assert.deepEqual(planRun(7, NODES, 2), plan, 'drawn apart from the run');
});

test('the never-returning node comes back late instead, past returnTimeout; the bound grows; each node reboots as often as its reasons ask', () => {
  let withNever = 0;
  let late = 0;
  for (let seed = 1; seed <= 60; seed++) {
    const plan = planRun(seed, NODES, 2);
    const g = planGates(plan);
    const run = gatedRun(plan, g);
    assert.equal(run.neverReturns, undefined, `seed ${seed}: no node that never returns`);
    assert.ok(run.boundMs > plan.boundMs, `seed ${seed}: a longer bound`);
    if (plan.neverReturns) {
      withNever++;
      assert.equal(g.late?.node, plan.neverReturns, `seed ${seed}: the never-returning node is the late one`);
    }
    if (g.late) {
      late++;
      assert.ok(
        g.late.rebootMs >= 2.5 * RETURN_TIMEOUT_MS,
        `seed ${seed}: late well past returnTimeout, even counted afresh by a new leader`,
      );
      assert.equal(run.updates.find((u) => u.node === g.late?.node)?.rebootMs, g.late.rebootMs);
    }
    assert.ok(!g.refresh.includes(g.remediation.node), `seed ${seed}: the remediation's node is no refresh`);
    const expected = expectedReboots(run, g);
    const updated = new Set(run.updates.map((u) => u.node));
    for (const n of NODES) {
      const want = (updated.has(n) || g.refresh.includes(n) ? 1 : 0) + (n === g.remediation.node ? 1 : 0);
      assert.equal(expected.get(n) ?? 0, want, `seed ${seed}: ${n}`);
    }
  }
  assert.ok(
    withNever > 0 && late > withNever,
    `late nodes beyond the never-returning ones (${late}, ${withNever})`,
  );
});
