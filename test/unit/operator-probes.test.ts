import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  informerProgress,
  liveness,
  type ProbeInput,
  Progress,
  readiness,
} from '../../src/operator/probes.ts';

const NOW = 1_000_000;
const input = (o: Partial<ProbeInput['informer']> = {}, electionEnded = false): ProbeInput => ({
  now: NOW,
  watchdogMs: 90_000,
  electionEnded,
  informer: {
    synced: true,
    events: 10,
    errors: 0,
    relists: 0,
    watchdogFires: 0,
    lastEventTime: NOW - 5_000,
    lastSyncTime: NOW - 600_000,
    ...o,
  },
});

test('readiness: a synced cache that heard from the API server within two watchdog periods', () => {
  assert.deepEqual(readiness(input()), []);
  assert.deepEqual(readiness(input({ synced: false })), ['the node cache has not synced yet']);
  assert.deepEqual(readiness(input({ lastEventTime: NOW - 181_000, lastSyncTime: NOW - 200_000 })), [
    'the node cache heard nothing from the API server for 181s',
  ]);
  assert.deepEqual(
    readiness(input({ lastEventTime: undefined, lastSyncTime: NOW - 1000 })),
    [],
    'a fresh list',
  );
});

test('liveness: the informer makes progress and leader election runs; an outage is not a restart', () => {
  const progress = new Progress();
  const at = (count: number, now: number) => progress.observe(count, now);
  assert.equal(at(5, NOW - 300_000), NOW - 300_000);
  assert.equal(at(5, NOW - 100_000), NOW - 300_000, 'no change: still the first sighting');
  assert.deepEqual(liveness(input(), NOW - 300_000), ['the node informer made no progress for 300s']);
  assert.deepEqual(liveness(input(), at(6, NOW)), [], 'failures it retries count as progress');
  assert.deepEqual(liveness(input({}, true), NOW), ['leader election is not running']);
  assert.equal(informerProgress(input({ events: 1, errors: 2, relists: 3, watchdogFires: 4 }).informer), 10);
});
