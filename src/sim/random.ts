/**
 * A small seeded pseudo-random generator for the chaos runner: the same seed gives the same sequence on
 * every machine and Node.js version (unlike Math.random), so a failing run's plan can be replayed exactly.
 *
 * mulberry32 (Tommy Ettinger, public domain): 32 bits of state, full period 2^32, good enough statistical
 * quality for choosing faults and timings. Not for anything cryptographic.
 */

/** Returns a generator of floats in [0, 1) determined by `seed` (any integer; taken modulo 2^32). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Convenience draws over one generator; every draw consumes exactly one value of the sequence. */
export class Random {
  readonly #next: () => number;

  constructor(seed: number) {
    this.#next = mulberry32(seed);
  }

  /** A float in [0, 1). */
  float(): number {
    return this.#next();
  }

  /** An integer in [min, max], both inclusive. */
  int(min: number, max: number): number {
    if (!(Number.isInteger(min) && Number.isInteger(max) && min <= max)) {
      throw new Error(`Random.int: need integers min ≤ max, got ${min}, ${max}`);
    }
    return min + Math.floor(this.#next() * (max - min + 1));
  }

  /** A float in [min, max). */
  between(min: number, max: number): number {
    return min + this.#next() * (max - min);
  }

  /** True with probability p. */
  chance(p: number): boolean {
    return this.#next() < p;
  }

  /** One element of a non-empty array. */
  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('Random.pick: empty array');
    return items[this.int(0, items.length - 1)] as T;
  }
}
