import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { UpdatePolicyStatus } from '../../src/api/update-policy.ts';
import { blockedEvent } from '../../src/operator/policy-events.ts';

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

test('a policy tells each change of its block once: blocked, blocked for another reason, open again', () => {
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
      'still firing, the message changed: nothing',
      status('AlertFiring', 'a'),
      status('AlertFiring', 'b'),
      undefined,
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
