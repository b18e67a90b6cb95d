/**
 * The pod-level opt-out: a pod annotated `nuo.dev/do-not-disrupt` ("true", or a Go duration from the
 * pod's start, e.g. "4h") keeps nuo from starting an attempt on its node while it holds; the rest of the
 * pool goes on. The pods of nodes waiting for a reboot are read in the background (a pass never waits on
 * a pod list), each at most every REREAD_MS, the longest-waiting first; a node whose pods were not read
 * yet waits for that read (fail closed). A value that is neither is taken as "true", and the reason names
 * it: a typo must not let the node be disrupted. The same reads count the pods a drain would evict, for
 * the first wave's order (decide.ts firstWavePods).
 */
import type { CoreV1Api, V1Pod } from '@kubernetes/client-node';
import { PodAnnotations } from '../../api/keys.ts';
import { type PodHold, podHold } from '../../drain/do-not-disrupt.ts';
import type { KubeLog } from '../../kube/backoff.ts';
import { describeError } from '../../kube/errors.ts';
import type { Wait } from '../decide/wait.ts';
import { PodReads, tooOld } from './pod-reads.ts';

/** Pod lists in flight. */
const READERS = 8;
/** Reads started per pass at most: the longest-waiting nodes first, the rest in later passes. */
const READS_PER_PASS = 64;
/** A waiting node's pods are read again after this long. */
const REREAD_MS = 30_000;
/** A read that failed is tried again after this long (the node waits for it, and so do those behind it). */
const RETRY_MS = 2_000;
/** A waiting node whose pods were last read longer ago (the reads since failed) waits as one not read. */
const MAX_AGE_MS = 2 * REREAD_MS;
/** Why `pods` keep their node from being disrupted at `now`, and until when; undefined when nothing does. */
export function doNotDisrupt(pods: readonly V1Pod[], now: number): Wait | undefined {
  let hold: PodHold | undefined;
  for (const pod of pods) {
    const h = podHold(pod, now);
    if (h && !(hold && hold.until >= h.until)) hold = h;
  }
  if (!hold) return undefined;
  const reason = `waiting: ${hold.reason}`;
  return Number.isFinite(hold.until) ? { reason, until: hold.until } : { reason };
}

/**
 * A pod a drain would evict, as far as the first wave's order needs to know: not a DaemonSet's, not a
 * static pod's mirror, not finished.
 */
export function evictable(pod: V1Pod): boolean {
  if (pod.metadata?.ownerReferences?.some((r) => r.controller && r.kind === 'DaemonSet')) return false;
  if (pod.metadata?.annotations?.['kubernetes.io/config.mirror'] !== undefined) return false;
  return pod.status?.phase !== 'Succeeded' && pod.status?.phase !== 'Failed';
}

/** What a node's read keeps: the pods that opt out (only what the hold needs) and how many a drain evicts. */
interface NodePods {
  optOuts: V1Pod[];
  evictable: number;
}

/**
 * Only what the hold and the first wave's order need of a node's pods: thousands of waiting nodes' whole
 * pod lists would not fit.
 */
function nodePods(pods: readonly V1Pod[]): NodePods {
  const optOuts = pods
    .filter((p) => p.metadata?.annotations?.[PodAnnotations.doNotDisrupt] !== undefined)
    .map((p) => ({
      metadata: {
        name: p.metadata?.name,
        namespace: p.metadata?.namespace,
        annotations: {
          [PodAnnotations.doNotDisrupt]: p.metadata?.annotations?.[PodAnnotations.doNotDisrupt] ?? '',
        },
      },
      status: { phase: p.status?.phase, startTime: p.status?.startTime },
    }));
  return { optOuts, evictable: pods.filter(evictable).length };
}

export class DoNotDisruptReads {
  readonly #reads: PodReads<NodePods>;

  constructor(o: { core: CoreV1Api; log: KubeLog; onRead: () => void }) {
    this.#reads = new PodReads({
      core: o.core,
      readers: READERS,
      summarize: nodePods,
      onError: (node, err) =>
        o.log('warn', `reading pods for ${PodAnnotations.doNotDisrupt} failed; will retry`, {
          node,
          error: describeError(err),
        }),
      onRead: o.onRead,
    });
  }

  /**
   * Each waiting node's hold, as its pods were last read (a node not read yet: a hold until it is);
   * starts the reads that are due. `waiting`: the nodes that may be admitted, longest-waiting first.
   */
  holds(waiting: readonly string[], now: number): Map<string, Wait> {
    this.#reads.keepOnly(new Set(waiting));
    const holds = new Map<string, Wait>();
    let started = 0;
    for (const name of waiting) {
      const read = this.#reads.get(name);
      const due =
        !read || (!read.running && performance.now() - read.at >= (read.failed ? RETRY_MS : REREAD_MS));
      if (due && started < READS_PER_PASS) {
        started++;
        this.#reads.read(name);
      }
      if (!read?.value) {
        holds.set(name, {
          reason: `waiting: its pods are being checked for ${PodAnnotations.doNotDisrupt}`,
          holdsLine: true,
        });
        continue;
      }
      if (tooOld(read, MAX_AGE_MS, performance.now())) {
        holds.set(name, {
          reason: `waiting: its pods' last reading for ${PodAnnotations.doNotDisrupt} is older than ${MAX_AGE_MS / 1000} s (the reads since failed; retried)`,
          holdsLine: true,
        });
        continue;
      }
      const hold = doNotDisrupt(read.value.optOuts, now);
      if (hold) holds.set(name, hold);
    }
    return holds;
  }

  /** How many pods a drain of the waiting node would evict, as last read; undefined: not read yet. */
  evictablePods(name: string): number | undefined {
    return this.#reads.get(name)?.value?.evictable;
  }

  /** The node's pods are read afresh before it may be admitted again (its last read is stale). */
  forget(name: string): void {
    this.#reads.forget(name);
  }

  /** A new leadership reads afresh. */
  clear(): void {
    this.#reads.clear();
  }
}
