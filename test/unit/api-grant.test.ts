import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  attemptOf,
  fromPrivatePem,
  GrantCheck,
  generateGrantKey,
  readClaim,
  signGrant,
  verifyGrant,
} from '../../src/api/grant.ts';

const key = generateGrantKey();
const claim = { node: 'node-1', bootId: 'boot-a', attempt: '2026-11-24T10:00:00.000Z' };
const expect = { node: 'node-1', bootId: 'boot-a' };

test('a grant verifies for the node and boot it was signed for, and fits an annotation', () => {
  const value = signGrant(key.privateKey, claim);
  assert.ok(value.length < 300, `${value.length} bytes`);
  assert.deepEqual(verifyGrant(key.publicKey, value, expect), { check: GrantCheck.valid });
  assert.deepEqual(readClaim(value), claim);
  const again = fromPrivatePem(key.privatePem);
  assert.equal(again.publicPem, key.publicPem, 'the public key is derived from the stored private key');
  assert.equal(verifyGrant(again.publicKey, value, expect).check, GrantCheck.valid);
});

test('anything else is not a grant the operator gave', () => {
  const value = signGrant(key.privateKey, claim);
  const [version, payload, signature] = value.split('.') as [string, string, string];
  const otherPayload = Buffer.from(JSON.stringify({ ...claim, node: 'node-2' })).toString('base64url');
  const table: Array<[string, string, RegExp]> = [
    ['the old protocol', 'true', /is not a signed grant/],
    ['empty', '', /is not a signed grant/],
    ['garbage', 'v1.%%%.###', /is not a signed grant/],
    ['oversized', `v1.${'A'.repeat(150_000)}.x`, /is not a signed grant/],
    ['another key', signGrant(generateGrantKey().privateKey, claim), /signature is not the operator key/],
    ['a claim changed after signing', `${version}.${otherPayload}.${signature}`, /signature is not/],
    ['a signature cut short', `${version}.${payload}.${signature.slice(0, 20)}`, /signature is not/],
    ["another node's grant", signGrant(key.privateKey, { ...claim, node: 'node-2' }), /given to node node-2/],
  ];
  for (const [what, forged, why] of table) {
    const verdict = verifyGrant(key.publicKey, forged, expect);
    assert.equal(verdict.check, GrantCheck.forged, what);
    assert.match(verdict.why ?? '', why, what);
    assert.ok((verdict.why ?? '').length < 200, `${what}: the reason quotes at most a prefix`);
  }
  assert.equal(verifyGrant(undefined, value, expect).check, GrantCheck.forged, 'no key: nothing verifies');
});

test('a grant for an earlier boot of the node is told apart', () => {
  const value = signGrant(key.privateKey, claim);
  const verdict = verifyGrant(key.publicKey, value, { node: 'node-1', bootId: 'boot-b' });
  assert.equal(verdict.check, GrantCheck.otherBoot);
  assert.match(verdict.why ?? '', /boot boot-a, not boot-b/);
});

test("a grant's attempt is the one holding the node's slot in the ledger, or promised it", () => {
  const ledger = JSON.stringify({
    slots: { 'node-1': { since: 'A' } },
    next: { 'node-2': { after: 'node-1', since: 'B' } },
  });
  assert.equal(attemptOf(ledger, 'node-1'), 'A');
  assert.equal(attemptOf(ledger, 'node-2'), 'B', 'handed over, not yet recorded');
  assert.equal(attemptOf(ledger, 'node-3'), undefined);
  assert.equal(attemptOf('{"slots": {"node-1": {"since": 5}}}', 'node-1'), undefined);
  assert.equal(attemptOf('not json', 'node-1'), undefined);
  assert.equal(attemptOf(undefined, 'node-1'), undefined);
});
