/**
 * The drain planner: what to do with each pod on a node, decided from the pods alone (no I/O), with the
 * filters of `kubectl drain` in its order: already-deleted, mirror, DaemonSet, local storage, unmanaged;
 * after the mirror check, a pod that asks not to be disrupted now (nuo.dev/do-not-disrupt) refuses.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { Kubernetes } from '../api/keys.ts';
import { podHold } from './do-not-disrupt.ts';
import type { DrainOptions } from './options.ts';
import { type PodWait, type WaitInput, waitOf } from './wait-for.ts';

export const PodAction = {
  /** Evict (or delete, with disableEviction) and wait until it is gone. */
  evict: 'evict',
  /** Already terminating: no eviction, but the drain waits until it is gone. */
  wait: 'wait',
  /** Left in place; does not block the drain. */
  skip: 'skip',
  /** Blocks the whole drain: nothing is evicted until the options allow it. */
  refuse: 'refuse',
  /** Left running until it finishes or its wait ends (drain.waitFor, wait-for.ts); then evicted, or the drain fails. */
  waitFor: 'waitFor',
} as const;
export type PodAction = (typeof PodAction)[keyof typeof PodAction];

export interface PodDecision {
  namespace: string;
  name: string;
  uid: string;
  action: PodAction;
  /** Why, for skip/refuse and for evictions that override a safety check (force, emptyDir). */
  reason?: string;
  /** Refused because the pod asks not to be disrupted now (nuo.dev/do-not-disrupt), not for the options. */
  doNotDisrupt?: true;
  /** The pod's priority (spec.priority, from its PriorityClass) when it has one: lower tiers go first. */
  priority?: number;
  /** For waitFor: the rule that matched and until when. */
  wait?: PodWait;
}

export interface DrainPlan {
  decisions: PodDecision[];
  /** True when no pod refuses: the drain may start evicting. */
  canProceed: boolean;
  /** True when the only pods that refuse ask not to be disrupted now: the drain waits, nothing failed. */
  held: boolean;
}

export interface PlanInput {
  pods: V1Pod[];
  options: Pick<
    DrainOptions,
    'force' | 'ignoreDaemonSets' | 'deleteEmptyDirData' | 'skipWaitForDeleteTimeoutSeconds'
  >;
  /** "namespace/name" of the DaemonSets that exist; a pod of a missing one is an orphan. */
  daemonSets: ReadonlySet<string>;
  now: Date;
  /** Pods to wait for instead of evicting; only pods the options would evict are waited for. */
  waitFor?: WaitInput;
}

export const Reasons = {
  finished: 'pod has finished (Succeeded/Failed); it holds no resources',
  mirror: 'mirror pod of a static pod: the kubelet owns it and it cannot be evicted',
  daemonSet: 'DaemonSet-managed: the DaemonSet would recreate it on this node',
  daemonSetRefused: 'DaemonSet-managed (use ignoreDaemonSets / --ignore-daemonsets to leave it in place)',
  orphanDaemonSetRefused: 'its DaemonSet no longer exists (use force / --force to delete it)',
  orphanDaemonSetForced: 'its DaemonSet no longer exists; evicting because of force',
  localStorageRefused:
    'uses emptyDir local storage (use deleteEmptyDirData / --delete-emptydir-data to evict it; the data is lost)',
  localStorageDeleted: 'uses emptyDir local storage; its data is lost',
  unmanagedRefused:
    'declares no controller: nothing would recreate it (use force / --force to evict it anyway)',
  unmanagedForced: 'declares no controller; evicting because of force',
  terminating: 'already terminating',
} as const;

/** Succeeded or Failed: the pod's containers have stopped for good. */
export function isFinished(pod: V1Pod): boolean {
  return pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';
}

function controllerOf(pod: V1Pod) {
  return pod.metadata?.ownerReferences?.find((ref) => ref.controller === true);
}

/**
 * Why the drain stops waiting for a pod being deleted, as kubectl's --skip-wait-for-delete-timeout: its
 * deletionTimestamp (the end of its grace period) is more than `seconds` ago, e.g. a finalizer nobody
 * removes; undefined while it is waited for (always, with 0). Checked when the drain plans and again
 * while it waits for the pods it evicted.
 */
export function pastDeleteTimeout(deletedAt: Date | string, now: Date, seconds: number): string | undefined {
  const ageSeconds = (now.getTime() - new Date(deletedAt).getTime()) / 1000;
  if (seconds <= 0 || ageSeconds <= seconds) return undefined;
  return `terminating for ${Math.floor(ageSeconds)}s, longer than skipWaitForDeleteTimeout (${seconds}s)`;
}

/** Decides one pod: the first filter that does not simply allow eviction settles it. */
export function decidePod(
  pod: V1Pod,
  input: Omit<PlanInput, 'pods'>,
): Omit<PodDecision, 'namespace' | 'name' | 'uid'> {
  const { options, daemonSets, now } = input;
  const deletedAt = pod.metadata?.deletionTimestamp;
  if (deletedAt) {
    const skip = pastDeleteTimeout(deletedAt, now, options.skipWaitForDeleteTimeoutSeconds);
    return skip
      ? { action: PodAction.skip, reason: skip }
      : { action: PodAction.wait, reason: Reasons.terminating };
  }
  if (isFinished(pod)) return { action: PodAction.skip, reason: Reasons.finished };
  if (pod.metadata?.annotations?.[Kubernetes.mirrorPod] !== undefined) {
    return { action: PodAction.skip, reason: Reasons.mirror };
  }
  // Read again here: the pod may have asked after its node was admitted, from data up to a pass old.
  const hold = podHold(pod, now.getTime());
  if (hold) return { action: PodAction.refuse, reason: hold.reason, doNotDisrupt: true };
  let override: string | undefined;
  const controller = controllerOf(pod);
  if (controller?.kind === 'DaemonSet') {
    if (!daemonSets.has(`${pod.metadata?.namespace}/${controller.name}`)) {
      if (!options.force) return { action: PodAction.refuse, reason: Reasons.orphanDaemonSetRefused };
      override = Reasons.orphanDaemonSetForced;
    } else if (options.ignoreDaemonSets) {
      return { action: PodAction.skip, reason: Reasons.daemonSet };
    } else {
      return { action: PodAction.refuse, reason: Reasons.daemonSetRefused };
    }
  }
  if (pod.spec?.volumes?.some((v) => v.emptyDir !== undefined)) {
    if (!options.deleteEmptyDirData) return { action: PodAction.refuse, reason: Reasons.localStorageRefused };
    override ??= Reasons.localStorageDeleted;
  }
  if (!controller) {
    if (!options.force) return { action: PodAction.refuse, reason: Reasons.unmanagedRefused };
    override ??= Reasons.unmanagedForced;
  }
  return override ? { action: PodAction.evict, reason: override } : { action: PodAction.evict };
}

/**
 * Decides every pod. A pod that a waitFor rule matches and that would be evicted is waited for instead:
 * a pod the options refuse still refuses (after its wait it may have to be evicted), and one that asks
 * not to be disrupted still holds the drain.
 */
export function planDrain(input: PlanInput): DrainPlan {
  const decisions = input.pods.map((pod): PodDecision => {
    let decided = decidePod(pod, input);
    const wait = decided.action === PodAction.evict && input.waitFor ? waitOf(pod, input.waitFor) : undefined;
    if (wait) decided = { ...decided, action: PodAction.waitFor, wait };
    return {
      namespace: pod.metadata?.namespace ?? '',
      name: pod.metadata?.name ?? '',
      uid: pod.metadata?.uid ?? '',
      ...decided,
      ...(pod.spec?.priority === undefined ? {} : { priority: pod.spec.priority }),
    };
  });
  const refused = decisions.filter((d) => d.action === PodAction.refuse);
  return {
    decisions,
    canProceed: refused.length === 0,
    held: refused.length > 0 && refused.every((d) => d.doNotDisrupt),
  };
}

/**
 * The pods to evict in tiers of equal priority, lowest first (no priority reads as 0, the API server's
 * default): each tier is evicted and gone before the next, so system-node-critical and
 * system-cluster-critical pods go last, as the kubelet's graceful node shutdown orders them.
 */
export function evictionTiers<T extends { priority?: number }>(pods: readonly T[]): T[][] {
  const tiers = new Map<number, T[]>();
  for (const pod of pods) {
    const p = pod.priority ?? 0;
    tiers.set(p, [...(tiers.get(p) ?? []), pod]);
  }
  return [...tiers.entries()].sort(([a], [b]) => a - b).map(([, tier]) => tier);
}
