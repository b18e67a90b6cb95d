import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Annotations } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import { parseMaxUnavailable } from '../../src/operator/decide/budget.ts';
import { needs, node, ofType, run, state } from './operator-fixtures.ts';

const ZONE = 'topology.kubernetes.io/zone';
const inZone = (name: string, zone: string, annotations: Record<string, string> = needs) =>
  node(name, { labels: { [ZONE]: zone }, annotations });
const pending = { ...needs, ...state(Phase.pending, 60) };
const holding = (since: number) => state(Phase.draining, since, { [Annotations.cordonedByNuo]: 'true' });

test('a zone cap of 1: at most one node disrupted per zone, whatever the pool budget allows', () => {
  const d = run(
    [inZone('a1', 'a'), inZone('a2', 'a'), inZone('b1', 'b'), inZone('b2', 'b'), inZone('c1', 'c')],
    {
      cfg: {
        maxUnavailable: parseMaxUnavailable('5'),
        zones: { label: ZONE, max: parseMaxUnavailable('1'), order: 'Parallel' },
      },
    },
  );
  assert.deepEqual(ofType(d.actions, 'admit'), ['a1', 'b1', 'c1']);
  const waiting = d.actions
    .filter((a) => a.type === 'pending')
    .map((a) => [a.node, (a as { reason: string }).reason]);
  assert.deepEqual(waiting, [
    ['a2', 'waiting for a free slot in zone a (1 of 1 disrupted)'],
    ['b2', 'waiting for a free slot in zone b (1 of 1 disrupted)'],
  ]);
});

test("a zone's disruptions count: a holder, an admin's cordon, a NotReady node each take the zone's slot", () => {
  const ledger = { slots: { a1: { since: '2026-11-21T11:59:00Z' } } };
  const d = run(
    [
      node('a1', { labels: { [ZONE]: 'a' }, annotations: { ...needs, ...holding(60) }, unschedulable: true }),
      inZone('a2', 'a', pending),
      node('b1', { labels: { [ZONE]: 'b' }, unschedulable: true }),
      inZone('b2', 'b', pending),
      node('c1', { labels: { [ZONE]: 'c' }, ready: false }),
      inZone('c2', 'c', pending),
      inZone('d1', 'd', pending),
    ],
    {
      ledger,
      draining: ['a1'],
      cfg: {
        maxUnavailable: parseMaxUnavailable('10'),
        zones: { label: ZONE, max: parseMaxUnavailable('1'), order: 'Parallel' },
      },
    },
  );
  assert.deepEqual(ofType(d.actions, 'admit'), ['d1']);
});

test('a percentage per zone is of the pool nodes in that zone, at least 1', () => {
  const nodes = [
    ...['1', '2', '3', '4'].map((i) => inZone(`a${i}`, 'a')),
    inZone('b1', 'b'),
    inZone('b2', 'b'),
  ];
  const d = run(nodes, {
    cfg: {
      maxUnavailable: parseMaxUnavailable('10'),
      zones: { label: ZONE, max: parseMaxUnavailable('50%'), order: 'Parallel' },
    },
  });
  assert.deepEqual(ofType(d.actions, 'admit'), ['a1', 'a2', 'b1']);
});

test('one zone at a time: zones in name order, the next only once no attempt is left in the current one', () => {
  const cfg = {
    maxUnavailable: parseMaxUnavailable('10'),
    zones: { label: ZONE, order: 'OneAtATime' as const },
  };
  const fresh = run([inZone('b1', 'b'), inZone('a1', 'a'), inZone('a2', 'a'), inZone('c1', 'c')], { cfg });
  assert.deepEqual(ofType(fresh.actions, 'admit'), ['a1', 'a2']);
  assert.match(
    (fresh.actions.find((a) => a.node === 'b1') as { reason: string }).reason,
    /zone a is updated first \(one zone at a time\)/,
  );
  // Zone b has an attempt in progress: it stays the zone being updated, even though a comes first by name.
  const during = run(
    [
      node('b1', { labels: { [ZONE]: 'b' }, annotations: { ...needs, ...holding(30) }, unschedulable: true }),
      inZone('b2', 'b', pending),
      inZone('a1', 'a', pending),
    ],
    { cfg, ledger: { slots: { b1: { since: '2026-11-21T11:59:30Z' } } }, draining: ['b1'] },
  );
  assert.deepEqual(ofType(during.actions, 'admit'), ['b2']);
});

test('a pool hold (a closed window, a blocker) keeps every node waiting with its reason, and says when to look again', () => {
  const until = Date.parse('2026-11-21T13:00:00Z');
  const d = run([node('a', { annotations: needs }), node('b', { annotations: pending })], {
    cfg: {
      maxUnavailable: parseMaxUnavailable('2'),
      hold: { reason: 'outside every maintenance window', until },
    },
  });
  assert.deepEqual(ofType(d.actions, 'admit'), []);
  assert.deepEqual(
    d.actions
      .filter((a) => a.type === 'pending' || a.type === 'explain')
      .map((a) => (a as { reason: string }).reason),
    ['outside every maintenance window', 'outside every maintenance window'],
  );
  assert.equal(d.wakeAt, until);
});
