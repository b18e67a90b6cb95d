import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Phase } from '../../src/api/phases.ts';
import { parseMaxUnavailable } from '../../src/operator/decide/budget.ts';
import { viewNode } from '../../src/operator/decide/node-view.ts';
import type { Slot } from '../../src/operator/decide/slot.ts';
import {
  nextRollout,
  type RolloutRecord,
  type RolloutSettings,
  rolloutHold,
  type SlotCap,
  waveCap,
  waveSize,
} from '../../src/operator/decide/waves.ts';
import { ago, NOW, needs, node, ofType, run, state } from './operator-fixtures.ts';

const waves = (initial: number, growth: number, pauseBetweenMs = 0): RolloutSettings => ({
  waves: { initial, growth, pauseBetweenMs },
});

test('waveSize: initial × growth^(wave−1), bounded; no waves: unbounded', () => {
  const table: [RolloutSettings, number, number][] = [
    [waves(1, 2), 1, 1],
    [waves(1, 2), 2, 2],
    [waves(1, 2), 4, 8],
    [waves(3, 1), 5, 3],
    [waves(2, 10), 3, 200],
    [waves(1, 100), 50, 1_000_000],
    [{ maxFailedAttempts: 2 }, 1, 1_000_000],
  ];
  for (const [s, wave, size] of table)
    assert.equal(waveSize(s, wave), size, `wave ${wave} of ${JSON.stringify(s)}`);
});

const record = (o: Partial<RolloutRecord> = {}): RolloutRecord => ({
  since: ago(600),
  wave: 1,
  waveSince: ago(600),
  completed: 0,
  counted: [],
  failed: {},
  ...o,
});

test('waveCap: the wave size less the attempts completed in it', () => {
  const table: [RolloutRecord | undefined, RolloutSettings, number | undefined][] = [
    [undefined, waves(1, 2), undefined],
    [record(), { maxFailedAttempts: 1 }, undefined],
    [record(), waves(1, 2), 1],
    [record({ wave: 2 }), waves(1, 2), 2],
    [record({ wave: 2, completed: 1 }), waves(1, 2), 1],
    [record({ wave: 3, completed: 2 }), waves(1, 2), 2],
  ];
  for (const [r, s, slots] of table) assert.equal(waveCap(r, s)?.slots, slots, JSON.stringify(r));
  assert.equal(waveCap(record({ wave: 2 }), waves(1, 2))?.name, 'wave 2 of 2 node(s)');
});

test('rolloutHold: halted at the failure budget, before a later wave its pause, else none', () => {
  const t = NOW.getTime();
  const two = { a: ago(10), b: ago(5) };
  const table: [string, RolloutRecord | undefined, RolloutSettings, string | undefined][] = [
    ['no rollout', undefined, { maxFailedAttempts: 1 }, undefined],
    ['under the budget', record({ failed: { a: ago(1) } }), { maxFailedAttempts: 2 }, undefined],
    ['at the budget', record({ failed: two }), { maxFailedAttempts: 2 }, 'Halted'],
    ['no budget', record({ failed: two }), waves(1, 2), undefined],
    ['first wave: no pause', record(), waves(1, 2, 60_000), undefined],
    ['wave 2 within its pause', record({ wave: 2, waveSince: ago(30) }), waves(1, 2, 60_000), 'WavePause'],
    ['wave 2 after its pause', record({ wave: 2, waveSince: ago(90) }), waves(1, 2, 60_000), undefined],
    [
      'halted wins over a pause',
      record({ wave: 2, waveSince: ago(1), failed: two }),
      { ...waves(1, 2, 60_000), maxFailedAttempts: 1 },
      'Halted',
    ],
  ];
  for (const [what, r, s, code] of table) assert.equal(rolloutHold(r, s, 'p', t)?.code, code, what);
  const pause = rolloutHold(record({ wave: 2, waveSince: ago(30) }), waves(1, 2, 60_000), 'p', t);
  assert.equal(pause?.until, t + 30_000);
  const halted = rolloutHold(record({ failed: two }), { maxFailedAttempts: 2 }, 'workers', t);
  assert.match(halted?.reason ?? '', /nuo policy resume workers/);
});

const slot = (since: string, attempt?: number, ended?: Slot['ended']): Slot => ({
  since,
  pool: 'p',
  ...(attempt === undefined ? {} : { attempt }),
  ...(ended ? { ended } : {}),
});
const view = (name: string, annotations: Record<string, string>) => viewNode(node(name, { annotations }));

test('nextRollout: starts with the first need, counts each ended attempt once, ends when nothing is left', () => {
  const s = waves(1, 2);
  const idle = view('a', {});
  assert.equal(
    nextRollout({ previous: undefined, settings: s, nodes: [idle], slots: {}, now: NOW }),
    undefined,
  );
  const started = nextRollout({
    previous: undefined,
    settings: s,
    nodes: [view('a', needs)],
    slots: {},
    now: NOW,
  });
  assert.deepEqual(started, {
    since: NOW.toISOString(),
    wave: 1,
    waveSince: NOW.toISOString(),
    completed: 0,
    counted: [],
    failed: {},
  });
  // a's attempt 1 is in progress: nothing counted.
  const inProgress = view('a', { ...needs, ...state(Phase.draining, 50), 'nuo.dev/attempt': '1' });
  const held = { a: slot(ago(100), 1) };
  const r1 = record({ since: ago(200), waveSince: ago(200) });
  assert.deepEqual(
    nextRollout({ previous: r1, settings: s, nodes: [inProgress], slots: held, now: NOW }),
    r1,
  );
  // Its end decided and recorded, its node still in the attempt (the write to come): not yet counted.
  const ending = { a: slot(ago(100), 1, 'completed') };
  assert.deepEqual(
    nextRollout({ previous: r1, settings: s, nodes: [inProgress], slots: ending, now: NOW }),
    r1,
  );
  // Out of it, while b still needs a reboot: wave 1 is done, wave 2 begins.
  const b = view('b', needs);
  const done = view('a', { ...state(Phase.idle, 10), 'nuo.dev/attempt': '1' });
  const r2 = nextRollout({ previous: r1, settings: s, nodes: [done, b], slots: ending, now: NOW });
  const a = 'a@1';
  assert.deepEqual(r2, { ...r1, wave: 2, waveSince: NOW.toISOString(), completed: 0, counted: [a] });
  // Seen again (its slot not yet freed), counted once: a wave-2 record does not count it again.
  assert.deepEqual(nextRollout({ previous: r2, settings: s, nodes: [done, b], slots: ending, now: NOW }), r2);
  // Its slot freed, it is forgotten (the list stays short) and wave 2 still counts none.
  const freed = nextRollout({ previous: r2, settings: s, nodes: [done, b], slots: {}, now: NOW });
  assert.deepEqual(freed, { ...r2, counted: [] });
  // Nothing needs work and no slot is held: the rollout has ended.
  assert.equal(nextRollout({ previous: r1, settings: s, nodes: [done], slots: {}, now: NOW }), undefined);
  // Idle, naming its attempt, but no end recorded (an older operator's write): not counted here.
  assert.deepEqual(nextRollout({ previous: r1, settings: s, nodes: [done, b], slots: held, now: NOW }), r1);
  // The node deleted and registered again after its end was recorded (no annotations, needing again), or
  // gone for good: counted all the same, from the ledger.
  for (const nodes of [[view('a', needs), b], [b]]) {
    const counted = nextRollout({ previous: r1, settings: s, nodes, slots: ending, now: NOW });
    assert.deepEqual(counted?.counted, [a], `${nodes.length} node(s) left`);
    assert.equal(counted?.wave, 2);
  }
});

test('nextRollout: an aborted or Failed attempt is a failure, once; nothing else is one', () => {
  const s = { maxFailedAttempts: 3 };
  const aborted = view('a', { ...needs, ...state(Phase.pending, 10), 'nuo.dev/failures': '1' });
  const failed = view('b', { ...needs, ...state(Phase.failed, 10) });
  const slots = { a: slot(ago(100), 1, 'failed'), b: slot(ago(90), 2) };
  const r = nextRollout({ previous: record(), settings: s, nodes: [aborted, failed], slots, now: NOW });
  assert.deepEqual(r?.failed, { 'a@1': NOW.toISOString(), 'b@2': NOW.toISOString() });
  // Seen later, still the same two, each at the time it was first seen.
  const later = new Date(NOW.getTime() + 5000);
  const r2 = nextRollout({ previous: r, settings: s, nodes: [aborted, failed], slots, now: later });
  assert.deepEqual(r2?.failed, r?.failed);
  // Pending after an earlier failure, admitted again and not started, or its drain held by a pod (an end,
  // not a failure): none spends the failure budget, whatever its count of failures in a row says.
  for (const [what, slotOf] of [
    ['admitted again, its write to come', slot(ago(100), 3)],
    ['its drain held by a pod', slot(ago(100), 3, 'ended')],
  ] as const) {
    const r3 = nextRollout({
      previous: record(),
      settings: s,
      nodes: [aborted],
      slots: { a: slotOf },
      now: NOW,
    });
    assert.deepEqual(r3?.failed, {}, what);
  }
});

test("nextRollout: a resume forgives the failures recorded before nuo read it, whatever the clocks say, and a Failed node still in its slot is not counted again; a failure after it counts, even when nuo's clock is behind the person's", () => {
  const s = { maxFailedAttempts: 1 };
  const failed = view('b', { ...needs, ...state(Phase.failed, 10) });
  const slots = { b: slot(ago(90)) };
  const id = `b@${ago(90)}`;
  const ahead = new Date(NOW.getTime() + 455_000).toISOString();
  const resumedAt = new Date(NOW.getTime() - 1000);
  const look = (
    previous: RolloutRecord,
    o: { nodes?: ReturnType<typeof view>[]; slots?: Record<string, Slot> } = {},
  ) =>
    nextRollout({
      previous,
      settings: s,
      nodes: o.nodes ?? [failed],
      slots: o.slots ?? slots,
      now: NOW,
      resumedAt,
    });
  // Seen failing by an operator whose clock is 455 s ahead of the person who resumed.
  const forgiven = look(record({ failed: { [id]: ahead } }));
  assert.deepEqual(forgiven?.failed, {}, 'the resume is honoured');
  assert.equal(forgiven?.resumed, resumedAt.toISOString());
  // The next look: the node still Failed in its slot, the same resume.
  const next = forgiven && look(forgiven);
  assert.deepEqual(next?.failed, {}, 'not counted again');
  assert.equal(next && rolloutHold(next, s, 'p', NOW.getTime()), undefined, 'not halted again');
  // A failure seen after the resume was honoured counts, though nuo's clock (NOW) is behind the resume.
  const behind = view('c', { ...needs, ...state(Phase.failed, 10) });
  const again = look(record({ resumed: new Date(NOW.getTime() + 600_000).toISOString() }), {
    nodes: [behind],
    slots: { c: slot(ago(80)) },
  });
  assert.deepEqual(Object.keys(again?.failed ?? {}), [`c@${ago(80)}`]);
  assert.equal(again && rolloutHold(again, s, 'p', NOW.getTime())?.code, 'Halted');
  // A rollout that starts after a resume has nothing of it to forgive.
  const fresh = nextRollout({
    previous: undefined,
    settings: s,
    nodes: [failed],
    slots,
    now: NOW,
    resumedAt,
  });
  assert.deepEqual(Object.keys(fresh?.failed ?? {}), [id]);
});

test('decide: the tightest cap counts, and a node it keeps waiting names it', () => {
  const nodes = ['a', 'b', 'c'].map((n) => node(n, { annotations: needs }));
  const maxThree = { maxUnavailable: parseMaxUnavailable('3') };
  const table: [string, SlotCap[], string[], string][] = [
    ['no cap', [], ['a', 'b', 'c'], ''],
    [
      'a wave of 1',
      [{ slots: 1, name: 'wave 1 of 1 node(s)' }],
      ['a'],
      'waiting for a free slot (wave 1 of 1 node(s))',
    ],
    ['a looser wave', [{ slots: 4, name: 'wave 3 of 4 node(s)' }], ['a', 'b', 'c'], ''],
    [
      'a wave done but for one',
      [{ slots: 2, name: 'wave 2 of 2 node(s)' }],
      ['a', 'b'],
      'waiting for a free slot (wave 2 of 2 node(s))',
    ],
  ];
  for (const [what, slotCaps, admitted, reason] of table) {
    const d = run(nodes, { cfg: { ...maxThree, slotCaps } });
    assert.deepEqual(ofType(d.actions, 'admit'), admitted, what);
    const waiting = d.actions.find((a) => a.type === 'pending');
    assert.equal(waiting?.type === 'pending' ? waiting.reason : '', reason, what);
    assert.equal(d.budget.slots, Math.min(3, ...slotCaps.map((c) => c.slots)), what);
  }
  const budgetTighter = run(nodes, { cfg: { slotCaps: [{ slots: 2, name: 'wave 2 of 2 node(s)' }] } });
  const waits = budgetTighter.actions.find((a) => a.type === 'pending');
  assert.equal(waits?.type === 'pending' && waits.reason, 'waiting for a free slot (maxUnavailable 1)');
});
