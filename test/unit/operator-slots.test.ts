import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Node } from '@kubernetes/client-node';
import { Annotations } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import type { AttemptReason } from '../../src/api/update-policy.ts';
import { admissionOrder } from '../../src/operator/decide/admission.ts';
import { type NodeView, viewNode } from '../../src/operator/decide/node-view.ts';
import { releaseStale } from '../../src/operator/decide/slots.ts';

const NOW = Date.parse('2026-11-24T12:00:00Z');
const at = (s: number) => new Date(NOW + s * 1000).toISOString();
const node = (name: string, annotations: Record<string, string>): V1Node => ({
  metadata: { name, annotations },
});

test('a ledger entry is released only when nothing stands behind it', () => {
  const slot = { since: at(-100) };
  const table: Array<[string, Record<string, string> | undefined, string | undefined]> = [
    ['the node is gone', undefined, 'node no longer exists'],
    ['in an attempt', { [Annotations.state]: Phase.draining, [Annotations.stateSince]: at(-50) }, undefined],
    [
      'Idle since after its admission: completed',
      { [Annotations.state]: Phase.idle, [Annotations.stateSince]: at(-10) },
      'node is Idle after its attempt',
    ],
    [
      'Pending since after its admission: aborted',
      { [Annotations.state]: Phase.pending, [Annotations.stateSince]: at(-10) },
      'node is Pending after its attempt',
    ],
    [
      'Pending since before its admission, still needing: the admission write is to come',
      {
        [Annotations.state]: Phase.pending,
        [Annotations.stateSince]: at(-200),
        [Annotations.rebootNeeded]: 'true',
      },
      undefined,
    ],
    [
      'Pending since before its admission, needing nothing any more',
      { [Annotations.state]: Phase.pending, [Annotations.stateSince]: at(-200) },
      'admitted, but no longer needs a reboot or a Plan',
    ],
  ];
  for (const [what, annotations, reason] of table) {
    const byName = new Map(annotations ? [['a', viewNode(node('a', annotations))]] : []);
    const { holders, actions } = releaseStale({ slots: { a: slot } }, byName, NOW);
    assert.deepEqual(actions, reason ? [{ type: 'release', node: 'a', reason }] : [], what);
    assert.equal(holders.has('a'), reason === undefined, what);
  }
});

test('an admission not written yet stands only for the reason its budgets allowed', () => {
  const slot = (reason?: AttemptReason) => ({ since: at(-100), ...(reason ? { reason } : {}) });
  // Registered again since its admission: no phase, no time; a condition now its only need.
  const registeredAgain: NodeView = {
    ...viewNode(node('a', {})),
    policyAsks: { need: { kind: 'remediation', reason: 'remediation: KernelDeadlock=True' } },
  };
  const staged = viewNode(node('a', { [Annotations.rebootNeeded]: 'true' }));
  const table: Array<[string, NodeView, AttemptReason | undefined, boolean, string | undefined]> = [
    [
      'admitted for a reboot, a remediation now: released',
      registeredAgain,
      'Reboot',
      false,
      'admitted for Reboot, but needs a Remediation now: admitted again under its budgets',
    ],
    ['admitted for the remediation it needs: redone', registeredAgain, 'Remediation', false, undefined],
    ['the same reason: redone', staged, 'Reboot', false, undefined],
    ['a slot from before reasons were kept: redone', registeredAgain, undefined, false, undefined],
    ['its admission write in flight: kept', registeredAgain, 'Reboot', true, undefined],
  ];
  for (const [what, n, reason, admitting, released] of table) {
    const { holders, actions } = releaseStale(
      { slots: { a: slot(reason) } },
      new Map([['a', n]]),
      NOW,
      undefined,
      undefined,
      new Set(admitting ? ['a'] : []),
    );
    assert.deepEqual(actions, released ? [{ type: 'release', node: 'a', reason: released }] : [], what);
    assert.equal(holders.has('a'), released === undefined, what);
  }
});

test('admission order: promised successors, then Pending by age, then new needs by name', () => {
  const pending = (name: string, s: number) =>
    viewNode(node(name, { [Annotations.state]: Phase.pending, [Annotations.stateSince]: at(-s) }));
  const fresh = (name: string) => viewNode(node(name, { [Annotations.rebootNeeded]: 'true' }));
  const order = admissionOrder(
    [
      fresh('z'),
      pending('p-new', 10),
      fresh('b'),
      pending('p-old', 100),
      pending('s', 1),
      pending('p-tie-b', 50),
      pending('p-tie-a', 50),
    ],
    new Set(['s']),
  );
  assert.deepEqual(
    order.map((n) => n.name),
    ['s', 'p-old', 'p-tie-a', 'p-tie-b', 'p-new', 'b', 'z'],
  );
});

test('the first wave: successors, unread nodes (their read holds the line), the fewest pods to evict, then the usual order', () => {
  const pending = (name: string, s: number) =>
    viewNode(node(name, { [Annotations.state]: Phase.pending, [Annotations.stateSince]: at(-s) }));
  const pods = new Map([
    ['loaded-old', 6],
    ['empty-new', 0],
    ['empty-old', 0],
    ['one', 1],
    ['s', 9],
  ]);
  const order = admissionOrder(
    [
      pending('loaded-old', 100),
      pending('unread', 200),
      pending('empty-new', 10),
      pending('one', 300),
      pending('empty-old', 50),
      pending('s', 1),
    ],
    new Set(['s']),
    (name) => pods.get(name),
  );
  assert.deepEqual(
    order.map((n) => n.name),
    ['s', 'unread', 'empty-old', 'empty-new', 'one', 'loaded-old'],
  );
});
