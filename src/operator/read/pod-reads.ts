/**
 * Background reads of the pods on nodes, one cache per gate that needs them: a pass takes what was last
 * read and starts the reads that are due, and never waits on a pod list. Each read keeps only what
 * `summarize` makes of the pods (thousands of nodes' whole pod lists would not fit), and each that ends
 * asks for a pass (`onRead`). A read that takes longer than POD_READ_TIMEOUT_MS fails: a hung list
 * must not keep the last answer in force, and each value says when it was read (`valueAt`) so that its
 * users can refuse one too old (tooOld).
 */
import type { CoreV1Api, V1Pod } from '@kubernetes/client-node';
import { podsOnNode } from '../../drain/plan-reads.ts';
import { settledBy, withSignal } from '../../kube/request-signal.ts';
import { Limiter } from '../../util/parallel.ts';

/** How long one read of a node's pods may take before it counts as failed. */
export const POD_READ_TIMEOUT_MS = 10_000;

/** A node's latest read. */
export interface PodRead<T> {
  /** What the last read that succeeded made of the pods; undefined until one has. */
  value?: T;
  /** performance.now() when `value` was read (the read that succeeded ended). */
  valueAt?: number;
  /** performance.now() when the last read ended (0 before the first). */
  at: number;
  /** The last read failed: `value`, if any, is older. */
  failed: boolean;
  running: boolean;
}

/** Whether a read's value is older than `maxAgeMs` at `now` (monotonic), or missing. Pure. */
export function tooOld(
  read: Pick<PodRead<unknown>, 'valueAt'> | undefined,
  maxAgeMs: number,
  now: number,
): boolean {
  return read?.valueAt === undefined || now - read.valueAt > maxAgeMs;
}

export class PodReads<T> {
  readonly #core: CoreV1Api;
  readonly #summarize: (pods: V1Pod[]) => T;
  readonly #onError: (node: string, err: unknown) => void;
  readonly #onRead: () => void;
  readonly #readers: Limiter;
  readonly #reads = new Map<string, PodRead<T>>();

  constructor(o: {
    core: CoreV1Api;
    /** Pod lists in flight at most. */
    readers: number;
    summarize: (pods: V1Pod[]) => T;
    onError: (node: string, err: unknown) => void;
    onRead: () => void;
  }) {
    this.#core = o.core;
    this.#summarize = o.summarize;
    this.#onError = o.onError;
    this.#onRead = o.onRead;
    this.#readers = new Limiter(o.readers);
  }

  get(name: string): PodRead<T> | undefined {
    return this.#reads.get(name);
  }

  /** Forgets every node not in `names`: a node that comes back is read afresh. */
  keepOnly(names: ReadonlySet<string>): void {
    for (const name of this.#reads.keys()) if (!names.has(name)) this.#reads.delete(name);
  }

  /** Starts a read of the node's pods. */
  read(name: string): void {
    const read = this.#reads.get(name) ?? { at: 0, failed: false, running: false };
    read.running = true;
    this.#reads.set(name, read);
    void this.#readers
      .run(async () => {
        const signal = AbortSignal.timeout(POD_READ_TIMEOUT_MS);
        const pods = await settledBy(
          podsOnNode(this.#core, name, '', undefined, withSignal(signal, POD_READ_TIMEOUT_MS)),
          signal,
        );
        read.value = this.#summarize(pods);
        read.valueAt = performance.now();
      })
      .then(
        () => {
          read.failed = false;
        },
        (err) => {
          read.failed = true;
          this.#onError(name, err);
        },
      )
      .finally(() => {
        read.at = performance.now();
        read.running = false;
        this.#onRead();
      });
  }

  /** The node's pods are read afresh before they count again. */
  forget(name: string): void {
    this.#reads.delete(name);
  }

  /** A new leadership reads afresh. */
  clear(): void {
    this.#reads.clear();
  }
}
