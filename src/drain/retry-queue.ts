/**
 * The eviction queue: items become due at their `notBefore` time; an item a PodDisruptionBudget
 * refused is woken early when that PDB allows a disruption again, instead of waiting out its backoff
 * (kubectl waits a fixed 5 s after every 429).
 */
import { sleep } from '../kube/backoff.ts';

export interface QueueItem<T> {
  value: T;
  notBefore: number;
  delay: number;
  /** "namespace/name" of the PDB that last refused it. */
  pdb?: string;
}

export class RetryQueue<T> {
  readonly #items: QueueItem<T>[] = [];
  #kick: (() => void) | undefined;

  constructor(values: T[], firstDelayMs: number) {
    for (const value of values) this.#items.push({ value, notBefore: 0, delay: firstDelayMs });
  }

  get size(): number {
    return this.#items.length;
  }

  push(item: QueueItem<T>): void {
    this.#items.push(item);
    this.#wakeAll();
  }

  /** Makes every item blocked by `pdb` due now. */
  wake(pdb: string): void {
    let woke = false;
    for (const item of this.#items) {
      if (item.pdb === pdb && item.notBefore > Date.now()) {
        item.notBefore = 0;
        woke = true;
      }
    }
    if (woke) this.#wakeAll();
  }

  /** The earliest due item, waiting for it if needed; undefined once empty or aborted. */
  async take(signal: AbortSignal): Promise<QueueItem<T> | undefined> {
    while (!signal.aborted && this.#items.length > 0) {
      let earliest = 0;
      for (let i = 1; i < this.#items.length; i++) {
        if ((this.#items[i] as QueueItem<T>).notBefore < (this.#items[earliest] as QueueItem<T>).notBefore) {
          earliest = i;
        }
      }
      const wait = (this.#items[earliest] as QueueItem<T>).notBefore - Date.now();
      if (wait <= 0) return this.#items.splice(earliest, 1)[0];
      await this.#sleep(wait, signal);
    }
    return undefined;
  }

  /** Sleeps until `ms` passed, the signal aborts, or a push or wake makes an item due. */
  #sleep(ms: number, signal: AbortSignal): Promise<void> {
    const previous = this.#kick;
    const kicked = new AbortController();
    this.#kick = () => {
      previous?.();
      kicked.abort();
    };
    return sleep(ms, AbortSignal.any([signal, kicked.signal]));
  }

  #wakeAll(): void {
    const kick = this.#kick;
    this.#kick = undefined;
    kick?.();
  }
}
