import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Errors } from 'typebox/value';
import { PlanSpec } from '../../src/api/plan.ts';
import { validatePlan } from '../../src/plan/validate.ts';
import { idealSeconds } from '../../src/sim/demo.ts';
import { demoPlan, demoPlanConcurrency } from '../../src/sim/demo-plan.ts';

const options = { nodes: 12, maxUnavailable: 3, rebootMs: 5000, soakMs: 2000, jobMs: 3000 };

test("the demo's Plan is valid, reboots through nuo, and may use the whole budget", () => {
  const { spec } = demoPlan(options);
  assert.deepEqual([...Errors(PlanSpec, spec)], [], 'the CRD schema accepts it');
  assert.deepEqual(validatePlan(spec), [], "nuo's own checks accept it");
  assert.equal(spec.reboot, true, 'one attempt serves the Job and the staged reboot');
  for (const budget of [1, 3, 10])
    assert.equal(demoPlanConcurrency({ maxUnavailable: budget }), budget, `budget ${budget}`);
});

test("the demo's lower bound with a Plan: waves of the budget's width, each a Job, a reboot and a soak", () => {
  const cases: [string, typeof options, number][] = [
    // ceil(12/3) = 4 waves of 3 s + 5 s + 2 s.
    ['12 nodes, 3 at a time', options, 40],
    ['one at a time', { ...options, maxUnavailable: 1 }, 120],
    ['a partial last wave', { ...options, nodes: 13 }, 50],
    ['no soak', { ...options, soakMs: 0 }, 32],
  ];
  for (const [name, o, seconds] of cases) assert.equal(idealSeconds(o), seconds, name);
});
