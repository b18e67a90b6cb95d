import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Phase } from '../../src/api/phases.ts';
import { parseMaxUnavailable } from '../../src/operator/decide/budget.ts';
import { takenElsewhere } from '../../src/operator/decide/decide.ts';
import {
  KURED_LOCK_ANNOTATION,
  type KuredSettings,
  kuredDisrupted,
  kuredHold,
  nextLockValue,
  nuoHolder,
  parseKuredLock,
  viewLock,
  wantsLock,
} from '../../src/operator/protocols/kured-lock.ts';
import { NOW, needs, node, ofType, run, state } from './operator-fixtures.ts';

const t = NOW.getTime();
const at = (secondsAgo: number) => new Date(t - secondsAgo * 1000).toISOString();
const MIN_NS = 60e9;
const single: KuredSettings = {
  namespace: 'kube-system',
  name: 'kured',
  annotation: KURED_LOCK_ANNOTATION,
  concurrency: 1,
  holdLock: true,
  ttlMs: 300_000,
};
const multi: KuredSettings = { ...single, concurrency: 3 };
/** A holder as kured 1.23 marshals it (Go's time.Time and time.Duration). */
const kuredEntry = (node: string, secondsAgo: number, ttlNs = 0) => ({
  nodeID: node,
  metadata: { unschedulable: false },
  created: at(secondsAgo).replace('Z', '123456Z'),
  TTL: ttlNs,
});
const lockOf = (value: string | undefined, concurrency = 1) => {
  const parsed = parseKuredLock(value, concurrency);
  assert.ok(parsed.ok, JSON.stringify(parsed));
  return parsed.lock;
};

describe("kured's lock as kured writes it", () => {
  test('reads one holder, a list of holders, and no annotation as no holder', () => {
    assert.deepEqual(lockOf(undefined), []);
    assert.deepEqual(
      lockOf(JSON.stringify(kuredEntry('node-3', 10))).map((e) => e.nodeID),
      ['node-3'],
    );
    const list = { maxOwners: 3, locks: [kuredEntry('node-1', 5), kuredEntry('node-2', 5)] };
    assert.deepEqual(
      lockOf(JSON.stringify(list), 3).map((e) => e.nodeID),
      ['node-1', 'node-2'],
    );
    assert.deepEqual(lockOf(JSON.stringify({ maxOwners: 3, locks: null }), 3), []);
  });

  test("a value of the other form, or not kured's, is an error naming --concurrency", () => {
    const table: Array<[string, number, RegExp]> = [
      ['{', 1, /not JSON/],
      [JSON.stringify({ maxOwners: 2, locks: [] }), 1, /--concurrency 1/],
      [JSON.stringify(kuredEntry('node-1', 1)), 2, /no "locks" list: is kured's --concurrency 2/],
      [JSON.stringify({ nodeID: 'n' }), 1, /without nodeID and created/],
    ];
    for (const [value, concurrency, error] of table) {
      const parsed = parseKuredLock(value, concurrency);
      assert.ok(!parsed.ok && error.test(parsed.error), `${value}: ${JSON.stringify(parsed)}`);
    }
  });

  test("live holders: kured's nodes, nuo's own hold, another pool's; an expired TTL holds nothing", () => {
    const table: Array<
      [string, ReturnType<typeof kuredEntry>[], { kured: string[]; held: boolean; otherNuo: boolean }]
    > = [
      [
        'kured, no TTL, long ago',
        [kuredEntry('node-1', 86_400)],
        { kured: ['node-1'], held: false, otherNuo: false },
      ],
      ['kured, TTL passed', [kuredEntry('node-1', 120, MIN_NS)], { kured: [], held: false, otherNuo: false }],
      [
        'kured, TTL running',
        [kuredEntry('node-1', 30, MIN_NS)],
        { kured: ['node-1'], held: false, otherNuo: false },
      ],
      [
        'this pool',
        [{ ...kuredEntry(nuoHolder('web'), 10, MIN_NS) }],
        { kured: [], held: true, otherNuo: false },
      ],
      [
        'this pool, a list place',
        [kuredEntry(`${nuoHolder('web')}#2`, 10, MIN_NS)],
        { kured: [], held: true, otherNuo: false },
      ],
      ['another pool', [kuredEntry(nuoHolder('db'), 10, MIN_NS)], { kured: [], held: false, otherNuo: true }],
    ];
    for (const [name, lock, want] of table) assert.deepEqual(viewLock(lock, 'web', t), want, name);
  });
});

describe("kured's holders in the pool's budget", () => {
  test("only the pool's nodes kured holds count", () => {
    const view = { kured: ['a', 'other-pool'], held: false, otherNuo: false };
    assert.deepEqual([...kuredDisrupted(view, ['a', 'b'])], [['a', "held by kured's lock"]]);
  });

  test('a node kured holds uses a slot, even before kured cordons it, and zones count it too', () => {
    const p = { annotations: { ...needs, ...state(Phase.pending, 10) } };
    const two = { maxUnavailable: parseMaxUnavailable('2') };
    const free = run([node('a', p), node('b', p), node('k')], { cfg: two });
    assert.deepEqual(ofType(free.actions, 'admit'), ['a', 'b']);
    const held = run([node('a', p), node('b', p), node('k')], {
      cfg: { ...two, disruptedElsewhere: new Map([['k', "held by kured's lock"]]) },
    });
    assert.deepEqual(ofType(held.actions, 'admit'), ['a']);
    assert.deepEqual(held.budget.unavailable, ['k']);
    assert.equal(held.budget.used, 2);
    assert.deepEqual(
      held.actions.filter((a) => a.node === 'b'),
      [
        {
          type: 'explain',
          node: 'b',
          reason: "waiting for a free slot (maxUnavailable 2; k held by kured's lock)",
        },
      ],
      "the waiting node names kured's holder that takes the slot",
    );
    const zone = (z: string, o = {}) => ({ ...o, labels: { 'topology.kubernetes.io/zone': z } });
    const zones = run([node('a', zone('z1', p)), node('b', zone('z2', p)), node('k', zone('z1'))], {
      cfg: {
        ...two,
        zones: { label: 'topology.kubernetes.io/zone', order: 'Parallel', max: parseMaxUnavailable('1') },
        disruptedElsewhere: new Map([['k', "held by kured's lock"]]),
      },
    });
    assert.deepEqual(ofType(zones.actions, 'admit'), ['b']);
  });
});

test("the slots kured's holders take, named: three at most, then how many more; nuo's own attempts not", () => {
  const by = "held by kured's lock";
  const elsewhere = new Map(['k1', 'k2', 'k3', 'k4'].map((n) => [n, by]));
  const table: Array<[string, string[], string | undefined]> = [
    ['none disrupted', [], undefined],
    ['only unavailable for other reasons (NotReady, cordoned)', ['x'], undefined],
    ['one', ['x', 'k1'], `k1 ${by}`],
    ['four', ['k1', 'k2', 'k3', 'k4'], `k1 ${by}, k2 ${by}, k3 ${by} and 1 more`],
  ];
  for (const [what, disrupted, want] of table) assert.equal(takenElsewhere(disrupted, elsewhere), want, what);
  assert.equal(takenElsewhere(['k1'], undefined), undefined, 'no coordinator beside nuo');
});

describe('holdLock', () => {
  const free = { kured: [], held: false, otherNuo: false };
  test('the pool waits while kured holds the lock, until its own hold is in, and (with or without holdLock) while the lock is unknown', () => {
    const table: Array<[string, Parameters<typeof kuredHold>[1], RegExp | undefined]> = [
      ['not read', undefined, /is not read yet/],
      ['unreadable', { error: 'forbidden' }, /cannot be used: forbidden/],
      [
        'kured holds',
        { ...free, kured: ['node-4'] },
        /kured holds kured's lock \(kube-system\/kured weave\.works\/kured-node-lock\) for node-4/,
      ],
      ['another pool holds', { ...free, otherNuo: true }, /another UpdatePolicy holds/],
      ['free', free, /taking kured's lock/],
      ['held', { ...free, held: true }, undefined],
    ];
    for (const [name, view, want] of table) {
      const hold = kuredHold(single, view);
      if (want) assert.match(hold?.reason ?? '', want, name);
      else assert.equal(hold, undefined, name);
    }
    const countOnly = { ...single, holdLock: false };
    assert.equal(
      kuredHold(countOnly, { ...free, kured: ['node-4'] }),
      undefined,
      'kured holds: counted only',
    );
    assert.match(kuredHold(countOnly, undefined)?.reason ?? '', /not read yet/, 'unknown: fail closed');
    assert.match(kuredHold(countOnly, { error: 'no "locks" list' })?.reason ?? '', /cannot be used/);
  });

  test('a pool wants the lock while it has attempts, or waiting nodes held back by nothing but the lock', () => {
    const table: Array<[number, number, { code: string } | undefined, boolean]> = [
      [1, 0, undefined, true],
      [1, 0, { code: 'OutsideWindow' }, true],
      [0, 2, undefined, true],
      [0, 2, { code: 'KuredLock' }, true],
      [0, 2, { code: 'OutsideWindow' }, false],
      [0, 2, { code: 'Paused' }, false],
      [0, 0, undefined, false],
    ];
    for (const [attempts, waiting, hold, want] of table) {
      assert.equal(wantsLock(attempts, waiting, hold), want, JSON.stringify({ attempts, waiting, hold }));
    }
  });

  test("one holder: nuo takes a free or expired lock in kured's form, renews at half its TTL, releases only its own", () => {
    const mine = (secondsAgo: number) => kuredEntry(nuoHolder('web'), secondsAgo, 300 * 1e9);
    const taken = nextLockValue([], single, 'web', true, t);
    assert.deepEqual(JSON.parse(taken ?? ''), {
      nodeID: 'nuo.dev/web',
      metadata: { unschedulable: false },
      created: NOW.toISOString(),
      TTL: 300e9,
    });
    assert.equal(
      nextLockValue([kuredEntry('node-1', 5)], single, 'web', true, t),
      undefined,
      "kured's live hold",
    );
    assert.match(
      nextLockValue([kuredEntry('node-1', 120, MIN_NS)], single, 'web', true, t) ?? '',
      /nuo\.dev\/web/,
    );
    assert.equal(nextLockValue([mine(100)], single, 'web', true, t), undefined, 'fresh');
    assert.match(nextLockValue([mine(200)], single, 'web', true, t) ?? '', new RegExp(NOW.toISOString()));
    assert.equal(nextLockValue([mine(10)], single, 'web', false, t), null, 'released');
    assert.equal(
      nextLockValue([kuredEntry('node-1', 5)], single, 'web', false, t),
      undefined,
      "kured's is kept",
    );
    assert.equal(nextLockValue([], single, 'web', false, t), undefined);
  });

  test("several holders: nuo fills every free place, keeps kured's, and removes only its own", () => {
    const k = kuredEntry('node-1', 5);
    const held = JSON.parse(nextLockValue([k], multi, 'web', true, t) ?? '');
    assert.equal(held.maxOwners, 3);
    assert.deepEqual(
      held.locks.map((e: { nodeID: string }) => e.nodeID),
      ['node-1', 'nuo.dev/web#1', 'nuo.dev/web#2'],
    );
    assert.equal(
      nextLockValue(lockOf(JSON.stringify(held), 3), multi, 'web', true, t),
      undefined,
      'full and fresh',
    );
    const released = JSON.parse(nextLockValue(lockOf(JSON.stringify(held), 3), multi, 'web', false, t) ?? '');
    assert.deepEqual(released, { maxOwners: 3, locks: [k] });
    assert.equal(nextLockValue([k], multi, 'web', false, t), undefined);
  });
});
