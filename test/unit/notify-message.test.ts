import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type NotifyEvent, payload } from '../../src/notify/message.ts';
import { retryDelayMs } from '../../src/notify/notifier.ts';

const at = new Date('2026-11-25T09:30:00Z');

test('a notification as JSON names its kind, policy, node and time; as Slack, one line of text', () => {
  const table: [string, 'JSON' | 'Slack', NotifyEvent, Record<string, unknown>][] = [
    [
      'a node admitted, JSON',
      'JSON',
      { kind: 'Admitted', policy: 'workers', node: 'n1', message: 'reboot needed', at },
      {
        source: 'nuo',
        kind: 'Admitted',
        policy: 'workers',
        node: 'n1',
        message: 'reboot needed',
        time: '2026-11-25T09:30:00.000Z',
      },
    ],
    [
      'the pool finished, JSON: no node',
      'JSON',
      { kind: 'Finished', policy: 'workers', message: 'no node waits', at },
      {
        source: 'nuo',
        kind: 'Finished',
        policy: 'workers',
        message: 'no node waits',
        time: '2026-11-25T09:30:00.000Z',
      },
    ],
    [
      'the rollout halted, Slack: no node',
      'Slack',
      { kind: 'Halted', policy: 'workers', message: 'halted: 3 failed attempt(s)', at },
      { text: 'nuo: UpdatePolicy workers rollout halted: halted: 3 failed attempt(s)' },
    ],
    [
      'a node failed, Slack',
      'Slack',
      { kind: 'Failed', policy: 'gpu', node: 'g2', message: 'not Ready within 10m', at },
      { text: 'nuo: node g2 (UpdatePolicy gpu) failed: not Ready within 10m' },
    ],
    [
      "a Plan's attempt admitted, JSON: the Plan named",
      'JSON',
      { kind: 'Admitted', policy: 'workers', node: 'n1', plan: 'ops/k3s', message: 'Plan needed', at },
      {
        source: 'nuo',
        kind: 'Admitted',
        policy: 'workers',
        node: 'n1',
        plan: 'ops/k3s',
        message: 'Plan needed',
        time: '2026-11-25T09:30:00.000Z',
      },
    ],
    [
      "a Plan's attempt admitted, Slack: applying, not rebooting",
      'Slack',
      { kind: 'Admitted', policy: 'workers', node: 'n1', plan: 'ops/k3s', message: 'Plan needed', at },
      { text: 'nuo: node n1 (UpdatePolicy workers) admitted to apply Plan ops/k3s: Plan needed' },
    ],
    [
      "a Plan's attempt completed, Slack",
      'Slack',
      { kind: 'Completed', policy: 'workers', node: 'n1', plan: 'ops/k3s', message: 'healthy', at },
      { text: 'nuo: node n1 (UpdatePolicy workers) applied Plan ops/k3s and healthy: healthy' },
    ],
    [
      "a Plan's attempt failed, Slack",
      'Slack',
      { kind: 'Failed', policy: 'workers', node: 'n1', plan: 'ops/k3s', message: 'Job failed', at },
      { text: 'nuo: node n1 (UpdatePolicy workers) failed to apply Plan ops/k3s: Job failed' },
    ],
    [
      'a reboot completed, Slack',
      'Slack',
      { kind: 'Completed', policy: 'workers', node: 'n1', message: 'healthy', at },
      { text: 'nuo: node n1 (UpdatePolicy workers) rebooted and healthy: healthy' },
    ],
    [
      'the pool blocked, Slack',
      'Slack',
      { kind: 'Blocked', policy: 'gpu', message: 'alert NodeDown firing', at },
      { text: 'nuo: UpdatePolicy gpu blocked: alert NodeDown firing' },
    ],
  ];
  for (const [name, format, event, want] of table) assert.deepEqual(payload(format, event), want, name);
});

test('a notification is retried after 1 s, doubling, never more than 30 s apart', () => {
  assert.deepEqual(
    [0, 1, 2, 3, 4, 5, 6].map((a) => retryDelayMs(a)),
    [1000, 2000, 4000, 8000, 16_000, 30_000, 30_000],
  );
  assert.equal(retryDelayMs(2, 50), 200, 'a shorter base, as tests use');
});
