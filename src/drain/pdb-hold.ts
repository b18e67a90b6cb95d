/**
 * Why a PodDisruptionBudget keeps refusing a drain's evictions, in words a person can act on: its
 * healthy count against what it needs, the pods it covers that are not healthy, and what would let the
 * drain go on. "Blocked by a PDB" alone sends them reading the PDB, its pods and the eviction rules.
 */
import type { V1Pod, V1PodDisruptionBudget } from '@kubernetes/client-node';

/** How a draining node's reason starts while PDBs hold its drain (the policy's status repeats it). */
export const DRAIN_WAITING = 'draining, waiting on ';

/** A blocking PDB as read when the drain gave up: the object, and the pods its selector covers. */
export interface PdbReading {
  /** "namespace/name". */
  key: string;
  pdb: V1PodDisruptionBudget;
  /** The pods of its namespace that its selector covers. */
  pods: V1Pod[];
}

/** Unhealthy pods named in full; the rest are counted. */
const NAMED = 5;

/** The eviction API's notion of healthy: Ready and not being deleted. */
const healthy = (pod: V1Pod) =>
  !pod.metadata?.deletionTimestamp &&
  (pod.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');

function named(pods: V1Pod[]): string {
  const names = pods.slice(0, NAMED).map((p) => p.metadata?.name ?? '?');
  const more = pods.length > NAMED ? ` and ${pods.length - NAMED} more` : '';
  return `${names.join(', ')}${more}`;
}

function rule(pdb: V1PodDisruptionBudget): string {
  const spec = pdb.spec ?? {};
  if (spec.minAvailable !== undefined) return `minAvailable ${spec.minAvailable}`;
  if (spec.maxUnavailable !== undefined) return `maxUnavailable ${spec.maxUnavailable}`;
  return 'no minAvailable or maxUnavailable';
}

/** What holds the PDB at zero disruptions, and what to do about it. */
function cause({ pdb, pods }: PdbReading, node: string): string {
  const status = pdb.status;
  const expected = status?.expectedPods ?? 0;
  const desired = status?.desiredHealthy ?? 0;
  const stale =
    status?.observedGeneration !== undefined &&
    pdb.metadata?.generation !== undefined &&
    status.observedGeneration < pdb.metadata.generation;
  if (stale) return 'its status predates its last change: the disruption controller has not counted it yet';
  if (expected > 0 && desired >= expected)
    return (
      'it allows no eviction even with every pod healthy: lower minAvailable (or raise maxUnavailable) or ' +
      'add replicas, or delete the pod by hand'
    );
  const unhealthy = pods.filter((p) => !healthy(p));
  if (unhealthy.length > 0) {
    const here = unhealthy.filter((p) => p.spec?.nodeName === node);
    const always = pdb.spec?.unhealthyPodEvictionPolicy === 'AlwaysAllow';
    const hint =
      here.length > 0 && !always
        ? `; ${named(here)} on ${node} would be evicted at once with unhealthyPodEvictionPolicy: AlwaysAllow`
        : '';
    return `not healthy: ${named(unhealthy)}; they count against it until they are Ready${hint}`;
  }
  return 'every pod it covers is healthy: earlier evictions are still being replaced';
}

/** One line per blocking PDB, e.g. "shop/web: 2 of 3 pod(s) healthy, 3 needed (minAvailable 3); …". */
export function pdbHold(reading: PdbReading, node: string): string {
  const s = reading.pdb.status;
  if (s === undefined) return `${reading.key}: no status yet: the disruption controller has not counted it`;
  const counts =
    `${s.currentHealthy} of ${s.expectedPods} pod(s) healthy, ${s.desiredHealthy} needed (${rule(reading.pdb)}), ` +
    `${s.disruptionsAllowed} disruption(s) allowed`;
  return `${reading.key}: ${counts}; ${cause(reading, node)}`;
}
