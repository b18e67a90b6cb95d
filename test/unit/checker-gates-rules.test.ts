import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Node } from '@kubernetes/client-node';
import { Annotations } from '../../src/api/keys.ts';
import {
  HOUR_MS,
  inSpans,
  type ReasonBudget,
  reasonBudgetBreaches,
  reasonCountBreaches,
  reasonOf,
  remediationRateBreaches,
  settledDisruptions,
} from '../../src/sim/checker-gates-rules.ts';
import { node } from './operator-fixtures.ts';

test('an admission written inside a halt or a failing health check is caught, by resourceVersion; one before or after is not', () => {
  const spans = [
    { from: '100', to: '200', what: 'Halted, resumed' },
    { from: '500', what: 'Halted, never resumed' },
  ];
  const table: [string, boolean][] = [
    ['99', false],
    ['100', false], // the halt's own write: the admission came before it
    ['101', true],
    ['199', true],
    ['200', false], // the resume's own write
    ['201', false],
    ['499', false],
    ['501', true],
    ['1000000', true], // a revision longer by a digit still compares as a number
  ];
  for (const [rv, caught] of table) {
    const found = inSpans([{ node: 'a', resourceVersion: rv }], spans);
    assert.equal(found.length > 0, caught, `admission at ${rv}`);
  }
  assert.deepEqual(
    inSpans([{ node: 'a', resourceVersion: '150' }], spans).map((b) => b.span.what),
    ['Halted, resumed'],
  );
});

test("a node-scoped hold (a blocking pod on one node) catches that node's admission only; a pool-wide one every node's", () => {
  const spans = [
    { from: '100', to: '200', what: 'blocking pod on b', node: 'b' },
    { from: '300', to: '400', what: 'pool-wide blocking pod' },
  ];
  const table: [string, string, string | undefined][] = [
    ['a', '150', undefined], // another node, inside b's hold
    ['b', '150', 'blocking pod on b'],
    ['b', '250', undefined],
    ['a', '350', 'pool-wide blocking pod'],
    ['b', '350', 'pool-wide blocking pod'],
  ];
  for (const [node, rv, what] of table)
    assert.deepEqual(
      inSpans([{ node, resourceVersion: rv }], spans).map((b) => b.span.what),
      what ? [what] : [],
      `${node} at ${rv}`,
    );
});

test("the checker's own reason for an attempt: a Plan's, the node's need or a request, then a held condition, then an old boot", () => {
  const t = Date.parse('2026-11-27T12:00:00Z');
  const asks = { remediation: { types: ['KernelDeadlock'], forMs: 300_000 }, maxUptimeMs: HOUR_MS };
  const withCondition = (n: V1Node, since: number, status = 'True'): V1Node => ({
    ...n,
    status: {
      ...n.status,
      conditions: [
        ...(n.status?.conditions ?? []),
        { type: 'KernelDeadlock', status, lastTransitionTime: new Date(t - since) as never },
      ],
    },
  });
  const old = { [Annotations.bootTime]: new Date(t - 2 * HOUR_MS).toISOString() };
  const young = { [Annotations.bootTime]: new Date(t - 60_000).toISOString() };
  const table: [string, V1Node, string][] = [
    ['a Plan', node('a', { annotations: { [Annotations.plan]: 'ns/p', ...old } }), 'Plan'],
    [
      'its need',
      withCondition(node('a', { annotations: { [Annotations.rebootNeeded]: 'true' } }), 600_000),
      'Reboot',
    ],
    ['a request', node('a', { annotations: { [Annotations.rebootRequested]: 'x', ...old } }), 'Reboot'],
    ['a condition held 10m', withCondition(node('a', { annotations: old }), 600_000), 'Remediation'],
    ['a condition held 1m', withCondition(node('a', { annotations: young }), 60_000), 'Reboot'],
    ['a condition False', withCondition(node('a', { annotations: young }), 600_000, 'False'), 'Reboot'],
    ['a condition held 1m, an old boot', withCondition(node('a', { annotations: old }), 60_000), 'Refresh'],
    ['an old boot', node('a', { annotations: old }), 'Refresh'],
    ['a young boot', node('a', { annotations: young }), 'Reboot'],
    ['no boot time', node('a'), 'Reboot'],
  ];
  for (const [what, n, want] of table) assert.equal(reasonOf(n, asks, t), want, what);
  assert.equal(reasonOf(node('a', { annotations: old }), {}, t), 'Reboot', 'no maxUptime: no refresh');
});

test('a budget for some reasons: an attempt for one of them needs room in it, and no more of them run at once', () => {
  const budgets: ReasonBudget[] = [{ name: 'fixes', max: 1, reasons: ['Remediation', 'Refresh'] }];
  assert.deepEqual(reasonBudgetBreaches('a', 'Refresh', ['a'], budgets), []);
  assert.deepEqual(
    reasonBudgetBreaches('a', 'Reboot', ['a', 'b'], budgets),
    [],
    'a reason it does not limit',
  );
  assert.deepEqual(reasonBudgetBreaches('a', 'Remediation', ['a', 'b'], budgets), [
    "a's attempt for Remediation started with 2 nodes disrupted (budget fixes: 1): a, b",
  ]);
  assert.deepEqual(
    reasonCountBreaches(
      new Map([
        ['a', 'Refresh'],
        ['b', 'Reboot'],
      ]),
      budgets,
    ),
    [],
  );
  assert.deepEqual(
    reasonCountBreaches(
      new Map([
        ['b', 'Refresh'],
        ['a', 'Remediation'],
      ]),
      budgets,
    ),
    ['2 attempts for Remediation/Refresh at once (budget fixes: 1): a, b'],
  );
});

test('remediations past maxPerHour within any hour are caught; one an hour apart is not', () => {
  assert.deepEqual(remediationRateBreaches([{ node: 'a', at: 0 }], 1), []);
  assert.deepEqual(
    remediationRateBreaches(
      [
        { node: 'a', at: 0 },
        { node: 'b', at: HOUR_MS },
      ],
      1,
    ),
    [],
  );
  assert.deepEqual(
    remediationRateBreaches(
      [
        { node: 'a', at: 0 },
        { node: 'b', at: HOUR_MS - 1 },
      ],
      1,
    ),
    ['2 remediations within an hour (maxPerHour 1): a, b'],
  );
  assert.deepEqual(
    remediationRateBreaches(
      [
        { node: 'a', at: 0 },
        { node: 'b', at: 10 },
      ],
      2,
    ),
    [],
  );
});

test('a budget per reason counts the disruptions that began RACE_MS or more before the admission, and the admitted node: not an attempt the same pass admitted', () => {
  const since = new Map([
    ['old', 0],
    ['same-pass', 9_990],
    ['just-settled', 8_000],
    ['me', 10_000],
  ]);
  assert.deepEqual(settledDisruptions('me', since, 10_000, 2000), ['just-settled', 'me', 'old']);
  assert.deepEqual(
    settledDisruptions('new', new Map(), 10_000, 2000),
    ['new'],
    'itself, though not tracked yet',
  );
  // Seed 8 of the gates campaign: a pass admitted node-1 (Remediation, 0 disrupted) and node-2 (Reboot);
  // node-2's write landed first. Not a breach of a budget of 1 for Remediation.
  const pass = new Map([
    ['node-2', 10_000],
    ['node-1', 10_015],
  ]);
  const budgets: ReasonBudget[] = [{ name: 'fixes', max: 1, reasons: ['Remediation'] }];
  assert.deepEqual(
    reasonBudgetBreaches('node-1', 'Remediation', settledDisruptions('node-1', pass, 10_015, 2000), budgets),
    [],
  );
  // node-2 in its attempt for 2 s already: the remediation had no room.
  assert.equal(
    reasonBudgetBreaches('node-1', 'Remediation', settledDisruptions('node-1', pass, 12_015, 2000), budgets)
      .length,
    1,
  );
});
