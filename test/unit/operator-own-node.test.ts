import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Annotations } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import { parseMaxUnavailable } from '../../src/operator/decide/budget.ts';
import type { NodeView } from '../../src/operator/decide/node-view.ts';
import { drainKey, handsOver, OwnNode, ownNodeLast } from '../../src/operator/decide/own-node.ts';
import { ago, needs, node, ofType, run, state } from './operator-fixtures.ts';

const view = (name: string) => ({ name }) as NodeView;

test("the operator's own node is moved to the end of the admission order, the rest kept as they are", () => {
  const table: Array<[string, string[], string | undefined, string[]]> = [
    ['own node unknown', ['a', 'b', 'c'], undefined, ['a', 'b', 'c']],
    ['own node first', ['a', 'b', 'c'], 'a', ['b', 'c', 'a']],
    ['own node in the middle', ['a', 'b', 'c'], 'b', ['a', 'c', 'b']],
    ['own node last already', ['a', 'b', 'c'], 'c', ['a', 'b', 'c']],
    ['own node not waiting', ['a', 'b'], 'x', ['a', 'b']],
    ['own node alone', ['a'], 'a', ['a']],
  ];
  for (const [what, names, own, want] of table)
    assert.deepEqual(
      ownNodeLast(names.map(view), own).map((n) => n.name),
      want,
      what,
    );
});

test('the leader hands over instead of draining its own node, once per drain', () => {
  const draining = {
    name: 'own',
    attempt: '4',
    annotations: { 'nuo.dev/state-since': '2026-11-21T12:00:00Z' },
  };
  const again = { name: 'own', attempt: '4', annotations: { 'nuo.dev/state-since': '2026-11-21T12:05:00Z' } };
  const table: Array<[string, typeof draining, string | undefined, string | undefined, boolean]> = [
    ['own node unknown', draining, undefined, undefined, false],
    ["another node's drain", { ...draining, name: 'other' }, 'own', undefined, false],
    ['its own node, not handed over yet', draining, 'own', undefined, true],
    [
      'its own node, handed over for this drain already: nobody took over',
      draining,
      'own',
      drainKey(draining),
      false,
    ],
    ['its own node drained again (a new Draining phase)', again, 'own', drainKey(draining), true],
  ];
  for (const [what, n, own, handedOver, want] of table)
    assert.equal(handsOver(n, own, handedOver), want, what);

  const handed: string[] = [];
  const own = new OwnNode('own', (n) => handed.push(n));
  assert.equal(own.yields({ ...draining, name: 'other' }), false);
  assert.equal(own.yields(draining), true, 'the first drain of its node: handed over');
  assert.equal(own.due(draining), false);
  assert.equal(own.yields(draining), false, 'leading again in the same drain: it drains');
  assert.equal(own.yields(again), true, 'a later drain: handed over again');
  assert.deepEqual(handed, ['own', 'own']);
  const unknown = new OwnNode(undefined, (n) => handed.push(n));
  assert.equal(unknown.yields(draining), false, 'feature off');
  assert.equal(handed.length, 2);
});

test("decide: the operator's own node goes after every other node of its pool that can go, never starved", () => {
  const pending = (name: string, s: number) =>
    node(name, { annotations: { ...needs, ...state(Phase.pending, s) } });
  const two = { maxUnavailable: parseMaxUnavailable('2') };
  // Waiting longest, it would go first.
  const first = run([pending('own', 100), pending('b', 10)], { cfg: { ownNode: 'own' } });
  assert.deepEqual(ofType(first.actions, 'admit'), ['b']);
  assert.deepEqual(
    ofType(run([pending('own', 100), pending('b', 10)]).actions, 'admit'),
    ['own'],
    'feature off',
  );
  // A slot left after the others: not this pass (another node went), the next one.
  const spare = run([pending('own', 100), pending('b', 10)], { cfg: { ...two, ownNode: 'own' } });
  assert.deepEqual(ofType(spare.actions, 'admit'), ['b']);
  assert.ok(
    spare.actions.some(
      (a) =>
        a.type === 'explain' &&
        a.node === 'own' &&
        a.reason.includes("the operator's leader runs on this node"),
    ),
  );
  const next = run(
    [pending('own', 100), node('b', { annotations: { ...needs, ...state(Phase.draining, 1) } })],
    { cfg: { ...two, ownNode: 'own' }, ledger: { slots: { b: { since: ago(1) } } }, draining: ['b'] },
  );
  assert.deepEqual(ofType(next.actions, 'admit'), ['own'], 'a slot free, nothing else waits: it goes');
  // Another node that cannot go (paused) does not hold it back.
  const held = run(
    [
      pending('own', 100),
      node('b', { annotations: { ...needs, ...state(Phase.pending, 10), [Annotations.paused]: 'true' } }),
    ],
    { cfg: { ownNode: 'own' } },
  );
  assert.deepEqual(ofType(held.actions, 'admit'), ['own']);
  // Zones one at a time: last even though its zone comes first.
  const zoned = run(
    [
      node('own', { labels: { zone: 'a' }, annotations: { ...needs, ...state(Phase.pending, 100) } }),
      node('b', { labels: { zone: 'b' }, annotations: { ...needs, ...state(Phase.pending, 10) } }),
    ],
    { cfg: { ownNode: 'own', zones: { label: 'zone', order: 'OneAtATime' } } },
  );
  assert.deepEqual(ofType(zoned.actions, 'admit'), ['b']);
});
