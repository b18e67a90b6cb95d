import assert from 'node:assert/strict';
import { test } from 'node:test';
import { backoffDelay, sleep, validateBackoff } from '../../src/kube/backoff.ts';

test('backoffDelay doubles from initialMs and caps at maxMs', () => {
  const opts = { initialMs: 200, maxMs: 1000 };
  assert.deepEqual(
    [1, 2, 3, 4, 5, 100, 10_000].map((n) => backoffDelay(n, opts)),
    [200, 400, 800, 1000, 1000, 1000, 1000],
  );
  assert.equal(backoffDelay(0, opts), 200, 'attempt 0 counts as the first');
});

test('jitter takes up to its fraction off the delay', () => {
  const opts = { initialMs: 100, maxMs: 1000, jitter: 0.5 };
  assert.equal(
    backoffDelay(2, opts, () => 0),
    200,
  );
  assert.equal(
    backoffDelay(2, opts, () => 0.999999),
    200 - 200 * 0.5 * 0.999999,
  );
  for (let i = 0; i < 100; i++) {
    const d = backoffDelay(4, opts);
    assert.ok(d > 400 && d <= 800, String(d));
  }
});

test('validateBackoff rejects unusable settings', () => {
  assert.doesNotThrow(() => validateBackoff('x', { initialMs: 1, maxMs: 1 }));
  assert.throws(() => validateBackoff('x', { initialMs: 0, maxMs: 1 }), /initialMs/);
  assert.throws(() => validateBackoff('x', { initialMs: 10, maxMs: 5 }), /maxMs/);
  assert.throws(() => validateBackoff('x', { initialMs: 1, maxMs: Number.NaN }), /maxMs/);
  assert.throws(() => validateBackoff('x', { initialMs: 1, maxMs: 2, jitter: 2 }), /jitter/);
});

test('sleep ends early when its signal aborts', async () => {
  const controller = new AbortController();
  const sleeping = sleep(60_000, controller.signal);
  controller.abort();
  const first = async (p: Promise<void>) =>
    Promise.race([
      p.then(() => 'woke'),
      new Promise((r) => setTimeout(() => r('still asleep'), 2_000).unref()),
    ]);
  assert.equal(await first(sleeping), 'woke');
  assert.equal(await first(sleep(60_000, controller.signal)), 'woke', 'already aborted');
});
