import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Node } from '@kubernetes/client-node';
import { Annotations } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import type { AttemptReason } from '../../src/api/update-policy.ts';
import { admissionOrder } from '../../src/operator/decide/admission.ts';
import { type NodeView, viewNode } from '../../src/operator/decide/node-view.ts';
import type { Slot } from '../../src/operator/decide/slot.ts';
import { releaseStale } from '../../src/operator/decide/slots.ts';

const NOW = Date.parse('2026-11-24T12:00:00Z');
const at = (s: number) => new Date(NOW + s * 1000).toISOString();
const node = (name: string, annotations: Record<string, string>): V1Node => ({
  metadata: { name, annotations },
});

test('a ledger entry is released only when nothing stands behind it: whether its attempt ended is read from identities, never from times two leaders wrote', () => {
  const slot: Slot = { since: at(-100), attempt: 7 };
  const phase = (state: Phase, s: number, attempt?: string, extra: Record<string, string> = {}) => ({
    [Annotations.state]: state,
    [Annotations.stateSince]: at(s),
    ...(attempt ? { [Annotations.attempt]: attempt } : {}),
    ...extra,
  });
  const needs = { [Annotations.rebootNeeded]: 'true' };
  const table: Array<[string, Slot, Record<string, string> | undefined, string | undefined]> = [
    ['the node is gone', slot, undefined, 'node no longer exists'],
    ['in an attempt', slot, phase(Phase.draining, -50, '7'), undefined],
    [
      'Idle, naming the attempt: completed',
      slot,
      phase(Phase.idle, -10, '7'),
      'node is Idle after its attempt',
    ],
    [
      'Pending, naming the attempt: aborted',
      slot,
      phase(Phase.pending, -10, '7'),
      'node is Pending after its attempt',
    ],
    [
      'Idle, naming the attempt, written on a clock 10 minutes behind the admitting leader: ended all the same',
      slot,
      phase(Phase.idle, -700, '7', needs),
      'node is Idle after its attempt',
    ],
    [
      'Pending since after the admission by a clock ahead, naming an earlier attempt, still needing: the admission write is to come',
      slot,
      phase(Phase.pending, +600, '6', needs),
      undefined,
    ],
    [
      'naming no attempt, still needing: the admission write is to come',
      slot,
      phase(Phase.pending, -200, undefined, needs),
      undefined,
    ],
    [
      'naming an earlier attempt, needing nothing any more',
      slot,
      phase(Phase.pending, -200, '6'),
      'admitted, but no longer needs a reboot or a Plan',
    ],
    [
      'its end recorded, the node registered again without its annotations and still needing: ended, not redone',
      { ...slot, ended: 'completed' },
      needs,
      'node is Idle after its attempt',
    ],
    [
      'a slot an older operator wrote (no number), its node naming none: taken as ended',
      { since: at(-100) },
      phase(Phase.pending, -10, undefined, needs),
      'node is Pending after its attempt',
    ],
    [
      'a slot an older operator wrote, its admission redone by this one (the node names its time)',
      { since: at(-100) },
      phase(Phase.draining, -10, at(-100)),
      undefined,
    ],
  ];
  for (const [what, s, annotations, reason] of table) {
    const byName = new Map(annotations ? [['a', viewNode(node('a', annotations))]] : []);
    const { holders, actions } = releaseStale({ slots: { a: s } }, byName, NOW);
    assert.deepEqual(actions, reason ? [{ type: 'release', node: 'a', reason }] : [], what);
    assert.equal(holders.has('a'), reason === undefined, what);
  }
});

test('an admission not written yet stands only for the reason its budgets allowed', () => {
  const slot = (reason?: AttemptReason): Slot => ({
    since: at(-100),
    attempt: 7,
    ...(reason ? { reason } : {}),
  });
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
