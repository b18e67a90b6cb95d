import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Annotations } from '../../src/api/keys.ts';
import { viewNode } from '../../src/operator/decide/node-view.ts';
import type { PlanWork } from '../../src/operator/decide/plan-work.ts';
import { activeBudgets, attemptReason, reasonLimit } from '../../src/operator/decide/reason-budgets.ts';
import { resolvePolicy } from '../../src/policy/resolve.ts';
import { NOW, needs, node, ofType, run } from './operator-fixtures.ts';

const t = NOW.getTime();
const view = (annotations: Record<string, string> = {}) => viewNode(node('n', { annotations }));

test('attemptReason: a Plan it applies, its own need or a request, else what its policy asks', () => {
  const plan = { ref: 'ops/os', reboot: false } as PlanWork;
  const cases: Array<[string, ReturnType<typeof view>, string]> = [
    ['its agent needs a reboot', view(needs), 'Reboot'],
    ['a person requested one', view({ [Annotations.rebootRequested]: NOW.toISOString() }), 'Reboot'],
    ['a Plan to apply', { ...view(), work: plan }, 'Plan'],
    [
      'a remediation',
      { ...view(), policyAsks: { need: { kind: 'remediation', reason: 'r' } } },
      'Remediation',
    ],
    ['a refresh', { ...view(), policyAsks: { need: { kind: 'refresh', reason: 'r' } } }, 'Refresh'],
    [
      'its own need beside a refresh: a reboot',
      { ...view(needs), policyAsks: { need: { kind: 'refresh', reason: 'r' } } },
      'Reboot',
    ],
  ];
  for (const [what, n, want] of cases) assert.equal(attemptReason(n, t), want, what);
});

test('activeBudgets: open windows only, sized for the pool; when that changes; on a simulated clock too', () => {
  const resolved = resolvePolicy({
    metadata: { name: 'p', generation: 1 },
    spec: {
      budgets: [
        { name: 'always', nodes: '50%' },
        // NOW is a Saturday, 12:00 UTC.
        {
          name: 'weekend',
          nodes: 1,
          reasons: ['Plan'],
          windows: { weekly: [{ days: ['Sat', 'Sun'], start: '00:00', end: '23:59' }] },
        },
        {
          name: 'weekdays',
          nodes: 3,
          windows: { weekly: [{ days: ['Mon'], start: '09:00', end: '17:00' }] },
        },
      ],
    },
  });
  assert.ok(resolved.ok, JSON.stringify(!resolved.ok && resolved.errors));
  const { active, changesAt } = activeBudgets(resolved.policy.budgets, 10, NOW);
  assert.deepEqual(
    active.map((b) => [b.name, b.slots, b.reasons && [...b.reasons]]),
    [
      ['always', 5, undefined],
      ['weekend', 1, ['Plan']],
    ],
  );
  assert.equal(changesAt, Date.parse('2026-11-21T23:59:00Z'), "Saturday's window ends first");
  // On a simulated clock showing Monday 08:00 now, 60 times as fast: the weekday budget opens in 1 real minute.
  const monday = { origin: Date.parse('2026-11-23T08:00:00Z'), start: t, speed: 60 };
  const sim = activeBudgets(resolved.policy.budgets, 10, NOW, monday);
  assert.deepEqual(
    sim.active.map((b) => b.name),
    ['always'],
  );
  assert.equal(sim.changesAt, t + 60_000, 'the weekday window opens at 09:00 simulated, a real minute on');
});

test('a budget whose windows are malformed makes the policy invalid, naming the budget', () => {
  const bad = resolvePolicy({
    metadata: { name: 'p', generation: 1 },
    spec: {
      budgets: [
        { name: 'b', nodes: 1, windows: { weekly: [{ days: ['Sat'], start: '25:00', end: '26:00' }] } },
      ],
    },
  });
  assert.equal(bad.ok, false);
  assert.match(JSON.stringify(!bad.ok && bad.errors), /budgets\[0\]\.windows\.weekly\[0\]/);
});

test("reasonLimit: the tightest budget for the node's reason, else the pool's cap", () => {
  const pool = { slots: 3, name: 'maxUnavailable 3' };
  const budgets = [
    { name: 'plans', slots: 1, reasons: new Set(['Plan'] as const) },
    { name: 'all', slots: 2 },
  ];
  assert.deepEqual(reasonLimit(view(needs), t, budgets, pool), {
    slots: 2,
    name: 'budget all: 2 for Reboot',
  });
  assert.deepEqual(
    reasonLimit({ ...view(), work: { ref: 'ops/os', reboot: false } as PlanWork }, t, budgets, pool),
    {
      slots: 1,
      name: 'budget plans: 1 for Plan',
    },
  );
  assert.equal(reasonLimit(view(needs), t, [], pool), pool);
  assert.equal(
    reasonLimit(view(needs), t, [{ name: 'wide', slots: 9 }], pool),
    pool,
    'a looser budget changes nothing',
  );
});

test('decide: a reboot budget of 1 admits one of three needing nodes while maxUnavailable allows 3, and says which budget', () => {
  const nodes = ['a', 'b', 'c'].map((name) => node(name, { annotations: needs }));
  const d = run(nodes, {
    cfg: {
      maxUnavailable: { kind: 'count', value: 3 },
      reasonBudgets: [{ name: 'reboots', slots: 1, reasons: new Set(['Reboot'] as const) }],
    },
  });
  assert.deepEqual(ofType(d.actions, 'admit'), ['a']);
  const waiting = d.actions.filter((a) => a.type === 'pending');
  assert.deepEqual(
    waiting.map((a) => [a.node, 'reason' in a ? a.reason : '']),
    [
      ['b', 'waiting for a free slot (budget reboots: 1 for Reboot)'],
      ['c', 'waiting for a free slot (budget reboots: 1 for Reboot)'],
    ],
  );
});
