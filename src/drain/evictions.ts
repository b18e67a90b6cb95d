/**
 * A drain's evictions: through the Eviction API (or a plain delete with disableEviction), a bounded
 * number in flight, tier by tier, a refused pod retried with backoff or as soon as its PDB allows. Each
 * pod is read again before each eviction (eviction-check.ts): one that asks not to be disrupted now holds
 * the drain.
 */
import {
  type CoreV1Api,
  type KubeConfig,
  type V1Pod,
  type V1PodDisruptionBudget,
  Watch,
} from '@kubernetes/client-node';
import { sleep } from '../kube/backoff.ts';
import { apiStatus, describeError, statusCode } from '../kube/errors.ts';
import { checkBeforeEviction } from './eviction-check.ts';
import type { DrainOptions } from './options.ts';
import { evictionTiers } from './plan.ts';
import type { DrainEvent, PodState, ProgressTracker } from './progress.ts';
import { RetryQueue } from './retry-queue.ts';
import { RESYNC_MS } from './waits.ts';

const RETRY_MIN_MS = 250;
const RETRY_MAX_MS = 5000;

/** Eviction requests in flight now, and the most that were at once. */
export interface Flight {
  now: number;
  max: number;
}

/** What every eviction of one drain shares. */
export interface Evictions {
  kubeconfig: KubeConfig;
  core: CoreV1Api;
  tracker: ProgressTracker;
  options: DrainOptions;
  signal: AbortSignal;
  emit: (e: DrainEvent) => void;
  flight: Flight;
  /** A pod asked not to be disrupted now, read just before its eviction: the drain stops, held. */
  held: () => void;
}

/** "The disruption budget web needs 2 healthy pods and has 2 currently" → "web". */
export function blockingPdbName(err: unknown): string | undefined {
  const status = apiStatus(err);
  for (const cause of status?.details?.causes ?? []) {
    const match =
      cause.reason === 'DisruptionBudget' ? cause.message?.match(/disruption budget (\S+)/) : null;
    if (match?.[1]) return match[1];
  }
  return undefined;
}

/**
 * Evicts with at most `concurrency` requests in flight. A refused pod is retried with backoff, or as
 * soon as a watch sees its PDB allow a disruption again.
 */
export async function evictAll(pods: PodState[], drain: Evictions): Promise<void> {
  const { tracker, options, signal, emit, flight } = drain;
  let queue = new RetryQueue<PodState>([], RETRY_MIN_MS);
  const pdbWatches = new Map<string, AbortController | undefined>();
  let finished = false;
  const watchPdb = (key: string) => {
    if (pdbWatches.has(key) || signal.aborted || finished) return;
    pdbWatches.set(key, undefined);
    const [namespace, name] = key.split('/') as [string, string];
    new Watch(drain.kubeconfig)
      .watch(
        `/apis/policy/v1/namespaces/${namespace}/poddisruptionbudgets`,
        { fieldSelector: `metadata.name=${name}` },
        (_type, pdb: V1PodDisruptionBudget) => {
          if ((pdb.status?.disruptionsAllowed ?? 0) > 0) queue.wake(key);
        },
        () => pdbWatches.delete(key),
      )
      .then((controller) => {
        if (signal.aborted || finished) controller.abort();
        else pdbWatches.set(key, controller);
      })
      .catch(() => pdbWatches.delete(key));
  };
  const worker = async () => {
    for (let item = await queue.take(signal); item; item = await queue.take(signal)) {
      const pod = item.value;
      if (tracker.isDone(pod.uid)) continue;
      flight.now++;
      flight.max = Math.max(flight.max, flight.now);
      try {
        const check = checkBeforeEviction(pod.uid, await readPod(drain.core, pod), Date.now());
        if ('gone' in check) {
          tracker.gone(pod.uid);
          continue;
        }
        if ('held' in check) {
          tracker.refuse(pod.uid, check.held);
          emit({ type: 'refuse', pod: { ...pod, action: 'refuse', reason: check.held, doNotDisrupt: true } });
          drain.held();
          return;
        }
        await evictOne(drain.core, pod, options, check.evict.resourceVersion);
        tracker.evicted(pod.uid);
        emit({ type: 'evicted', pod });
      } catch (err) {
        const code = statusCode(err);
        if (code === 404) {
          tracker.gone(pod.uid);
          continue;
        }
        if (code === 409) {
          // Changed since it was read (or a new pod has its name): read again before evicting again.
          queue.push({ value: pod, notBefore: Date.now(), delay: item.delay });
          continue;
        }
        const name = code === 429 ? blockingPdbName(err) : undefined;
        const pdb = name ? `${pod.namespace}/${name}` : undefined;
        const reason =
          code === 429 ? `blocked by PodDisruptionBudget ${pdb ?? '(unnamed)'}` : describeError(err);
        tracker.blocked(pod.uid, reason, pdb);
        emit({ type: 'retry', pod, reason, refusedByPdb: code === 429, retryInMs: item.delay });
        if (pdb) watchPdb(pdb);
        queue.push({
          value: pod,
          pdb,
          notBefore: Date.now() + item.delay,
          delay: Math.min(item.delay * 2, RETRY_MAX_MS),
        });
      } finally {
        flight.now--;
      }
    }
  };
  try {
    // Lower priorities first, each tier gone before the next is evicted: the system-critical pods a
    // node's workloads lean on (DNS, storage, network agents) leave last, as kubelet shuts down.
    for (const tier of evictionTiers(pods)) {
      if (signal.aborted) return;
      queue = new RetryQueue(tier, RETRY_MIN_MS);
      await Promise.all(Array.from({ length: Math.min(options.concurrency, queue.size) }, worker));
      while (!signal.aborted && tier.some((p) => !tracker.isDone(p.uid)))
        await Promise.race([tracker.changed(), sleep(RESYNC_MS, signal)]);
    }
  } finally {
    finished = true;
    for (const controller of pdbWatches.values()) controller?.abort();
  }
}

/** The pod as it is now; undefined when it is gone. */
async function readPod(
  core: CoreV1Api,
  pod: { namespace: string; name: string },
): Promise<V1Pod | undefined> {
  try {
    return await core.readNamespacedPod({ name: pod.name, namespace: pod.namespace });
  } catch (err) {
    if (statusCode(err) === 404) return undefined;
    throw err;
  }
}

async function evictOne(
  core: CoreV1Api,
  pod: { namespace: string; name: string; uid: string },
  options: DrainOptions,
  resourceVersion: string | undefined,
): Promise<void> {
  const deleteOptions = {
    preconditions: { uid: pod.uid, ...(resourceVersion ? { resourceVersion } : {}) },
    ...(options.gracePeriodSeconds >= 0 ? { gracePeriodSeconds: options.gracePeriodSeconds } : {}),
  };
  if (options.disableEviction) {
    await core.deleteNamespacedPod({ name: pod.name, namespace: pod.namespace, body: deleteOptions });
    return;
  }
  await core.createNamespacedPodEviction({
    name: pod.name,
    namespace: pod.namespace,
    body: {
      apiVersion: 'policy/v1',
      kind: 'Eviction',
      metadata: { name: pod.name, namespace: pod.namespace },
      deleteOptions,
    },
  });
}
