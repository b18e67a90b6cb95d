import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LeanClient, retryAfterMs } from '../../src/kube/lean-client.ts';

test('retryAfterMs: only a refusal that names its wait is sent again, and never after more than 10 s', () => {
  const table: Array<[number, string | undefined, number | undefined, string]> = [
    [429, '1', 1000, 'API Priority and Fairness turning a burst away'],
    [429, ' 3 ', 3000, 'whitespace around the seconds'],
    [429, '0', 0, 'retry at once'],
    [429, undefined, undefined, 'a PodDisruptionBudget refusing an eviction: final'],
    [429, 'Wed, 21 Oct 2026 07:28:00 GMT', undefined, 'an HTTP date: client-go does not retry it either'],
    [429, '-1', undefined, 'negative'],
    [429, '1.5', undefined, 'not whole seconds'],
    [429, '3600', 10_000, 'an hour is capped: the agent would miss its grant'],
    [503, '2', 2000, 'a server shutting down'],
    [500, '1', 1000, 'any 5xx with the header'],
    [503, undefined, undefined, 'a 5xx without it is an answer'],
    [409, '1', undefined, 'a conflict is re-read and re-decided, never repeated'],
    [404, '1', undefined, 'not found'],
    [200, '1', undefined, 'success'],
  ];
  for (const [status, header, want, why] of table) assert.equal(retryAfterMs(status, header), want, why);
});

test('LeanClient refuses settings it cannot use', () => {
  assert.throws(() => new LeanClient({ server: 'http://127.0.0.1:6443' }), /https:\/\/ URL/);
  assert.throws(() => new LeanClient({ server: 'https://127.0.0.1:6443' }, { maxRetries: -1 }), /maxRetries/);
  assert.throws(
    () => new LeanClient({ server: 'https://127.0.0.1:6443' }, { maxRetries: 1.5 }),
    /maxRetries/,
  );
});
