import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Annotations } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import type { NodeView } from '../../src/operator/decide/node-view.ts';
import { ObservedClock, type PassClock } from '../../src/operator/decide/observed-clock.ts';

const T = Date.parse('2026-11-24T12:00:00Z');
const at = (s: number) => new Date(T + s * 1000);
/** A pass `s` seconds on, its wall clock `skew` seconds off (stepped) and its monotonic clock true. */
const pass = (s: number, skew = 0): PassClock => ({ now: T + (s + skew) * 1000, mono: 50_000 + s * 1000 });
const view = (o: Partial<NodeView>, written = at(-60).toISOString()): NodeView =>
  ({
    name: 'a',
    state: Phase.afterReboot,
    stateSince: new Date(written),
    annotations: { [Annotations.stateSince]: written },
    ready: true,
    bootId: 'boot-2',
    readySince: at(-60),
    ...o,
  }) as NodeView;

test('a soak counts from the first time this operator saw the node Ready in its boot', () => {
  const clock = new ObservedClock();
  assert.deepEqual(clock.view(view({}), pass(0)).readySince, at(0), 'Ready long before, unseen: from now');
  assert.deepEqual(clock.view(view({}), pass(5)).readySince, at(0), 'and stays at the first sight');
  assert.deepEqual(
    clock.view(view({ readySince: at(7) }), pass(8)).readySince,
    at(8),
    'a new transition (NotReady and back between two looks) starts over, from when it was seen',
  );
  assert.deepEqual(
    clock.view(view({ readySince: at(3600) }), pass(9)).readySince,
    at(9),
    "a transition time from a clock an hour ahead of this one's does not hold the soak back",
  );
  assert.deepEqual(
    clock.view(view({ bootId: 'boot-3', readySince: at(3600) }), pass(10)).readySince,
    at(10),
    'a new boot starts over',
  );
});

test("a phase's wait counts from when this leader first saw the phase, whatever clock wrote its state-since", () => {
  const clock = new ObservedClock();
  const ahead = view({ state: Phase.rebooting }, at(600).toISOString());
  assert.deepEqual(clock.view(ahead, pass(0)).stateSince, at(0), 'written 10 minutes ahead: from now');
  const behind = view({ state: Phase.pending, name: 'b' }, at(-600).toISOString());
  assert.deepEqual(clock.view(behind, pass(0)).stateSince, at(0), 'written 10 minutes behind: from now');
  assert.deepEqual(clock.view(behind, pass(30)).stateSince, at(0), 'seen again: the first sight stays');
  const rewritten = view({ state: Phase.pending, name: 'b' }, at(29).toISOString());
  assert.deepEqual(clock.view(rewritten, pass(31)).stateSince, at(31), 'a phase entered again: afresh');
  const none = view({ state: undefined, stateSince: undefined, annotations: {} });
  assert.equal(clock.view(none, pass(32)).stateSince, undefined, 'no phase written: none');
});

test("a wall clock stepped back or forth moves no wait: the monotonic clock measures, the pass's wall clock names", () => {
  const clock = new ObservedClock();
  const n = view({ state: Phase.rebooting });
  const first = clock.view(n, pass(0)).stateSince?.getTime() ?? 0;
  for (const skew of [-600, 600]) {
    const p = pass(45, skew);
    const since = clock.view(n, p).stateSince?.getTime() ?? 0;
    assert.equal(p.now - since, 45_000, `stepped ${skew}s: 45 s waited, as the monotonic clock says`);
  }
  assert.equal(first, T);
});

test('a key not looked at in a sweep, or a new leadership, forgets what was seen', () => {
  const clock = new ObservedClock();
  clock.view(view({}), pass(0));
  clock.sweep();
  assert.equal(clock.view(view({ ready: false }), pass(1)).ready, false);
  clock.sweep();
  assert.deepEqual(clock.view(view({}), pass(2)).readySince, at(2), 'seen NotReady in between: from now');
  const idle = view({ state: Phase.idle });
  assert.equal(clock.view(idle, pass(3)).readySince, idle.readySince, 'outside the health gate: as read');
  assert.equal(clock.since('grant/p', 'L', pass(4)), at(4).getTime());
  assert.equal(clock.since('grant/p', 'L', pass(9)), at(4).getTime());
  clock.sweep();
  clock.sweep();
  assert.equal(clock.since('grant/p', 'L', pass(10)), at(10).getTime(), 'swept once unlooked at: afresh');
  clock.clear();
  assert.equal(clock.since('grant/p', 'L', pass(11)), at(11).getTime(), 'a new leadership: afresh');
});
