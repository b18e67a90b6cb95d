import assert from 'node:assert/strict';
import { test } from 'node:test';
import { inParallel } from '../../src/util/parallel.ts';

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
