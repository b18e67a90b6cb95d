/**
 * Runs `fn` over `items` with at most `limit` calls in flight. Every item is attempted even after a
 * failure (the others are independent writes that should still land); then the first error is thrown.
 */
export async function inParallel<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  if (!(limit >= 1)) throw new Error(`inParallel: limit must be ≥ 1, got ${limit}`);
  let next = 0;
  const errors: unknown[] = [];
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++] as T;
      try {
        await fn(item);
      } catch (err) {
        errors.push(err);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (errors.length > 0) throw errors[0];
}

/**
 * At most `limit` tasks running at once; the rest wait in order. For work started from many places
 * (each reconcile pass starts node steps without waiting for the last pass's) that must still be
 * bounded as one.
 */
export class Limiter {
  readonly #limit: number;
  #running = 0;
  readonly #waiting: Array<() => void> = [];

  constructor(limit: number) {
    if (!(Number.isInteger(limit) && limit >= 1))
      throw new Error(`Limiter: limit must be an integer ≥ 1, got ${limit}`);
    this.#limit = limit;
  }

  get running(): number {
    return this.#running;
  }

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#running >= this.#limit) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    else this.#running++;
    try {
      return await fn();
    } finally {
      // Hand the slot straight to the next in line (the count stays), or give it back.
      const next = this.#waiting.shift();
      if (next) next();
      else this.#running--;
    }
  }
}
