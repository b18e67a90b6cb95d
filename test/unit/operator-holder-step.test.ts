import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Phase } from '../../src/api/phases.ts';
import { holderStep } from '../../src/operator/decider.ts';
import { ago, needs, node, run, state } from './operator-fixtures.ts';

const step = (annotations: Record<string, string>, since: number, cfg = {}) => {
  const d = run([node('n', { annotations })], {
    ledger: { slots: { n: { since: ago(since), attempt: 2 } } },
    cfg,
  });
  return { actions: d.actions, step: holderStep(d.actions, 'n') };
};

test('holderStep: the step of a slot holder decided on its own, none when the decision frees its slot', () => {
  const redo = step({ ...needs, ...state(Phase.pending, 30) }, 5);
  assert.equal(redo.step?.type === 'transition' && redo.step.to, Phase.beforeReboot, 'admission redone');

  // Campaign seed 74: admitted, its node write refused (an admin cordoned it meanwhile), its need gone
  // when re-decided. The decision frees the slot and writes the node Idle; the Idle alone, with the slot
  // still in the ledger, read as an attempt completed and grew the rollout's wave.
  const gone = step(state(Phase.pending, 30), 5);
  assert.ok(
    gone.actions.some((a) => a.type === 'release' && a.node === 'n'),
    'the decision frees the slot',
  );
  assert.ok(
    gone.actions.some((a) => a.type === 'transition' && a.node === 'n' && a.to === Phase.idle),
    'and writes the node Idle after it',
  );
  assert.equal(gone.step, undefined, 'so the step writes nothing: the next pass does both, in order');

  const hold = { reason: 'waiting: health check ceph fails' };
  const withdrawn = step({ ...needs, ...state(Phase.pending, 30) }, 5, { hold });
  assert.ok(
    withdrawn.actions.some((a) => a.type === 'release' && a.node === 'n'),
    'withdrawn under a hold',
  );
  assert.equal(withdrawn.step, undefined);
});
