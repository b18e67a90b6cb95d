import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { appSpecificId, normalizeId128, ZINCATI_APP_ID } from '../../src/fleetlock/node-id.ts';

describe('appSpecificId', () => {
  test('matches the published vector of systemd app-specific IDs', () => {
    // The vector the libsystemd crate (Zincati's) tests its app-specific derivation with.
    assert.equal(
      appSpecificId('2e074e9b299c41a59923c51ae16f279b', '033b1b9b264441fcaa173e9e5bf35c5a'),
      '4d4a86c9c6644a479560ded5d19a30c5',
    );
  });

  test('reads a dashed or upper-case machine ID as the same ID', () => {
    const plain = appSpecificId('2e074e9b299c41a59923c51ae16f279b');
    assert.equal(appSpecificId('2E074E9B-299C-41A5-9923-C51AE16F279B'), plain);
    assert.notEqual(plain, appSpecificId('2e074e9b299c41a59923c51ae16f279c'));
  });

  test('is a version-4, RFC 4122 variant UUID under Zincati app ID', () => {
    const id = appSpecificId('0123456789abcdef0123456789abcdef', ZINCATI_APP_ID) ?? '';
    assert.match(id, /^[0-9a-f]{12}4[0-9a-f]{3}[89ab][0-9a-f]{15}$/);
  });

  const bad: [string, string][] = [
    ['empty', ''],
    ['short', '2e074e9b299c41a59923c51ae16f279'],
    ['not hex', 'zz074e9b299c41a59923c51ae16f279b'],
  ];
  for (const [name, machineId] of bad)
    test(`a machine ID that is not 128 bits (${name}) derives nothing`, () => {
      assert.equal(appSpecificId(machineId), undefined);
      assert.equal(normalizeId128(machineId), undefined);
    });
});
