import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1ConfigMap } from '@kubernetes/client-node';
import type { Ledger } from '../../src/operator/decide/ledger-view.ts';
import type { Slot } from '../../src/operator/decide/slot.ts';
import {
  inPool,
  type LedgerChange,
  parseLedger,
  poolOf,
  withChanges,
  withPoolChanges,
} from '../../src/operator/read/ledger.ts';

const cm = (text?: string): V1ConfigMap => ({
  metadata: { name: 'nuo-slots', namespace: 'nuo-system' },
  data: text === undefined ? {} : { 'ledger.json': text },
});

test('a ledger reads its slots and promises; anything malformed is corrupt, never guessed', () => {
  assert.deepEqual(parseLedger(cm()), { slots: {} });
  const ok = {
    slots: {
      a: { since: '2026-11-23T12:00:00Z' },
      c: { since: '2026-11-23T12:00:01Z', attempt: 4, reason: 'Refresh', ended: 'failed' },
    },
    next: { b: { after: 'a', since: '2026-11-23T12:00:05Z', attempt: 5 } },
    attempts: 5,
  };
  assert.deepEqual(parseLedger(cm(JSON.stringify(ok))), ok);
  for (const [what, text] of [
    ['not JSON', '{'],
    ['no slots', '{}'],
    ['next not an object', '{"slots":{},"next":3}'],
    ['a promise without its predecessor', '{"slots":{},"next":{"b":{"since":"x"}}}'],
    ['a promise that is null', '{"slots":{},"next":{"b":null}}'],
    ['a slot for no reason a budget knows', '{"slots":{"a":{"since":"x","reason":"Nap"}}}'],
    ['an attempt number that is not a whole number', '{"slots":{"a":{"since":"x","attempt":1.5}}}'],
    ['a promise numbered below zero', '{"slots":{},"next":{"b":{"after":"a","since":"x","attempt":-1}}}'],
    ['attempts handed out that is a string', '{"slots":{},"attempts":"7"}'],
    ['an end nobody records', '{"slots":{"a":{"since":"x","ended":"crashed"}}}'],
  ] as const) {
    assert.throws(() => parseLedger(cm(text)), /nuo-system\/nuo-slots is corrupt .*admits no node/, what);
  }
});

test("a pass's ledger changes: slots taken and freed, promises made, withdrawn and claimed", () => {
  const at = '2026-11-24T12:00:00.000Z';
  const before: Ledger = {
    slots: { a: { since: 'A', attempt: 1 }, b: { since: 'B', attempt: 2 } },
    next: { c: { after: 'a', since: 'C', attempt: 3 }, d: { after: 'b', since: 'D' } },
    attempts: 3,
  };
  const table: Array<[string, LedgerChange[], Ledger]> = [
    ['nothing', [], before],
    [
      'a slot freed and taken in one write',
      [
        { type: 'release', node: 'a', reason: 'done' },
        { type: 'admit', node: 'e', reason: 'needed', for: 'Reboot' },
      ],
      {
        slots: { b: before.slots.b as Slot, e: { since: at, attempt: 4, reason: 'Reboot' } },
        next: before.next,
        attempts: 4,
        lastGrant: at,
      },
    ],
    [
      'a handover recorded: the slot held since the promise, in the attempt it named',
      [
        { type: 'release', node: 'a', reason: 'done' },
        { type: 'claim', node: 'c', since: 'C', attempt: 3 },
      ],
      {
        slots: { b: before.slots.b as Slot, c: { since: 'C', attempt: 3 } },
        next: { d: { after: 'b', since: 'D' } },
        attempts: 3,
      },
    ],
    [
      "an attempt's end recorded on its slot; on a node without one, nothing",
      [
        { type: 'ended', node: 'a', outcome: 'completed' },
        { type: 'ended', node: 'x', outcome: 'failed' },
      ],
      { ...before, slots: { ...before.slots, a: { since: 'A', attempt: 1, ended: 'completed' } } },
    ],
    [
      'promises withdrawn, the last one removes next',
      [
        { type: 'unpromise', node: 'c', reason: 'paused' },
        { type: 'unpromise', node: 'd', reason: 'paused' },
      ],
      { slots: before.slots, attempts: 3 },
    ],
    [
      'a promise made: it takes the next attempt number',
      [{ type: 'promise', node: 'f', after: 'a' }],
      {
        slots: before.slots,
        next: { ...before.next, f: { after: 'a', since: at, attempt: 4 } },
        attempts: 4,
      },
    ],
  ];
  for (const [what, changes, want] of table) {
    assert.deepEqual(withChanges(before, changes, at), want, what);
  }
  assert.deepEqual(
    before.slots,
    { a: { since: 'A', attempt: 1 }, b: { since: 'B', attempt: 2 } },
    'the ledger read is untouched',
  );
});

test("one ledger holds every pool's budget: each pool sees and changes only its own slots, promises and spacing", () => {
  const at = '2026-11-25T07:00:00.000Z';
  const ledger: Ledger = {
    slots: { a: { since: 'A' }, w1: { since: 'W1', pool: 'workers' }, g1: { since: 'G1', pool: 'gpu' } },
    next: { w2: { after: 'w1', since: 'W2', pool: 'workers' } },
    lastGrant: 'L',
    poolGrants: { gpu: 'G' },
  };
  assert.deepEqual(inPool(ledger, ''), { slots: { a: { since: 'A' } }, lastGrant: 'L' });
  assert.deepEqual(inPool(ledger, 'workers'), {
    slots: { w1: { since: 'W1', pool: 'workers' } },
    next: { w2: { after: 'w1', since: 'W2', pool: 'workers' } },
  });
  assert.deepEqual(inPool(ledger, 'gpu'), { slots: { g1: { since: 'G1', pool: 'gpu' } }, lastGrant: 'G' });
  assert.deepEqual(inPool(ledger, 'nobody'), { slots: {} });
  assert.deepEqual(
    ['a', 'w1', 'w2', 'g1', 'x'].map((n) => poolOf(ledger, n)),
    ['', 'workers', 'workers', 'gpu', undefined],
  );

  const after = withPoolChanges(
    ledger,
    new Map<string, LedgerChange[]>([
      [
        'workers',
        [
          { type: 'release', node: 'w1', reason: 'done' },
          { type: 'claim', node: 'w2', since: 'W2' },
        ],
      ],
      ['gpu', [{ type: 'admit', node: 'g2', reason: 'needed', for: 'Reboot' }]],
    ]),
    at,
  );
  assert.deepEqual(after.slots, {
    a: { since: 'A' },
    w2: { since: 'W2', pool: 'workers' },
    g1: { since: 'G1', pool: 'gpu' },
    g2: { since: at, attempt: 1, pool: 'gpu', reason: 'Reboot' },
  });
  assert.equal(after.attempts, 1, 'attempt numbers are handed out across pools, in one sequence');
  assert.equal(after.next, undefined);
  assert.equal(after.lastGrant, 'L', "another pool's admission leaves the default pool's spacing alone");
  assert.deepEqual(after.poolGrants, { gpu: at });
  assert.equal(ledger.slots.g2, undefined, 'the old ledger is untouched');
});

test('a pool that is not a string, or pool grants that are not times, make the ledger corrupt', () => {
  for (const text of [
    '{"slots":{"a":{"since":"x","pool":3}}}',
    '{"slots":{},"next":{"b":{"after":"a","since":"x","pool":{}}}}',
    '{"slots":{},"poolGrants":{"gpu":5}}',
    '{"slots":{},"poolGrants":[1]}',
  ]) {
    assert.throws(() => parseLedger(cm(text)), /is corrupt/, text);
  }
  const ok = { slots: { a: { since: 'x', pool: 'gpu' } }, poolGrants: { gpu: 'y' } };
  assert.deepEqual(parseLedger(cm(JSON.stringify(ok))), ok);
});

test("each pool's rollout record: read, seen only by its pool, replaced and removed by its pass; malformed is corrupt", () => {
  const rec = { since: 'S', wave: 2, waveSince: 'W', completed: 1, counted: ['a@S'], failed: { 'b@S': 'F' } };
  const ledger = {
    slots: {},
    rollouts: { gpu: rec, web: { ...rec, wave: 1 } },
    rollout: { ...rec, wave: 5 },
  };
  assert.deepEqual(parseLedger(cm(JSON.stringify(ledger))), ledger);
  assert.deepEqual(inPool(ledger, 'gpu'), { slots: {}, rollout: rec });
  assert.deepEqual(inPool(ledger, ''), { slots: {}, rollout: { ...rec, wave: 5 } });
  assert.deepEqual(inPool(ledger, 'none'), { slots: {} });
  const next = { ...rec, wave: 3 };
  assert.deepEqual(withChanges(ledger, [{ type: 'rollout', record: next }], 'T', 'gpu').rollouts, {
    gpu: next,
    web: { ...rec, wave: 1 },
  });
  const ended = withChanges(
    withChanges(ledger, [{ type: 'rollout' }], 'T', 'gpu'),
    [{ type: 'rollout' }],
    'T',
    'web',
  );
  assert.equal(ended.rollouts, undefined);
  assert.equal(withChanges(ledger, [{ type: 'rollout' }], 'T').rollout, undefined);
  for (const bad of [{ ...rec, wave: '2' }, { ...rec, counted: [1] }, { ...rec, failed: null }, 'x']) {
    assert.throws(() => parseLedger(cm(JSON.stringify({ slots: {}, rollouts: { gpu: bad } }))), /is corrupt/);
  }
});

test("each pool's remediations: recorded by its admissions, forgotten when its pass says (out of the hour as it saw them, or the pool gone), never by the writer's clock; malformed is corrupt", () => {
  const at = '2026-11-24T12:00:00.000Z';
  const hourAgo = '2026-11-24T11:00:00.000Z';
  const before: Ledger = {
    slots: {},
    remediations: {
      gpu: [
        { node: 'old', at: hourAgo },
        { node: 'a', at: '2026-11-24T11:30:00.000Z' },
      ],
    },
  };
  const admit = (node: string, remediation: boolean): LedgerChange => ({
    type: 'admit',
    node,
    reason: 'r',
    for: remediation ? 'Remediation' : 'Reboot',
    ...(remediation ? { remediation: true as const } : {}),
  });
  const after = withChanges(before, [admit('b', true), admit('c', false)], at, 'gpu');
  assert.deepEqual(after.remediations, {
    gpu: [
      { node: 'old', at: hourAgo },
      { node: 'a', at: '2026-11-24T11:30:00.000Z' },
      { node: 'b', at },
    ],
  });
  assert.deepEqual(withChanges(before, [admit('e', true)], at, 'web').remediations?.web, [{ node: 'e', at }]);
  const forgot = withChanges(
    after,
    [{ type: 'remediations', forget: [{ node: 'old', at: hourAgo }] }],
    at,
    'gpu',
  );
  assert.deepEqual(forgot.remediations?.gpu, [
    { node: 'a', at: '2026-11-24T11:30:00.000Z' },
    { node: 'b', at },
  ]);
  assert.equal(
    withChanges(after, [{ type: 'remediations', forget: 'all' }], at, 'gpu').remediations,
    undefined,
    "a pool gone: all of its records, and the ledger's list with the last",
  );
  assert.deepEqual(parseLedger(cm(JSON.stringify(after))), after);
  for (const bad of [
    '[]',
    '{"gpu":{}}',
    '{"gpu":[{"node":"a"}]}',
    '{"gpu":[{"node":3,"at":"2026-11-24T12:00:00Z"}]}',
    '{"gpu":[{"node":"a","at":"later"}]}',
  ]) {
    assert.throws(() => parseLedger(cm(`{"slots":{},"remediations":${bad}}`)), /is corrupt/, bad);
  }
});
