/**
 * Capped exponential backoff and an abortable sleep: the only ones, shared by the informer, the leader
 * elector, the work queue, the drain (its eviction retry queue) and the agent (its Node watch and its
 * D-Bus watches). No imports, so the agent can use it without pulling in @kubernetes/client-node.
 */

export interface BackoffOptions {
  /** Delay after the first failure (ms). */
  initialMs: number;
  /** Upper bound of any delay (ms). */
  maxMs: number;
  /**
   * Fraction of the delay that is randomised (0 = none, 0.5 = the delay is drawn from [d/2, d]).
   * Jitter keeps many clients that failed together from retrying together.
   */
  jitter?: number;
}

/** Throws unless the options describe a usable backoff. */
export function validateBackoff(what: string, { initialMs, maxMs, jitter = 0 }: BackoffOptions): void {
  if (!Number.isFinite(initialMs) || initialMs <= 0) {
    throw new Error(`${what}: initialMs must be a positive number of milliseconds (got ${initialMs})`);
  }
  if (!Number.isFinite(maxMs) || maxMs < initialMs) {
    throw new Error(`${what}: maxMs must be a number ≥ initialMs (got ${maxMs}, initialMs ${initialMs})`);
  }
  if (!Number.isFinite(jitter) || jitter < 0 || jitter > 1) {
    throw new Error(`${what}: jitter must be between 0 and 1 (got ${jitter})`);
  }
}

/**
 * The delay before retry number `attempt` (1 = after the first failure): initialMs · 2^(attempt-1),
 * capped at maxMs, then reduced by up to `jitter` of itself at random.
 */
export function backoffDelay(
  attempt: number,
  { initialMs, maxMs, jitter = 0 }: BackoffOptions,
  random: () => number = Math.random,
): number {
  const exponent = Math.max(0, Math.min(attempt - 1, 52));
  const capped = Math.min(maxMs, initialMs * 2 ** exponent);
  return capped - capped * jitter * random();
}

/** Resolves after `ms`, or at once when `signal` aborts (never rejects). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) {
      resolve();
      return;
    }
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, ms));
    signal?.addEventListener('abort', done, { once: true });
  });
}

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** The structured log callback the kube helpers (informer, leader elector, work queue) accept. */
export type KubeLog = (level: LogLevel, msg: string, fields?: Record<string, unknown>) => void;

export const silentLog: KubeLog = () => {};
