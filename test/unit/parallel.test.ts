import assert from 'node:assert/strict';
import { test } from 'node:test';
import { inParallel, Limiter } from '../../src/util/parallel.ts';

test('never runs more than `limit` calls at once, and runs every item', async () => {
  let running = 0;
  let peak = 0;
  const done: number[] = [];
  await inParallel([1, 2, 3, 4, 5, 6, 7], 3, async (i) => {
    running++;
    peak = Math.max(peak, running);
    await new Promise((r) => setImmediate(r));
    running--;
    done.push(i);
  });
  assert.equal(peak, 3);
  assert.deepEqual(done.sort(), [1, 2, 3, 4, 5, 6, 7]);
});

test('attempts every item after a failure, then throws the first error', async () => {
  const done: number[] = [];
  await assert.rejects(
    inParallel([1, 2, 3, 4], 2, async (i) => {
      if (i === 2) throw new Error('two failed');
      if (i === 4) throw new Error('four failed');
      done.push(i);
    }),
    /two failed/,
  );
  assert.deepEqual(done.sort(), [1, 3]);
});

test('an empty list resolves; a limit below 1 is refused', async () => {
  await inParallel([], 4, async () => assert.fail('not called'));
  await assert.rejects(
    inParallel([1], 0, async () => {}),
    /limit must be ≥ 1/,
  );
});

test('Limiter: tasks started from anywhere share the limit, run in order, and failures free their slot', async () => {
  const limiter = new Limiter(2);
  let running = 0;
  let peak = 0;
  const order: number[] = [];
  const task = (i: number) =>
    limiter.run(async () => {
      running++;
      peak = Math.max(peak, running);
      order.push(i);
      await new Promise((r) => setImmediate(r));
      running--;
      if (i === 3) throw new Error('three failed');
      return i * 10;
    });
  const results = await Promise.allSettled([1, 2, 3, 4, 5, 6].map(task));
  assert.equal(peak, 2);
  assert.deepEqual(order, [1, 2, 3, 4, 5, 6]);
  assert.deepEqual(
    results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message)),
    [10, 20, 'three failed', 40, 50, 60],
  );
  assert.equal(limiter.running, 0);
  assert.throws(() => new Limiter(0), /integer ≥ 1/);
});
