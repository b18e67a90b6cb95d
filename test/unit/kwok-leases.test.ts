import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Lease, V1Node } from '@kubernetes/client-node';
import { type KeptSince, kwokIdentity, STALE_LEASE_MS, staleLeases } from '../../src/sim/kwok-leases.ts';

const T = Date.parse('2026-11-27T20:00:00Z');
const node = (name: string, uid = name, kwok = true): V1Node => ({
  metadata: { name, uid, ...(kwok ? { annotations: { 'kwok.x-k8s.io/node': 'fake' } } : {}) },
});
const lease = (name: string, renewedMsAgo: number, now: number): V1Lease => ({
  metadata: { name },
  spec: { renewTime: new Date(now - renewedMsAgo) },
});

test("staleLeases: a node KWOK plays whose Lease it has not renewed for the whole period, each node given a period of KWOK's own first", () => {
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
    staleLeases([node('a'), node('b', 'b', false)], [fresh(later)], kept, later),
    [],
    "a node KWOK does not play: not KWOK's to renew",
  );
  assert.deepEqual(
    staleLeases([node('a', 'a2')], [lease('a', STALE_LEASE_MS, later)], kept, later),
    [],
    'registered again (a new UID): a whole period first',
  );
  assert.equal(kept.has('a'), false, 'nodes gone are forgotten');
});

test("kwokIdentity: the holder named by the Lease of a node KWOK plays, not another node's", () => {
  const held = (name: string, holder?: string): V1Lease => ({
    metadata: { name },
    spec: holder ? { holderIdentity: holder } : {},
  });
  assert.equal(
    kwokIdentity([node('a'), node('b', 'b', false)], [held('b', 'kubelet-b'), held('a', 'vm_1234')]),
    'vm_1234',
  );
  assert.equal(
    kwokIdentity([node('a'), node('c')], [held('a'), held('c', 'vm_1234')]),
    'vm_1234',
    'a Lease naming no one is skipped',
  );
  assert.equal(
    kwokIdentity([node('a')], [held('b', 'kubelet-b')]),
    undefined,
    'no Lease of a node KWOK plays',
  );
});
