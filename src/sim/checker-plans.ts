/**
 * What the independent checker reads about Plans, as pure functions of Nodes and the pods of Plans'
 * Jobs (labelled nuo.dev/plan): which nodes are in a Plan's attempt, which Plans run more nodes at once
 * than their concurrency, and whether a reboot is a Plan's own. A Plan's prepare, run before its
 * attempt, is in none.
 */
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { readClaim } from '../api/grant.ts';
import { Annotations, JobAnnotations, JobLabels, PREPARE_STAGE } from '../api/keys.ts';
import { Phase } from '../api/phases.ts';
import { inAttemptPhase } from './checker-phases.ts';

/** A Plan ("namespace/name", as nuo.dev/plan on a node names it) and at most how many nodes it may hold. */
export interface PlanBudget {
  name: string;
  max: number;
}

/**
 * A pod of a Plan's prepare Job: labelled so, and running the Plan's `prepare` container alone. It
 * disrupts nothing (SUC runs prepare before its cordon and drain): whatever it did to its node (a cordon,
 * a reboot) the checker sees as done outside any attempt. A pod labelled so that runs anything else is
 * taken as an attempt's.
 */
export function preparesOnly(pod: V1Pod): boolean {
  const containers = pod.spec?.containers ?? [];
  return (
    pod.metadata?.labels?.[JobLabels.stage] === PREPARE_STAGE &&
    (pod.spec?.initContainers ?? []).length === 0 &&
    containers.length === 1 &&
    containers[0]?.name === 'prepare'
  );
}

/**
 * The Plan ("namespace/name") whose attempt's Job `pod` belongs to: its annotation names the Plan (its
 * label too, shortened past 63 characters), its namespace is the Plan's. A prepare's pod is no attempt's.
 */
export function planOfPod(pod: V1Pod): string | undefined {
  if (!pod.metadata?.labels?.[JobLabels.plan] || preparesOnly(pod)) return undefined;
  const plan = pod.metadata?.annotations?.[JobAnnotations.plan] ?? pod.metadata?.labels?.[JobLabels.plan];
  return plan ? `${pod.metadata?.namespace ?? ''}/${plan}` : undefined;
}

const terminal = (pod: V1Pod) => pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';

/**
 * The node a Plan Job's pod disrupts now: it is bound there and has not finished (pending, running or
 * being deleted), whatever phase the node records.
 */
export function nodeOfPlanPod(pod: V1Pod): string | undefined {
  if (!planOfPod(pod) || terminal(pod)) return undefined;
  return pod.spec?.nodeName || undefined;
}

const millis = (t: Date | string | undefined) => (t === undefined ? Number.NaN : new Date(t).getTime());

/**
 * Whether a Plan Job's pod ran on its node at `at`: running now, or started by then and finished no
 * earlier. A pod's times are whole seconds, so one that finished in the second of `at` still counts: its
 * end may be written in the same second as the reboot it caused is told.
 */
export function ranAt(pod: V1Pod, at: Date): boolean {
  if (!planOfPod(pod) || !pod.spec?.nodeName) return false;
  if (pod.status?.phase === 'Running') return true;
  if (!terminal(pod) || !(millis(pod.status?.startTime) <= at.getTime())) return false;
  const second = Math.floor(at.getTime() / 1000) * 1000;
  const ends = (pod.status?.containerStatuses ?? []).map((c) => millis(c.state?.terminated?.finishedAt));
  return ends.length > 0 && ends.every((end) => end >= second);
}

/**
 * The nodes in an attempt of `plan`: those whose nuo.dev/plan names it in an attempt's phase, and those
 * running a pod of its Jobs (sorted).
 */
export function planNodes(plan: string, nodes: readonly V1Node[], pods: readonly V1Pod[]): string[] {
  const out = new Set<string>();
  for (const n of nodes) {
    if (n.metadata?.annotations?.[Annotations.plan] === plan && inAttemptPhase(n))
      out.add(n.metadata?.name ?? '');
  }
  for (const p of pods) {
    const node = planOfPod(p) === plan ? nodeOfPlanPod(p) : undefined;
    if (node) out.add(node);
  }
  return [...out].sort();
}

/** Each Plan with more nodes in its attempts at once than its `max`, and those nodes. */
export function planConcurrencyBreaches(
  plans: readonly PlanBudget[],
  nodes: readonly V1Node[],
  pods: readonly V1Pod[],
): { plan: PlanBudget; nodes: string[] }[] {
  return plans
    .map((plan) => ({ plan, nodes: planNodes(plan.name, nodes, pods) }))
    .filter((b) => b.nodes.length > b.plan.max);
}

/** Phases in which nuo has asked for the node's reboot: a reboot then is nuo's, held to its rules. */
const GRANTED_PHASES: ReadonlySet<string> = new Set([Phase.rebootGranted, Phase.rebooting]);

/**
 * Whether a reboot of `name` at `at` is a Plan's own: the node is in Upgrading (the Plan's Job holds its
 * slot), or a pod of a Plan's Job ran on it then. The Plan decides whether its node is drained and may
 * reboot it itself (SUC's kernel example), so neither nuo's grant nor its drain is asked of it. A node in
 * RebootGranted or Rebooting reboots for nuo (a Plan with reboot: true asks for it after its Job), even in
 * the second its Job's pod finished: only a pod still running there makes it the Plan's.
 */
export function isPlanReboot(
  name: string,
  node: V1Node | undefined,
  pods: readonly V1Pod[],
  at: Date,
): boolean {
  const state = node?.metadata?.annotations?.[Annotations.state] ?? '';
  if (state === Phase.upgrading) return true;
  const on = pods.filter((p) => p.spec?.nodeName === name);
  if (GRANTED_PHASES.has(state)) return on.some((p) => planOfPod(p) && p.status?.phase === 'Running');
  return on.some((p) => ranAt(p, at));
}

/**
 * The Plan attempt ("node attempt") a node's grant is for, when its nuo.dev/plan names a Plan: a Plan
 * with `reboot: true` asks nuo for one reboot per attempt, which the grant's claim names.
 */
export function planAttemptOf(n: V1Node | undefined): string | undefined {
  const a = n?.metadata?.annotations ?? {};
  const claim = a[Annotations.plan] ? readClaim(a[Annotations.rebootOk] ?? '') : undefined;
  return claim && `${claim.node} ${claim.attempt}`;
}
