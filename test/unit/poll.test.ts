import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pollUntil } from '../../src/util/poll.ts';

test('pollUntil returns the first defined value', async () => {
  let calls = 0;
  const value = await pollUntil('third call', () => (++calls === 3 ? 'done' : undefined), { intervalMs: 1 });
  assert.equal(value, 'done');
  assert.equal(calls, 3);
});

test('pollUntil treats a throwing check as "not yet" and reports the last error at the deadline', async () => {
  await assert.rejects(
    pollUntil(
      'the impossible',
      () => {
        throw new Error('connection refused');
      },
      { timeoutMs: 30, intervalMs: 5 },
    ),
    /timed out after 30 ms waiting for the impossible \(last: connection refused\)/,
  );
});

test('pollUntil stops when its signal is aborted', async () => {
  const controller = new AbortController();
  controller.abort(new Error('test over'));
  await assert.rejects(
    pollUntil('anything', () => undefined, { signal: controller.signal }),
    /test over/,
  );
});
