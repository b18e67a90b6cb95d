import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Lease, V1Node } from '@kubernetes/client-node';
import { KWOK_CUSTOM_STATUS } from '../../src/sim/cluster/component-args.ts';
import { type KeptSince, STALE_LEASE_MS, staleLeases } from '../../src/sim/kwok-leases.ts';

const T = Date.parse('2026-11-27T20:00:00Z');
const node = (name: string, uid = name, hostKeeps = false): V1Node => ({
  metadata: { name, uid, ...(hostKeeps ? { annotations: { [KWOK_CUSTOM_STATUS]: 'custom' } } : {}) },
});
const lease = (name: string, renewedMsAgo: number, now: number): V1Lease => ({
  metadata: { name },
  spec: { renewTime: new Date(now - renewedMsAgo) },
});

test("staleLeases: a node KWOK keeps whose Lease it has not renewed for the whole period, each node given a period of KWOK's own first", () => {
  const kept: KeptSince = new Map();
  const fresh = (now: number) => lease('a', 1000, now);
  assert.deepEqual(staleLeases([node('a'), node('b')], [fresh(T)], kept, T), [], 'first look: no period yet');
  const later = T + STALE_LEASE_MS;
  assert.deepEqual(
    staleLeases([node('a'), node('b')], [fresh(later), lease('b', STALE_LEASE_MS, later)], kept, later),
    ['b'],
    'b not renewed for the period',
  );
  assert.deepEqual(
    staleLeases([node('a'), node('b')], [fresh(later)], kept, later),
    ['b'],
    'no Lease at all',
  );
  assert.deepEqual(
    staleLeases([node('a'), node('b', 'b', true)], [fresh(later)], kept, later),
    [],
    "its host keeps its status (rebooting, never returning): not KWOK's to renew",
  );
  assert.deepEqual(
    staleLeases([node('a'), node('b')], [fresh(later)], kept, later),
    [],
    'back from its host: a whole period of KWOK first',
  );
  assert.deepEqual(
    staleLeases([node('a', 'a2')], [lease('a', STALE_LEASE_MS, later)], kept, later),
    [],
    'registered again (a new UID): a whole period first',
  );
  assert.equal(kept.has('a'), false, 'nodes gone are forgotten');
});
