/**
 * What a drain waits on once it evicts: the pods it waits for (drain.waitFor) to finish or reach their
 * wait's end, every evicted pod really gone (same UID), then their volumes detached from the node.
 */
import {
  type CoreV1Api,
  type KubeConfig,
  type StorageV1Api,
  type V1Pod,
  Watch,
} from '@kubernetes/client-node';
import { sleep } from '../kube/backoff.ts';
import { describeError, statusCode } from '../kube/errors.ts';
import type { DrainOptions } from './options.ts';
import { isFinished, pastDeleteTimeout } from './plan.ts';
import { podsOnNode } from './plan-reads.ts';
import type { PodState, ProgressTracker } from './progress.ts';
import { claimsOf, stillAttached } from './volumes.ts';
import { describeWait, waitsDue } from './wait-for.ts';
import type { WaitingReport } from './waiting-report.ts';

/** A re-list catches deletions a broken watch missed. */
export const RESYNC_MS = 5000;
/** How often pods being deleted are checked against skipWaitForDeleteTimeout. */
const SKIP_WAIT_CHECK_MS = 1000;
/** How often the node's VolumeAttachments are read while evicted pods' volumes detach. */
const DETACH_POLL_MS = 1000;

/**
 * Waits for the pods the plan leaves running (waitFor): says which and until when at once and whenever
 * that changes, evicts each whose wait ended under Evict, and fails the drain (`fail`) when one's wait
 * ended under Fail. They finish or go as the pod watch (waitGone) sees them.
 */
export async function waitForPods(
  tracker: ProgressTracker,
  signal: AbortSignal,
  report: WaitingReport,
  evict: (pods: PodState[]) => Promise<void>,
  fail: (pods: PodState[]) => void,
): Promise<void> {
  const evictions: Promise<void>[] = [];
  try {
    while (!signal.aborted) {
      const waited = tracker.waitedFor();
      report.pods(waited.map((p) => describeWait(p, p.wait)));
      if (waited.length === 0) return;
      const due = waitsDue(waited, Date.now());
      if (due.fail.length > 0) {
        fail(waited.filter((p) => due.fail.includes(p.uid)));
        return;
      }
      const released = due.evict.flatMap((uid) => tracker.release(uid) ?? []);
      if (released.length > 0) {
        evictions.push(evict(released));
        continue;
      }
      await Promise.race([tracker.changed(), sleep((due.nextAt ?? Date.now()) - Date.now(), signal)]);
    }
  } finally {
    await Promise.all(evictions);
  }
}

/**
 * Marks pods gone as the watch reports their deletion (or a new UID under their name); a periodic
 * re-list covers a watch that broke. Stops waiting for a pod whose deletion is older than
 * skipWaitForDeleteTimeout. Resolves when nothing is left.
 */
export async function waitGone(
  kubeconfig: KubeConfig,
  core: CoreV1Api,
  node: string,
  tracker: ProgressTracker,
  options: DrainOptions,
  signal: AbortSignal,
): Promise<void> {
  const watch = new Watch(kubeconfig);
  let watching: AbortController | undefined;
  // When each pod's deletion began (its deletionTimestamp), as the watch and the re-lists saw it.
  const deleting = new Map<string, string | Date>();
  const seen = (pod: V1Pod) => {
    const uid = pod.metadata?.uid;
    const at = pod.metadata?.deletionTimestamp;
    if (uid && at) deleting.set(uid, at);
    if (uid && isFinished(pod)) tracker.finished(uid);
  };
  const skipPastTimeout = () => {
    const now = new Date();
    for (const uid of tracker.waitingUids()) {
      const at = deleting.get(uid);
      const reason = at && pastDeleteTimeout(at, now, options.skipWaitForDeleteTimeoutSeconds);
      if (reason) tracker.abandon(uid, reason);
    }
  };
  const resync = async () => {
    const pods = await podsOnNode(core, node);
    for (const p of pods) seen(p);
    const present = new Set(pods.map((p) => p.metadata?.uid));
    for (const uid of tracker.waitingUids()) if (!present.has(uid)) tracker.gone(uid);
  };
  const startWatch = async () => {
    if (signal.aborted || tracker.left() === 0) return;
    try {
      watching = await watch.watch(
        '/api/v1/pods',
        { fieldSelector: `spec.nodeName=${node}`, allowWatchBookmarks: true },
        (type, obj: V1Pod) => {
          if (type === 'DELETED' && obj.metadata?.uid) tracker.gone(obj.metadata.uid);
          else seen(obj);
        },
        () => {
          watching = undefined;
        },
      );
    } catch {
      watching = undefined;
    }
  };
  try {
    await startWatch();
    // Deletions between the pod list and the watch's start are only visible to a list.
    await resync();
    while (!signal.aborted && tracker.left() > 0) {
      skipPastTimeout();
      if (tracker.left() === 0) break;
      // With skipWaitForDeleteTimeout, look again each second: a deletion may pass it between events.
      const every = options.skipWaitForDeleteTimeoutSeconds > 0 ? SKIP_WAIT_CHECK_MS : RESYNC_MS;
      await Promise.race([tracker.changed(), sleep(every, signal)]);
      if (signal.aborted || tracker.left() === 0) break;
      if (tracker.sinceChangeMs() >= RESYNC_MS) {
        await resync().catch(() => {});
        if (!watching) await startWatch();
      }
    }
  } finally {
    watching?.abort();
  }
}

/**
 * The PersistentVolume bound to each claim the pods mount ("namespace/claim" → volume), read before they
 * are evicted: a generic ephemeral volume's claim belongs to its pod and is deleted with it. A claim that
 * does not exist or is not bound yet is left out (waitDetached reads it again).
 */
export async function claimVolumes(
  core: CoreV1Api,
  node: string,
  pods: readonly V1Pod[],
): Promise<Map<string, string>> {
  const volumes = new Map<string, string>();
  for (const claim of claimsOf(pods)) {
    const volume = await boundVolume(core, node, claim);
    if (volume) volumes.set(claim, volume);
  }
  return volumes;
}

async function boundVolume(core: CoreV1Api, node: string, claim: string): Promise<string | undefined> {
  const [namespace, name] = claim.split('/') as [string, string];
  const pvc = await core.readNamespacedPersistentVolumeClaim({ namespace, name }).catch((err) => {
    if (statusCode(err) === 404) return undefined;
    throw new Error(`reading PersistentVolumeClaim ${claim} of a pod on ${node}: ${describeError(err)}`);
  });
  return pvc?.spec?.volumeName || undefined;
}

/**
 * Waits until no VolumeAttachment holds a PersistentVolume of the evicted pods on the node; returns
 * those still attached when the signal ends the wait. `known`: the claims' volumes read before the
 * evictions (claimVolumes); a claim not among them is read now. A node without such volumes reads nothing.
 */
export async function waitDetached(
  core: CoreV1Api,
  storage: StorageV1Api,
  node: string,
  evicted: V1Pod[],
  signal: AbortSignal,
  known: ReadonlyMap<string, string> = new Map(),
) {
  const claims = claimsOf(evicted);
  if (claims.length === 0) return [];
  const volumes = new Set<string>();
  for (const claim of claims) {
    const volume = known.get(claim) ?? (await boundVolume(core, node, claim));
    if (volume) volumes.add(volume);
  }
  for (;;) {
    // resourceVersion 0: the API server's watch cache answers, not etcd (every draining node asks).
    const list = await storage.listVolumeAttachment({ resourceVersion: '0' }).catch((err: unknown) => {
      throw new Error(`reading the VolumeAttachments of ${node}: ${describeError(err)}`);
    });
    const attached = stillAttached(list.items, node, volumes);
    if (attached.length === 0 || signal.aborted) return attached;
    await sleep(DETACH_POLL_MS, signal);
  }
}
