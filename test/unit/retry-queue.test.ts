import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RetryQueue } from '../../src/drain/retry-queue.ts';

test('take returns due items first, then waits for the earliest', async () => {
  const q = new RetryQueue(['a', 'b'], 100);
  const signal = new AbortController().signal;
  assert.equal((await q.take(signal))?.value, 'a');
  assert.equal((await q.take(signal))?.value, 'b');
  q.push({ value: 'late', notBefore: Date.now() + 40, delay: 200 });
  q.push({ value: 'soon', notBefore: Date.now() + 5, delay: 200 });
  assert.equal((await q.take(signal))?.value, 'soon');
  assert.equal((await q.take(signal))?.value, 'late');
  assert.equal(await q.take(signal), undefined, 'empty');
});

test('wake(pdb) makes the items that PDB blocked due at once', async () => {
  const q = new RetryQueue<string>([], 100);
  const signal = new AbortController().signal;
  q.push({ value: 'blocked', pdb: 'ns/web', notBefore: Date.now() + 60_000, delay: 100 });
  q.push({ value: 'other', pdb: 'ns/db', notBefore: Date.now() + 60_000, delay: 100 });
  const taking = q.take(signal);
  q.wake('ns/web');
  assert.equal((await taking)?.value, 'blocked');
  assert.equal(q.size, 1);
});

test('take gives up when aborted', async () => {
  const q = new RetryQueue<string>([], 100);
  q.push({ value: 'x', notBefore: Date.now() + 60_000, delay: 100 });
  const controller = new AbortController();
  const taking = q.take(controller.signal);
  controller.abort();
  assert.equal(await taking, undefined);
});
