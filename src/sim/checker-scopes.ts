/**
 * What the independent checker (checker.ts) counts a node as, and in which scopes it checks an admission:
 * in an attempt, disrupted, in a budget's pool and zone. Pure functions of Nodes and Plans' pods.
 */
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { type AgentProtocol, Annotations, AutoscalerTaints } from '../api/keys.ts';
import { inAttemptPhase } from './checker-phases.ts';
import { nodeOfPlanPod } from './checker-plans.ts';
import type { WaveBudget } from './checker-waves.ts';
import { isReady } from './cluster/nodes.ts';

/**
 * In an attempt: in one of its phases, under nuo's cordon, or running a Plan Job's pod (`planPodNodes`:
 * the nodes that run one).
 */
export const inAttempt = (n: V1Node | undefined, planPodNodes: ReadonlySet<string>) =>
  inAttemptPhase(n) ||
  n?.metadata?.annotations?.[Annotations.cordonedByNuo] === 'true' ||
  planPodNodes.has(n?.metadata?.name ?? '');
/** An autoscaler's NoSchedule taint: the node is being removed (src/api/keys.ts AutoscalerTaints). */
const beingRemoved = (n: V1Node) =>
  (n.spec?.taints ?? []).some(
    (t) => t.effect === 'NoSchedule' && Object.values(AutoscalerTaints).some((key) => key === t.key),
  );
export const disruptedNow = (n: V1Node, planPodNodes: ReadonlySet<string>) =>
  !isReady(n) || n.spec?.unschedulable === true || inAttempt(n, planPodNodes) || beingRemoved(n);

/**
 * A budget the checker holds nuo to: a pool's nodes (by their labels), how many may be disrupted at
 * once, and at most how many in any one zone; and the protocol its agents speak (nuo's by default), which
 * says what a grant of a reboot is.
 */
export interface Budget {
  name: string;
  selects: (labels: Record<string, string>) => boolean;
  max: number;
  zones?: { label: string; max: number };
  protocol?: AgentProtocol;
  /** The pool's rollout in waves (spec.rollout.waves): at once, no more than the current wave allows. */
  waves?: WaveBudget;
}

export const labelsOf = (n: V1Node): Record<string, string> => n.metadata?.labels ?? {};

/** The nodes that run a pod of a Plan's Job among `pods`. */
export function podNodes(pods: readonly V1Pod[]): Set<string> {
  const out = new Set<string>();
  for (const p of pods) {
    const node = nodeOfPlanPod(p);
    if (node) out.add(node);
  }
  return out;
}

/**
 * The scopes an admission is checked in: the budget's pool (at most `max`, its wave's limit when less),
 * and the started node's zone if capped.
 */
export function scopes(b: Budget, max: number, started: V1Node, counted: V1Node[]) {
  const inPool = counted.filter((n) => b.selects(labelsOf(n)));
  const names = (list: V1Node[]) => list.map((n) => n.metadata?.name ?? '');
  const of = b.name ? ` of ${b.name}` : '';
  const out = [{ scope: b.name ? ` in ${b.name}` : '', max, over: names(inPool) }];
  if (b.zones) {
    const zone = labelsOf(started)[b.zones.label] ?? '';
    const inZone = inPool.filter((n) => (labelsOf(n)[b.zones?.label ?? ''] ?? '') === zone);
    out.push({ scope: ` in zone ${zone}${of}`, max: b.zones.max, over: names(inZone) });
  }
  return out;
}
