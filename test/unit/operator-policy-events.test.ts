import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { UpdatePolicyStatus } from '../../src/api/update-policy.ts';
import {
  blockedEvent,
  blockedSince,
  rolloutFinished,
  rolloutHalted,
} from '../../src/operator/policies/policy-events.ts';

const status = (reason?: string, message = 'why'): UpdatePolicyStatus => ({
  conditions: [
    {
      type: 'Blocked',
      status: reason ? 'True' : 'False',
      reason: reason ?? 'NotBlocked',
      message,
      lastTransitionTime: '2026-11-25T09:00:00Z',
    },
  ],
});

test('a policy tells each change of its block once: blocked, blocked for another reason or cause, open again', () => {
  const table: [
    string,
    UpdatePolicyStatus | undefined,
    UpdatePolicyStatus,
    ReturnType<typeof blockedEvent>,
  ][] = [
    ['first status, open', undefined, status(), undefined],
    [
      'first status, outside its window: planned, Normal',
      undefined,
      status('OutsideWindow', 'w'),
      { type: 'Normal', reason: 'OutsideWindow', message: 'w' },
    ],
    [
      'an alert fires: Warning',
      status(),
      status('AlertFiring', 'a'),
      { type: 'Warning', reason: 'AlertFiring', message: 'a' },
    ],
    [
      'another alert fires: another cause, told',
      status('AlertFiring', 'alert NodeDown firing'),
      status('AlertFiring', 'alert DiskFull firing'),
      { type: 'Warning', reason: 'AlertFiring', message: 'alert DiskFull firing' },
    ],
    [
      'the same wave pause, its start computed again (a new leader): nothing',
      status('WavePause', 'waiting: wave 2 starts at 2026-11-25T09:00:03.000Z (rollout.waves.pauseBetween)'),
      status('WavePause', 'waiting: wave 2 starts at 2026-11-25T09:00:07.250Z (rollout.waves.pauseBetween)'),
      undefined,
    ],
    [
      'the next wave paused straight after the last one: told',
      status('WavePause', 'waiting: wave 2 starts at 2026-11-25T09:00:03.000Z (rollout.waves.pauseBetween)'),
      status('WavePause', 'waiting: wave 3 starts at 2026-11-25T09:05:00.000Z (rollout.waves.pauseBetween)'),
      {
        type: 'Normal',
        reason: 'WavePause',
        message: 'waiting: wave 3 starts at 2026-11-25T09:05:00.000Z (rollout.waves.pauseBetween)',
      },
    ],
    [
      'the circuit still open, one node more NotReady: told',
      status('CircuitOpen', 'waiting: circuit open: 3 of 10 nodes NotReady (more than 2)'),
      status('CircuitOpen', 'waiting: circuit open: 4 of 10 nodes NotReady (more than 2)'),
      {
        type: 'Warning',
        reason: 'CircuitOpen',
        message: 'waiting: circuit open: 4 of 10 nodes NotReady (more than 2)',
      },
    ],
    [
      "the foreign operator's sighting changes (not looked yet, then its Lease found): told",
      status('ForeignOperator', "waiting: not looked yet whether FLUO's update-operator runs"),
      status('ForeignOperator', "not managed: FLUO's update-operator runs: its Lease r/l is held by x"),
      {
        type: 'Warning',
        reason: 'ForeignOperator',
        message: "not managed: FLUO's update-operator runs: its Lease r/l is held by x",
      },
    ],
    [
      'another reason',
      status('AlertFiring'),
      status('PrometheusUnavailable', 'p'),
      { type: 'Warning', reason: 'PrometheusUnavailable', message: 'p' },
    ],
    [
      'open again',
      status('PodBlocker'),
      status(),
      { type: 'Normal', reason: 'Unblocked', message: 'new attempts may start' },
    ],
    ['still open', status(), status(), undefined],
    [
      'paused by a person: Normal',
      status(),
      status('Paused', 'x'),
      { type: 'Normal', reason: 'Paused', message: 'x' },
    ],
  ];
  for (const [name, previous, next, want] of table)
    assert.deepEqual(blockedEvent(previous, next), want, name);
});

test('a rollout finishes when its pool goes from Updating to UpToDate; a block is dated by its transition', () => {
  const progress = (reason: string): UpdatePolicyStatus => ({
    conditions: [
      {
        type: 'Progressing',
        status: reason === 'Updating' ? 'True' : 'False',
        reason,
        message: 'm',
        lastTransitionTime: '2026-11-25T09:00:00Z',
      },
    ],
  });
  assert.equal(rolloutFinished(progress('Updating'), progress('UpToDate')), true);
  assert.equal(rolloutFinished(progress('UpToDate'), progress('UpToDate')), false, 'already finished');
  assert.equal(rolloutFinished(undefined, progress('UpToDate')), false, 'a first status finishes nothing');
  assert.equal(rolloutFinished(progress('UpToDate'), progress('Updating')), false);
  assert.deepEqual(blockedSince(status('AlertFiring', 'a')), {
    since: new Date('2026-11-25T09:00:00Z'),
    message: 'a',
  });
  assert.equal(blockedSince(status()), undefined);
});

test('a rollout halts when its Halted condition turns True: told once, with its message', () => {
  const halted = (status: 'True' | 'False'): UpdatePolicyStatus => ({
    conditions: [
      {
        type: 'Halted',
        status,
        reason: status === 'True' ? 'FailureBudgetSpent' : 'NotHalted',
        message: status === 'True' ? 'halted: 2 failed attempt(s)' : '0 of 2',
        lastTransitionTime: '2026-11-25T09:00:00Z',
      },
    ],
  });
  assert.equal(rolloutHalted(halted('False'), halted('True')), 'halted: 2 failed attempt(s)');
  assert.equal(rolloutHalted(undefined, halted('True')), 'halted: 2 failed attempt(s)', 'a first status');
  assert.equal(rolloutHalted(halted('True'), halted('True')), undefined, 'already told');
  assert.equal(rolloutHalted(halted('True'), halted('False')), undefined, 'resumed');
  assert.deepEqual(blockedEvent(status(), status('WavePause', 'w')), {
    type: 'Normal',
    reason: 'WavePause',
    message: 'w',
  });
  assert.equal(blockedEvent(status(), status('Halted', 'h'))?.type, 'Warning');
});
