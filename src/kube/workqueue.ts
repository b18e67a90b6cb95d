/**
 * A de-duplicating, rate-limited work queue with client-go's semantics (workqueue.RateLimitingInterface):
 * - a key is queued at most once, however often it is added;
 * - a key added while it is being processed is processed again once the current run finishes, and never
 *   by two workers at the same time (per-key ordering);
 * - `addRateLimited` requeues a key after a per-key exponential backoff that `forget` resets;
 * - a `process` that throws is logged and requeued rate-limited; it never stops the queue;
 * - a `process` that returns normally resets the key's backoff, unless it asked for a rate-limited
 *   requeue itself during that run (a "not yet, try again later" answer keeps growing the backoff).
 * Workers start at construction; keys become due in FIFO order.
 */
import { type KubeLog, silentLog } from './backoff.ts';

export interface WorkQueueOptions<K extends string> {
  /** Handles one key; level-triggered: it reads the current state itself rather than trusting the key. */
  process: (key: K) => Promise<void>;
  /** Keys processed at the same time (default 1). */
  concurrency?: number;
  /** First rate-limited delay (default 100 ms); doubles per consecutive failure. */
  baseDelayMs?: number;
  /** Upper bound of the rate-limited delay (default 60 s). */
  maxDelayMs?: number;
  /** Name in log lines (default "workqueue"). */
  name?: string;
  log?: KubeLog;
}

export interface WorkQueueStats {
  /** Keys ready and waiting for a worker. */
  queued: number;
  /** Keys being processed now. */
  processing: number;
  /** Keys scheduled for later (addAfter / addRateLimited). */
  delayed: number;
  /** Runs of `process` that finished, and of those the ones that threw. */
  processed: number;
  failed: number;
}

export class WorkQueue<K extends string> {
  readonly concurrency: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  readonly name: string;
  readonly #process: (key: K) => Promise<void>;
  readonly #log: KubeLog;
  /** Ready keys, FIFO; each also in #dirty. */
  #queue: K[] = [];
  /** Keys that need a run: queued, or re-added while processing. */
  readonly #dirty = new Set<K>();
  readonly #processing = new Set<K>();
  readonly #delayed = new Map<K, { at: number; timer: NodeJS.Timeout }>();
  readonly #failures = new Map<K, number>();
  readonly #rateLimitedDuringRun = new Set<K>();
  readonly #inFlight = new Set<Promise<void>>();
  #idleWaiters: Array<() => void> = [];
  #pumpScheduled = false;
  #shuttingDown = false;
  #processed = 0;
  #failed = 0;

  constructor(options: WorkQueueOptions<K>) {
    const { process, concurrency = 1, baseDelayMs = 100, maxDelayMs = 60_000, name = 'workqueue' } = options;
    if (typeof process !== 'function') throw new Error('WorkQueue: process must be a function');
    if (!Number.isInteger(concurrency) || concurrency < 1) {
      throw new Error(`WorkQueue: concurrency must be an integer ≥ 1 (got ${concurrency})`);
    }
    if (!Number.isFinite(baseDelayMs) || baseDelayMs <= 0) {
      throw new Error(`WorkQueue: baseDelayMs must be a positive number (got ${baseDelayMs})`);
    }
    if (!Number.isFinite(maxDelayMs) || maxDelayMs < baseDelayMs) {
      throw new Error(`WorkQueue: maxDelayMs must be ≥ baseDelayMs (got ${maxDelayMs})`);
    }
    this.#process = process;
    this.concurrency = concurrency;
    this.baseDelayMs = baseDelayMs;
    this.maxDelayMs = maxDelayMs;
    this.name = name;
    this.#log = options.log ?? silentLog;
  }

  get shuttingDown(): boolean {
    return this.#shuttingDown;
  }

  /** Queues `key` now unless it is already queued (ignored after shutdown). */
  add(key: K): void {
    if (this.#shuttingDown || this.#dirty.has(key)) return;
    this.#dirty.add(key);
    // A key being processed is queued again when that run finishes, never run twice at once.
    if (this.#processing.has(key)) return;
    this.#queue.push(key);
    this.#schedulePump();
  }

  /** Queues `key` after `ms`; of several pending delays for one key the earliest wins. */
  addAfter(key: K, ms: number): void {
    if (this.#shuttingDown) return;
    if (!(ms > 0)) {
      this.add(key);
      return;
    }
    const at = Date.now() + ms;
    const pending = this.#delayed.get(key);
    if (pending && pending.at <= at) return;
    if (pending) clearTimeout(pending.timer);
    const timer = setTimeout(() => {
      this.#delayed.delete(key);
      this.add(key);
    }, ms);
    this.#delayed.set(key, { at, timer });
  }

  /** Queues `key` after its backoff (baseDelayMs · 2^failures, capped), which grows by one step. */
  addRateLimited(key: K): number {
    const delay = this.#nextDelay(key);
    if (this.#processing.has(key)) this.#rateLimitedDuringRun.add(key);
    this.addAfter(key, delay);
    return delay;
  }

  /** Resets `key`'s backoff (e.g. once it was processed successfully). */
  forget(key: K): void {
    this.#failures.delete(key);
  }

  /** Consecutive rate-limited requeues of `key` since it was last forgotten. */
  numRequeues(key: K): number {
    return this.#failures.get(key) ?? 0;
  }

  /** Keys ready and waiting for a worker. */
  len(): number {
    return this.#queue.length;
  }

  stats(): WorkQueueStats {
    return {
      queued: this.#queue.length,
      processing: this.#processing.size,
      delayed: this.#delayed.size,
      processed: this.#processed,
      failed: this.#failed,
    };
  }

  /** Resolves once nothing is queued or being processed (delayed keys do not count). */
  whenIdle(): Promise<void> {
    if (this.#isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /**
   * Stops taking work: queued and delayed keys are dropped, later adds are ignored. Resolves when the
   * runs already in progress have finished.
   */
  async shutdown(): Promise<void> {
    this.#shuttingDown = true;
    for (const { timer } of this.#delayed.values()) clearTimeout(timer);
    this.#delayed.clear();
    this.#queue = [];
    this.#dirty.clear();
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
    this.#notifyIdle();
  }

  #nextDelay(key: K): number {
    const failures = this.#failures.get(key) ?? 0;
    this.#failures.set(key, failures + 1);
    return Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** Math.min(failures, 52));
  }

  #schedulePump(): void {
    if (this.#pumpScheduled) return;
    this.#pumpScheduled = true;
    queueMicrotask(() => {
      this.#pumpScheduled = false;
      this.#pump();
    });
  }

  #pump(): void {
    while (!this.#shuttingDown && this.#processing.size < this.concurrency && this.#queue.length > 0) {
      const key = this.#queue.shift() as K;
      this.#dirty.delete(key);
      this.#processing.add(key);
      const run = this.#run(key);
      this.#inFlight.add(run);
      void run.finally(() => this.#inFlight.delete(run));
    }
    this.#notifyIdle();
  }

  async #run(key: K): Promise<void> {
    try {
      await this.#process(key);
      if (!this.#rateLimitedDuringRun.has(key)) this.forget(key);
    } catch (err) {
      this.#failed++;
      if (this.#shuttingDown) {
        this.#log('warn', `${this.name}: processing ${key} failed during shutdown: ${message(err)}`, {
          key,
          error: message(err),
        });
      } else {
        const retryInMs = this.addRateLimited(key);
        this.#log(
          'warn',
          `${this.name}: processing ${key} failed: ${message(err)}; retrying in ${Math.round(retryInMs)} ms`,
          {
            key,
            error: message(err),
            retryInMs,
            failures: this.numRequeues(key),
          },
        );
      }
    } finally {
      this.#processed++;
      this.#rateLimitedDuringRun.delete(key);
      this.#processing.delete(key);
      if (this.#dirty.has(key) && !this.#shuttingDown) this.#queue.push(key);
      this.#schedulePump();
    }
  }

  #isIdle(): boolean {
    return this.#queue.length === 0 && this.#processing.size === 0;
  }

  #notifyIdle(): void {
    if (!this.#isIdle() || this.#idleWaiters.length === 0) return;
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const resolve of waiters) resolve();
  }
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
