/** The `--all` run's tally of the holds the operator showed: what each condition and node reason counts as. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Phase } from '../../src/api/phases.ts';
import { HOLDS, type Hold, HoldCounter, nodeHoldOf, poolHoldOf } from '../../src/sim/chaos-all-tally.ts';

test("a pool's Blocked reason names the hold it counts as; a hold the campaign does not count, none", () => {
  const table: [string | undefined, Hold | undefined][] = [
    ['HealthCheck', 'healthCheck'],
    ['PodBlocker', 'podBlockerPool'],
    ['CircuitOpen', 'circuitOpen'],
    ['Halted', 'halted'],
    ['WavePause', undefined],
    ['InvalidSpec', undefined],
    ['NotBlocked', undefined],
    [undefined, undefined],
  ];
  for (const [reason, hold] of table) assert.equal(poolHoldOf(reason), hold, `reason ${reason}`);
});

test("a node's state and state-reason, as the operator writes them, name the hold it counts as", () => {
  const table: [string | undefined, string | undefined, Hold | undefined][] = [
    [Phase.upgrading, 'running the Plan chaos-plans/os', 'planAttempts'],
    [Phase.pending, 'waiting: pod chaos/dnd-1 has nuo.dev/do-not-disrupt="true"', 'doNotDisrupt'],
    [
      Phase.draining,
      'pod chaos/dnd-1 has nuo.dev/do-not-disrupt="4h" until 2026-12-07T16:00:00.000Z',
      'doNotDisrupt',
    ],
    [Phase.pending, 'waiting: its pods are being checked for nuo.dev/do-not-disrupt', undefined],
    [Phase.pending, 'waiting for a free slot (budget disruptive: 1 for Remediation)', 'reasonBudget'],
    [Phase.pending, 'waiting for a free slot (maxUnavailable 2)', undefined],
    [Phase.pending, 'waiting for a free slot in zone a (1 of 1 disrupted)', undefined],
    [Phase.pending, 'waiting: pod chaos/blocker-node-1 is running on it', 'podBlockerNode'],
    [Phase.pending, 'waiting: pod chaos/blocker-pool-1 is running', undefined],
    [Phase.pending, 'waiting: cluster-autoscaler is removing the node', 'autoscaler'],
    [Phase.idle, undefined, undefined],
    [undefined, undefined, undefined],
  ];
  for (const [state, reason, hold] of table)
    assert.equal(nodeHoldOf(state, reason), hold, `${state}: ${reason}`);
});

test('each hold is counted as it begins for its key: seen again, or another key holding the same, counts anew only after it ended', () => {
  const c = new HoldCounter();
  const seq: [string, Hold | undefined][] = [
    ['node/a', 'autoscaler'],
    ['node/a', 'autoscaler'], // the same hold, seen on the next write
    ['node/b', 'autoscaler'], // another node: a hold of its own
    ['node/a', undefined], // ended
    ['node/a', 'autoscaler'], // begins again
    ['node/a', 'doNotDisrupt'], // one hold gives way to another
    ['policy/p', 'healthCheck'],
    ['policy/p', 'circuitOpen'],
    ['policy/p', 'healthCheck'],
  ];
  for (const [key, hold] of seq) c.seen(key, hold);
  const expected = Object.fromEntries(HOLDS.map((h) => [h, 0])) as Record<Hold, number>;
  Object.assign(expected, { autoscaler: 3, doNotDisrupt: 1, healthCheck: 2, circuitOpen: 1 });
  assert.deepEqual(c.counts, expected);
});
