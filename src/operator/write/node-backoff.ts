/**
 * A node whose write failed is left alone for a backoff that grows with each failure in a row, so one bad
 * node never becomes a write storm; the next write of it that lands ends the backoff.
 */
import { backoffDelay } from '../../kube/backoff.ts';

const HOLD_BACK = { initialMs: 1000, maxMs: 300_000 } as const;

export class NodeBackoff {
  readonly #held = new Map<string, { failures: number; until: number }>();

  /** One more failed write of the node: its failures in a row, and how long it is left alone. */
  failed(name: string): { failures: number; delayMs: number } {
    const failures = (this.#held.get(name)?.failures ?? 0) + 1;
    const delayMs = Math.round(backoffDelay(failures, HOLD_BACK));
    this.#held.set(name, { failures, until: performance.now() + delayMs });
    return { failures, delayMs };
  }

  /** A write of the node landed: its backoff, if any, is over. */
  landed(name: string): void {
    this.#held.delete(name);
  }

  /** The node is still being left alone. */
  holds(name: string): boolean {
    const held = this.#held.get(name);
    return held !== undefined && performance.now() < held.until;
  }

  clear(): void {
    this.#held.clear();
  }
}
