/**
 * Wraps a Rebooter to catch reboots that were accepted but never happened (logind refused later, systemd
 * hung, a signal was ignored). If this process is still running `timeoutMs` after reboot() resolved, the
 * host did not go down: `onMissed` is called once so the agent can write that on its node, and further
 * reboot() calls are refused until reset() — a reboot that did not happen is reported, never retried in a
 * loop (safety rule 6). If the host does reboot, the process dies with it and nothing is reported.
 */
import type { Rebooter } from '../os.ts';

export interface MissedReboot {
  rebooter: string;
  requestedAt: Date;
  timeoutMs: number;
  message: string;
}

export interface RebootDeadlineOptions {
  timeoutMs: number;
  /** Called once when the deadline passes; may be async; its errors are swallowed. */
  onMissed: (missed: MissedReboot) => void | Promise<void>;
}

export const DeadlineState = {
  idle: 'idle',
  /** reboot() was accepted; waiting for the host to go down. */
  pending: 'pending',
  /** The deadline passed with the host still up; reboot() is refused until reset(). */
  missed: 'missed',
} as const;
export type DeadlineState = (typeof DeadlineState)[keyof typeof DeadlineState];

export class RebootDeadline implements Rebooter {
  readonly name: string;
  readonly inner: Rebooter;
  readonly timeoutMs: number;
  readonly #onMissed: RebootDeadlineOptions['onMissed'];
  #state: DeadlineState = DeadlineState.idle;
  #timer: NodeJS.Timeout | undefined;
  #requestedAt: Date | undefined;

  constructor(inner: Rebooter, options: RebootDeadlineOptions) {
    if (!inner || typeof inner.reboot !== 'function')
      throw new Error('reboot deadline: a rebooter is required');
    const { timeoutMs, onMissed } = options ?? {};
    if (typeof timeoutMs !== 'number' || !Number.isInteger(timeoutMs) || timeoutMs <= 0) {
      throw new Error(
        `reboot deadline: timeoutMs must be a positive integer, got ${JSON.stringify(timeoutMs)}`,
      );
    }
    if (typeof onMissed !== 'function') throw new Error('reboot deadline: onMissed must be a function');
    this.inner = inner;
    this.name = inner.name;
    this.timeoutMs = timeoutMs;
    this.#onMissed = onMissed;
  }

  get state(): DeadlineState {
    return this.#state;
  }

  get requestedAt(): Date | undefined {
    return this.#requestedAt;
  }

  async reboot(): Promise<void> {
    if (this.#state === DeadlineState.pending) {
      const since = this.#requestedAt ? ` at ${this.#requestedAt.toISOString()}` : '';
      throw new Error(`a reboot through ${this.name} was already requested${since} and is pending`);
    }
    if (this.#state === DeadlineState.missed) {
      throw new Error(
        `the reboot requested through ${this.name} at ${this.#requestedAt?.toISOString()} did not happen within ${this.timeoutMs} ms; not retrying (reset() allows another attempt)`,
      );
    }
    this.#state = DeadlineState.pending;
    this.#requestedAt = undefined;
    try {
      await this.inner.reboot();
    } catch (err) {
      this.#state = DeadlineState.idle;
      throw err;
    }
    const requestedAt = new Date();
    this.#requestedAt = requestedAt;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#state = DeadlineState.missed;
      const missed: MissedReboot = {
        rebooter: this.name,
        requestedAt,
        timeoutMs: this.timeoutMs,
        message: `reboot requested through ${this.name} at ${requestedAt.toISOString()} did not happen within ${this.timeoutMs} ms`,
      };
      Promise.resolve()
        .then(() => this.#onMissed(missed))
        .catch(() => {});
    }, this.timeoutMs);
    // The deadline watches a running agent; it never keeps a stopping one alive (SIGTERM after a reboot
    // request would otherwise wait out the whole timeout, 10 min by default).
    this.#timer.unref();
  }

  /** Forgets a pending or missed reboot (e.g. once the agent recorded it and a person asked again). */
  reset(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#state = DeadlineState.idle;
    this.#requestedAt = undefined;
  }
}
