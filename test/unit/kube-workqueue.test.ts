import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WorkQueue } from '../../src/kube/workqueue.ts';

/** A promise with its resolve function, to hold a `process` call open until the test lets it go. */
function gate() {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

test('a key added many times while queued is processed once', async () => {
  const seen: string[] = [];
  const q = new WorkQueue<string>({ process: async (k) => void seen.push(k) });
  q.add('a');
  q.add('b');
  q.add('a');
  q.add('a');
  assert.equal(q.len(), 2);
  await q.whenIdle();
  assert.deepEqual(seen, ['a', 'b']);
  await q.shutdown();
});

test('a key re-added while processing is processed again afterwards, never concurrently', async () => {
  const first = gate();
  let running = 0;
  let maxRunning = 0;
  let runs = 0;
  const q = new WorkQueue<string>({
    concurrency: 4,
    process: async () => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      runs++;
      if (runs === 1) await first.promise;
      running--;
    },
  });
  q.add('k');
  await new Promise((r) => setImmediate(r));
  assert.equal(q.stats().processing, 1);
  q.add('k');
  q.add('k');
  // Queued again only after the current run; not handed to one of the idle workers.
  assert.equal(q.len(), 0);
  await new Promise((r) => setImmediate(r));
  assert.equal(q.stats().processing, 1);
  first.open();
  await q.whenIdle();
  assert.equal(runs, 2, 'processed once more after the re-add, however many re-adds');
  assert.equal(maxRunning, 1, 'never two runs of one key at a time');
  await q.shutdown();
});

test('concurrency bounds the keys processed at once, and all of them get processed', async () => {
  let running = 0;
  let maxRunning = 0;
  const done: string[] = [];
  const q = new WorkQueue<string>({
    concurrency: 3,
    process: async (k) => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      await new Promise((r) => setTimeout(r, 5));
      running--;
      done.push(k);
    },
  });
  for (let i = 0; i < 12; i++) q.add(`k${i}`);
  await q.whenIdle();
  assert.equal(maxRunning, 3);
  assert.equal(done.length, 12);
  assert.deepEqual(new Set(done).size, 12);
  await q.shutdown();
});

test('rate-limited delays double per failure up to the maximum, and forget resets them', async () => {
  const q = new WorkQueue<string>({ process: async () => {}, baseDelayMs: 10, maxDelayMs: 50 });
  assert.deepEqual(
    [1, 2, 3, 4, 5].map(() => q.addRateLimited('x')),
    [10, 20, 40, 50, 50],
  );
  assert.equal(q.numRequeues('x'), 5);
  assert.equal(q.addRateLimited('y'), 10, 'backoff is per key');
  q.forget('x');
  assert.equal(q.numRequeues('x'), 0);
  assert.equal(q.addRateLimited('x'), 10);
  await q.shutdown();
});

test('a throwing process is retried with growing backoff; success resets it', async () => {
  const times: number[] = [];
  const logs: string[] = [];
  let calls = 0;
  const succeeded = gate();
  const q = new WorkQueue<string>({
    baseDelayMs: 20,
    maxDelayMs: 1000,
    log: (level, msg) => logs.push(`${level} ${msg}`),
    process: async () => {
      calls++;
      times.push(Date.now());
      if (calls <= 3) throw new Error(`boom ${calls}`);
      succeeded.open();
    },
  });
  q.add('flaky');
  await succeeded.promise;
  await q.whenIdle();
  assert.equal(calls, 4);
  assert.equal(
    logs.filter((l) => l.startsWith('warn') && l.includes('flaky') && l.includes('boom')).length,
    3,
  );
  // Each retry waited at least its backoff: 20, 40, 80 ms.
  const gaps = times.slice(1).map((t, i) => t - (times[i] as number));
  for (const [i, min] of [20, 40, 80].entries()) {
    assert.ok(
      (gaps[i] as number) >= min - 2,
      `retry ${i + 1} came after ${gaps[i]} ms, before its ${min} ms backoff`,
    );
  }
  assert.equal(q.numRequeues('flaky'), 0, 'a success forgets the failures');
  assert.equal(q.stats().failed, 3);
  await q.shutdown();
});

test('a process that asks for a rate-limited requeue keeps its backoff growing', async () => {
  let calls = 0;
  const third = gate();
  const requeues: number[] = [];
  const q = new WorkQueue<string>({
    baseDelayMs: 5,
    process: async (k) => {
      calls++;
      requeues.push(q.numRequeues(k));
      if (calls < 3) q.addRateLimited(k);
      else third.open();
    },
  });
  q.add('wait-for-it');
  await third.promise;
  await q.whenIdle();
  assert.equal(calls, 3);
  assert.deepEqual(requeues, [0, 1, 2], 'not reset by the runs that asked for a requeue');
  assert.equal(q.numRequeues('wait-for-it'), 0, 'reset once it returned without asking again');
  await q.shutdown();
});

test('addAfter delays a key; the earliest of several delays wins', async () => {
  const seen: Array<[string, number]> = [];
  const start = Date.now();
  const q = new WorkQueue<string>({ process: async (k) => void seen.push([k, Date.now() - start]) });
  q.addAfter('late', 60_000);
  q.addAfter('late', 30);
  q.addAfter('late', 50_000);
  assert.equal(q.len(), 0);
  assert.equal(q.stats().delayed, 1);
  await new Promise((r) => setTimeout(r, 80));
  await q.whenIdle();
  assert.equal(seen.length, 1);
  assert.equal(seen[0]?.[0], 'late');
  assert.ok((seen[0]?.[1] as number) >= 28);
  await q.shutdown();
});

test('shutdown waits for in-flight work, drops queued and delayed keys, ignores later adds', async () => {
  const hold = gate();
  const seen: string[] = [];
  let finished = false;
  const q = new WorkQueue<string>({
    process: async (k) => {
      seen.push(k);
      if (k === 'a') {
        await hold.promise;
        finished = true;
      }
    },
  });
  q.add('a');
  q.add('b');
  q.addAfter('c', 10);
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(seen, ['a']);
  const stopping = q.shutdown();
  q.add('d');
  let stopped = false;
  void stopping.then(() => {
    stopped = true;
  });
  await new Promise((r) => setTimeout(r, 30));
  assert.equal(stopped, false, 'shutdown resolves only after the in-flight run');
  hold.open();
  await stopping;
  assert.ok(finished);
  await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(seen, ['a'], 'b (queued), c (delayed) and d (added after shutdown) never ran');
  assert.equal(q.len(), 0);
});

test('options are validated', () => {
  const process = async () => {};
  assert.throws(() => new WorkQueue({ process, concurrency: 0 }), /concurrency/);
  assert.throws(() => new WorkQueue({ process, concurrency: 1.5 }), /concurrency/);
  assert.throws(() => new WorkQueue({ process, baseDelayMs: -1 }), /baseDelayMs/);
  assert.throws(() => new WorkQueue({ process, baseDelayMs: 100, maxDelayMs: 10 }), /maxDelayMs/);
  assert.throws(() => new WorkQueue({ process: undefined as unknown as typeof process }), /process/);
});
