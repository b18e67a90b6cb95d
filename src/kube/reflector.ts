/**
 * client-go's reflector loop, the one nuo has: the operator's informer and the agent's watch of its Node
 * both run it. No import of @kubernetes/client-node (the agent runs it, and that library costs ~130 MiB
 * to load); the caller brings the list and the watch.
 *
 * - List, then watch from the list's resourceVersion; when a watch ends, watch again from the last
 *   resourceVersion seen (events and bookmarks both advance it).
 * - 410 Gone from a watch: that version left the server's window, so list again — at once, unless this
 *   attempt's own fresh list was refused the same way.
 * - Any other failure: back off (backoff.ts), then watch again from the last version seen, or list again
 *   if the caller asks for `relistAfterFailure`.
 * - The failure streak, which sets the backoff, is reset only by a healthy watch: one that delivered an
 *   event or lasted `healthyMs`. A watch that ends at once without an event counts as a failure.
 * - Optional watchdog: a watch with no event or bookmark for `watchdog.afterMs` is cut and watched again
 *   (silence alone never costs a list); if `watchdog.probe` says the connection does not answer, after
 *   a backoff.
 *
 * What to do after an attempt is the pure afterWatch(); Reflector only runs it.
 */
import { type BackoffOptions, backoffDelay, type KubeLog, silentLog, sleep } from './backoff.ts';

/** A watch that lasted this long, or delivered anything, was healthy: the failure streak is over. */
export const HEALTHY_WATCH_MS = 10_000;

/** How one attempt (a list if one is due, then a watch) ended. */
export type AttemptEnd =
  /** The server closed the watch (its timeoutSeconds, or a shutdown). */
  | 'ended'
  /** The watch was answered 410 Gone. */
  | 'gone'
  /** The watchdog cut a silent watch, and the connection still answers. */
  | 'silent'
  /** The watchdog cut a silent watch, and the connection did not answer. */
  | 'dead'
  /** The list or the watch failed otherwise. */
  | 'failed';

export interface Attempt {
  end: AttemptEnd;
  /** This attempt began with a list. */
  listed: boolean;
  /** When its watch started (ms, monotonic); undefined if it failed before watching. */
  watchStartedAt: number | undefined;
  /** Events and bookmarks the watch delivered. */
  events: number;
  now: number;
  /** Failed attempts in a row before this one. */
  failures: number;
  /** A resourceVersion to watch from is known (a list succeeded, and no 410 since). */
  resumable: boolean;
}

export interface AttemptPolicy {
  healthyMs: number;
  relistAfterFailure: boolean;
}

export interface Next {
  /** What the next attempt starts with. */
  step: 'watch' | 'list';
  /** Failed attempts in a row, this one included: the backoff's attempt number. */
  failures: number;
  /** Wait backoffDelay(failures) before the next attempt. */
  backoff: boolean;
}

/** What the reflector does after an attempt ended. */
export function afterWatch(a: Attempt, policy: AttemptPolicy): Next {
  const healthy =
    a.watchStartedAt !== undefined && (a.events > 0 || a.now - a.watchStartedAt >= policy.healthyMs);
  const streak = healthy ? 0 : a.failures;
  const failed = { failures: streak + 1, backoff: true };
  switch (a.end) {
    case 'ended':
      // Closed at once without an event: watching again at once would be a tight loop.
      return healthy ? { step: 'watch', failures: 0, backoff: false } : { step: 'watch', ...failed };
    case 'silent':
      return { step: 'watch', failures: streak, backoff: false };
    case 'dead':
      return { step: 'watch', ...failed };
    case 'gone':
      // A fresh list's version refused at once: listing again at once would be a tight loop.
      return a.listed && !healthy
        ? { step: 'list', ...failed }
        : { step: 'list', failures: streak, backoff: false };
    case 'failed':
      return { step: policy.relistAfterFailure || !a.resumable ? 'list' : 'watch', ...failed };
  }
}

/** What the reflector reads of an object: where the next watch starts. */
export interface Versioned {
  metadata?: { resourceVersion?: string };
}

/** What a list returns: the version to watch from, and how the caller takes the items in. */
export interface Listed {
  resourceVersion: string | undefined;
  /** Called once the reflector is at `resourceVersion`; a throw fails the attempt. */
  apply?: () => void | Promise<void>;
}

export interface ReflectorOptions<T extends Versioned> {
  /** Prefix of log lines, e.g. 'informer nodes'. */
  name: string;
  list: () => Promise<Listed>;
  /**
   * Watches from `resourceVersion` (undefined: from now), calling `onEvent` for every event but ERROR
   * (bookmarks included), until the server ends the watch or `signal` aborts (resolves) or it fails
   * (rejects; an ERROR event rejects too, and a 410 must be recognised by `isGone`).
   */
  watch: (
    resourceVersion: string | undefined,
    onEvent: (type: string, obj: T) => void,
    signal: AbortSignal,
  ) => Promise<void>;
  /** Every event and bookmark of a watch; a throw is logged and the watch goes on. */
  onEvent: (type: string, obj: T) => void;
  isGone: (err: unknown) => boolean;
  backoff: BackoffOptions;
  /** After a failure, list again instead of watching from the last version seen (default false). */
  relistAfterFailure?: boolean;
  /** Default HEALTHY_WATCH_MS. */
  healthyMs?: number;
  /** Cut a watch silent for `afterMs`; `probe` says whether the connection still answers. */
  watchdog?: { afterMs: number; probe?: () => Promise<boolean> };
  /** One line for a failure (default: its message). */
  describe?: (err: unknown) => string;
  /** A failure its owner expects and reports itself (a CRD not installed): retried, logged at debug. */
  expected?: (err: unknown) => boolean;
  log?: KubeLog;
}

export interface ReflectorStats {
  /** Lists that succeeded. */
  lists: number;
  /** Watches opened. */
  watches: number;
  /** Attempts that failed (not counting 410s, silences or watches that ended at once). */
  failures: number;
  /** Watches the watchdog cut. */
  silences: number;
  /** Events and bookmarks delivered. */
  events: number;
}

export class Reflector<T extends Versioned> {
  readonly #o: ReflectorOptions<T>;
  readonly #policy: AttemptPolicy;
  readonly #describe: (err: unknown) => string;
  readonly #log: KubeLog;
  #resourceVersion: string | undefined;
  #mustList = true;
  readonly #stats: ReflectorStats = { lists: 0, watches: 0, failures: 0, silences: 0, events: 0 };

  constructor(options: ReflectorOptions<T>) {
    this.#o = options;
    this.#policy = {
      healthyMs: options.healthyMs ?? HEALTHY_WATCH_MS,
      relistAfterFailure: options.relistAfterFailure ?? false,
    };
    this.#describe = options.describe ?? ((err) => (err instanceof Error ? err.message : String(err)));
    this.#log = options.log ?? silentLog;
  }

  /** Where the next watch starts: the last resourceVersion listed or seen. */
  get resourceVersion(): string | undefined {
    return this.#resourceVersion;
  }

  stats(): ReflectorStats {
    return { ...this.#stats };
  }

  /** Lists and watches until `signal` aborts; never rejects. */
  async run(signal: AbortSignal): Promise<void> {
    let failures = 0;
    while (!signal.aborted) {
      let listed = false;
      let watchStartedAt: number | undefined;
      const seen = { events: 0 };
      let end: AttemptEnd;
      let error: unknown;
      try {
        if (this.#mustList) {
          const list = await this.#o.list();
          if (signal.aborted) break;
          this.#resourceVersion = list.resourceVersion;
          listed = true;
          this.#stats.lists++;
          await list.apply?.();
          this.#mustList = false;
          if (signal.aborted) break;
        }
        watchStartedAt = performance.now();
        end = await this.#watchOnce(signal, seen);
      } catch (err) {
        error = err;
        // Only a watch's 410 is about its version: a list answered 410 is retried as any failure.
        end = watchStartedAt !== undefined && this.#o.isGone(err) ? 'gone' : 'failed';
      }
      if (signal.aborted) break;
      if (end === 'silent' && this.#o.watchdog?.probe) {
        const answers = await this.#o.watchdog.probe().catch(() => false);
        if (!answers) end = 'dead';
      }
      if (signal.aborted) break;
      if (end === 'failed') this.#stats.failures++;
      const next = afterWatch(
        {
          end,
          listed,
          watchStartedAt,
          events: seen.events,
          now: performance.now(),
          failures,
          resumable: !this.#mustList,
        },
        this.#policy,
      );
      failures = next.failures;
      if (next.step === 'list') this.#mustList = true;
      const delayMs = next.backoff ? Math.round(backoffDelay(failures, this.#o.backoff)) : 0;
      this.#report(end, error, next, delayMs);
      if (delayMs > 0) await sleep(delayMs, signal);
    }
  }

  /**
   * One watch from the current resourceVersion: 'ended' when the server ends it (or `stop` aborts),
   * 'silent' when the watchdog cut it; rejects when it fails. Settles on a cut or a stop even if the
   * caller's watch ignores its signal.
   */
  async #watchOnce(stop: AbortSignal, seen: { events: number }): Promise<'ended' | 'silent'> {
    const cut = new AbortController();
    const cutDone = new Promise<void>((resolve) =>
      cut.signal.addEventListener('abort', () => resolve(), { once: true }),
    );
    const onStop = () => cut.abort();
    stop.addEventListener('abort', onStop, { once: true });
    let silent = false;
    let watchdog: NodeJS.Timeout | undefined;
    const afterMs = this.#o.watchdog?.afterMs;
    const arm = () => {
      if (afterMs === undefined) return;
      clearTimeout(watchdog);
      watchdog = setTimeout(() => {
        silent = true;
        this.#stats.silences++;
        cut.abort();
      }, afterMs);
    };
    const onEvent = (type: string, obj: T) => {
      if (cut.signal.aborted) return;
      seen.events++;
      this.#stats.events++;
      arm();
      try {
        this.#o.onEvent(type, obj);
      } catch (err) {
        this.#log('error', `${this.#o.name}: handling a ${type} event failed: ${this.#describe(err)}`);
      }
      const rv = obj?.metadata?.resourceVersion;
      if (rv) this.#resourceVersion = rv;
    };
    arm();
    this.#stats.watches++;
    try {
      const watching = this.#o.watch(this.#resourceVersion, onEvent, cut.signal);
      // Its outcome no longer matters once the watch is cut.
      watching.catch(() => {});
      await Promise.race([watching, cutDone]);
      return silent ? 'silent' : 'ended';
    } catch (err) {
      if (silent) return 'silent';
      throw err;
    } finally {
      clearTimeout(watchdog);
      stop.removeEventListener('abort', onStop);
      cut.abort();
    }
  }

  #report(end: AttemptEnd, error: unknown, next: Next, delayMs: number): void {
    const name = this.#o.name;
    const again = `${next.step === 'list' ? 'listing' : 'watching'} again${delayMs > 0 ? ` in ${delayMs} ms` : ''}`;
    const fields = { resourceVersion: this.#resourceVersion, failures: next.failures, delayMs };
    const silence = `no event or bookmark for ${this.#o.watchdog?.afterMs} ms`;
    switch (end) {
      case 'ended':
        if (next.backoff)
          this.#log('warn', `${name}: the watch ended at once with no events; ${again}`, fields);
        else this.#log('debug', `${name}: watch ended; ${again}`, fields);
        return;
      case 'silent':
        this.#log('info', `${name}: ${silence}; ${again}`, fields);
        return;
      case 'dead':
        this.#log('warn', `${name}: ${silence} and the connection did not answer; ${again}`, fields);
        return;
      case 'gone':
        this.#log('info', `${name}: resourceVersion expired (410 Gone); ${again}`, fields);
        return;
      case 'failed':
        this.#log(
          this.#o.expected?.(error) ? 'debug' : 'warn',
          `${name}: ${this.#describe(error)}; ${again} (failure ${next.failures})`,
          fields,
        );
        return;
    }
  }
}
