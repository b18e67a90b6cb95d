import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Phase } from '../../src/api/phases.ts';
import type { NodeView } from '../../src/operator/decide/node-view.ts';
import { SoakClock } from '../../src/operator/decide/soak-clock.ts';

const T = Date.parse('2026-11-24T12:00:00Z');
const at = (s: number) => new Date(T + s * 1000);
const view = (o: Partial<NodeView>): NodeView =>
  ({
    name: 'a',
    state: Phase.afterReboot,
    ready: true,
    bootId: 'boot-2',
    readySince: at(-60),
    ...o,
  }) as NodeView;

test('a soak counts from the first time this operator saw the node Ready in its boot', () => {
  const clock = new SoakClock();
  assert.deepEqual(
    clock.view(view({}), T.valueOf()).readySince,
    at(0),
    'Ready long before, unseen: from now',
  );
  assert.deepEqual(clock.view(view({}), T + 5000).readySince, at(0), 'and stays at the first sight');
  const flapped = view({ readySince: at(7) });
  assert.deepEqual(
    clock.view(flapped, T + 8000).readySince,
    at(8),
    'a new transition (NotReady and back between two looks) starts over, from when it was seen',
  );
  const ahead = view({ readySince: at(3600) });
  assert.deepEqual(
    clock.view(ahead, T + 9000).readySince,
    at(9),
    "a transition time from a clock an hour ahead of this one's does not hold the soak back",
  );
  assert.deepEqual(
    clock.view(view({ bootId: 'boot-3', readySince: at(3600) }), T + 10_000).readySince,
    at(10),
    'a new boot starts over',
  );
});

test('NotReady, another phase, a prune or a new leadership forget what was seen', () => {
  const clock = new SoakClock();
  clock.view(view({}), T);
  assert.equal(clock.view(view({ ready: false }), T + 1000).ready, false);
  assert.deepEqual(clock.view(view({}), T + 2000).readySince, at(2), 'seen NotReady in between: from now');
  const idle = view({ state: Phase.idle });
  assert.equal(clock.view(idle, T + 3000), idle, 'outside the health gate the view is as read');
  clock.view(view({}), T + 4000);
  clock.prune(new Set());
  assert.deepEqual(clock.view(view({}), T + 5000).readySince, at(5));
  clock.clear();
  assert.deepEqual(clock.view(view({}), T + 6000).readySince, at(6));
});
