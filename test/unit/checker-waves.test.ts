import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Annotations } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import {
  attemptEnd,
  completedAttempt,
  garbledInAttempt,
  rolloutOver,
  WaveTally,
  waveLimit,
  waveLimitUnsure,
} from '../../src/sim/checker-waves.ts';
import { node } from './operator-fixtures.ts';

test("the checker's wave limit: the current wave's size less its completed attempts", () => {
  // Waves 1, 2, 4, 8: completions 0 | 1 2 | 3 4 5 6 | 7 ...
  const table: [number, number][] = [
    [0, 1],
    [1, 2],
    [2, 1],
    [3, 4],
    [5, 2],
    [6, 1],
    [7, 8],
  ];
  for (const [completed, limit] of table)
    assert.equal(waveLimit({ initial: 1, growth: 2 }, completed), limit, `${completed}`);
  assert.equal(waveLimit({ initial: 3, growth: 1 }, 4), 2);
});

test('a completion is an attempt phase left for Idle; a rollout is over when no node waits or needs a reboot', () => {
  const at = (phase?: string, extra: Record<string, string> = {}) =>
    node('a', { annotations: { ...(phase ? { [Annotations.state]: phase } : {}), ...extra } });
  assert.equal(completedAttempt(at(Phase.idle), at(Phase.afterReboot)), true);
  assert.equal(completedAttempt(at(Phase.pending), at(Phase.draining)), false, 'aborted');
  assert.equal(completedAttempt(at(Phase.idle), at(Phase.pending)), false, 'never admitted');
  assert.equal(completedAttempt(at(Phase.idle), undefined), false);
  assert.equal(rolloutOver([at(Phase.idle), at()]), true);
  assert.equal(rolloutOver([at(Phase.idle), at(Phase.pending)]), false);
  assert.equal(rolloutOver([at(undefined, { [Annotations.rebootNeeded]: 'true' })]), false);
  assert.equal(rolloutOver([at(Phase.rebooting)]), false);
});

test("an attempt that ended Idle after its node was Failed may or may not be the operator's completion: the wave allows the most either way", () => {
  // Waves 1, 2, 4. Gates campaign seed 32: the late node's attempt (Failed, forgiven by a resume, then
  // back and Idle) is no completion to the operator, so wave 2 allows 2; counted, it would allow 1.
  const w = { initial: 1, growth: 2 };
  const table: [number, number, number][] = [
    [0, 0, 1],
    [0, 1, 2],
    [1, 1, 2],
    [2, 0, 1],
    [1, 2, 4],
  ];
  for (const [completed, unsure, limit] of table)
    assert.equal(waveLimitUnsure(w, completed, unsure), limit, `${completed} completed, ${unsure} unsure`);
});

test('attemptEnd: completed, unsure after Failed or a phase overwritten with no phase, else nothing', () => {
  // Gates campaign seed 5: node-3, rebooted in wave 2, had its phase overwritten ("Garbage"); the
  // operator restored it, ended the attempt Idle (nothing left) and counted it completed, so wave 3
  // admitted 2 nodes where a checker that did not count it allowed 1.
  const at = (phase?: string) => node('a', { annotations: phase ? { [Annotations.state]: phase } : {} });
  const plain = { failed: false, garbled: false };
  const cases: [
    string | undefined,
    string | undefined,
    { failed: boolean; garbled: boolean },
    string | undefined,
  ][] = [
    [Phase.idle, Phase.afterReboot, plain, 'completed'],
    [Phase.idle, Phase.failed, { failed: true, garbled: false }, 'unsure'],
    [Phase.idle, Phase.afterReboot, { failed: true, garbled: false }, 'unsure'],
    [Phase.idle, 'Garbage', { failed: false, garbled: true }, 'unsure'],
    [undefined, 'Garbage', { failed: false, garbled: true }, 'unsure'],
    [Phase.pending, 'Garbage', { failed: false, garbled: true }, undefined],
    [Phase.idle, 'Garbage', plain, undefined],
    [Phase.pending, Phase.draining, plain, undefined],
    [Phase.rebooting, 'Garbage', { failed: false, garbled: true }, undefined],
  ];
  for (const [now, before, was, want] of cases)
    assert.equal(attemptEnd(at(now), at(before), was), want, `${before} → ${now} ${JSON.stringify(was)}`);
  assert.equal(garbledInAttempt(at('Garbage'), at(Phase.afterReboot)), true);
  assert.equal(garbledInAttempt(at('Garbage'), at(Phase.idle)), false, 'not in an attempt');
  assert.equal(garbledInAttempt(at(Phase.idle), at(Phase.afterReboot)), false, 'a phase');
  assert.equal(garbledInAttempt(at(undefined), at(Phase.afterReboot)), false, 'removed: Idle');
});

test('WaveTally: completions, unsure ends, a completed node deleted (still one completed), a rollout over', () => {
  // Waves 2, 4. Gates campaign seed 13: node-0 completed in wave 1 and was deleted and registered again
  // before a pass saw it Idle with its slot. The operator records each end in the ledger before the node
  // write, so it counts that completion whatever becomes of the node: so does the checker, no wider.
  const w = { initial: 2, growth: 2 };
  const at = (name: string, phase?: string) =>
    node(name, { annotations: phase ? { [Annotations.state]: phase } : {} });
  const pool = (over = false) => [{ name: 'pool', over, nodes: ['n0', 'n1', 'n2'] }];
  const tally = new WaveTally();
  assert.equal(tally.limit('pool', w), 2);
  tally.updated({ node: at('n0', Phase.idle), old: at('n0', Phase.afterReboot), budgets: pool() });
  assert.equal(tally.limit('pool', w), 1, 'one of wave 1 completed');
  tally.deleted('n1', ['pool'], false);
  assert.equal(
    tally.limit('pool', w),
    1,
    'a node that completed nothing, deleted outside an attempt: no change',
  );
  tally.deleted('n0', ['pool'], false);
  assert.equal(tally.limit('pool', w), 1, 'its completion still counted: one left in wave 1');
  tally.deleted('n0', ['pool'], false);
  assert.equal(tally.limit('pool', w), 1, 'once');

  tally.updated({ node: at('n1', Phase.failed), old: at('n1', Phase.rebooting), budgets: pool() });
  tally.updated({ node: at('n1', Phase.idle), old: at('n1', Phase.failed), budgets: pool() });
  tally.updated({ node: at('n2', 'Garbage'), old: at('n2', Phase.afterReboot), budgets: pool() });
  tally.updated({ node: at('n2', Phase.idle), old: at('n2', 'Garbage'), budgets: pool() });
  assert.equal(tally.limit('pool', w), 4, '0 to 3 completed: wave 1 or 2, the most is 4');

  tally.updated({ node: at('n0', Phase.draining), old: at('n0'), budgets: pool() });
  tally.updated({ node: at('n0', Phase.idle), old: at('n0', Phase.afterReboot), budgets: pool() });
  tally.updated({ node: at('n0', Phase.draining), old: at('n0', Phase.idle), budgets: pool() });
  tally.deleted('n0', ['pool'], true);
  assert.equal(tally.limit('pool', w), 4, 'in a new attempt when deleted: its completion stays counted');

  tally.updated({ node: at('n1'), old: at('n1', Phase.idle), budgets: pool(true) });
  assert.equal(tally.limit('pool', w), 2, 'a rollout over starts again at wave 1');
  tally.deleted('n0', ['pool'], false);
  assert.equal(tally.limit('pool', w), 2);
});

test('WaveTally: an attempt whose node is deleted in it may end either way for the operator', () => {
  // Waves 2, 4. Gates campaign seed 12: node-0, deleted in AfterReboot, registered again with no phase;
  // a third client wrote `Garbage` on the new node, the operator restored it, ended the attempt Idle in
  // its slot and counted it: wave 2 (of 4) admitted 2 while the checker, which had counted only node-1,
  // allowed 1.
  const w = { initial: 2, growth: 2 };
  const at = (name: string, phase?: string) =>
    node(name, { annotations: phase ? { [Annotations.state]: phase } : {} });
  const pool = [{ name: 'pool', over: false, nodes: ['n0', 'n1', 'n2', 'n3'] }];
  const tally = new WaveTally();
  tally.updated({ node: at('n1', Phase.idle), old: at('n1', Phase.afterReboot), budgets: pool });
  assert.equal(tally.limit('pool', w), 1);
  tally.deleted('n0', ['pool'], true);
  assert.equal(tally.limit('pool', w), 4, 'counted or not: wave 1 with 1 left, or wave 2 of 4');
  tally.updated({ node: at('n0'), old: undefined, budgets: pool });
  tally.updated({ node: at('n0', 'Garbage'), old: at('n0'), budgets: pool });
  tally.updated({ node: at('n0', Phase.idle), old: at('n0', 'Garbage'), budgets: pool });
  assert.equal(tally.limit('pool', w), 4, 'the new node ending Idle is no second completion');

  const garbled = new WaveTally();
  garbled.updated({ node: at('n1', Phase.idle), old: at('n1', Phase.afterReboot), budgets: pool });
  garbled.updated({ node: at('n2', 'Garbage'), old: at('n2', Phase.draining), budgets: pool });
  garbled.deleted('n2', ['pool'], false);
  assert.equal(garbled.limit('pool', w), 4, 'a phase garbled in its attempt: deleted in it all the same');
});
