/**
 * Evictions per pod in a rollout that drains every node once, against the bound no rollout filling its
 * budget at once can beat without spare capacity (docs/benchmarks.md, "Evictions per pod"):
 *
 *   evictions ≥ P + F, F = the pods on the K nodes that hold the fewest when the rollout starts.
 *
 * Every one of the P pods is evicted once, since every node drains. The first K nodes drain before any
 * node is updated, so each pod evicted from them can only land on a node still to drain (the others are
 * cordoned) and is evicted again: F more. Once a node is updated, an evicted pod can land there and move
 * no more, so nothing forces more. With P spread evenly, the bound is P·(1 + K/N).
 */

/** A workload pod as seen during the rollout (DaemonSet pods, which no drain evicts, left out). */
export interface PodSeen {
  node: string;
  /** When it was first seen bound to `node`; undefined for a pod bound before the rollout started. */
  boundAt?: number;
  /** When it was first seen evicted (terminating or deleted) while bound. */
  evictedAt?: number;
}

export interface Moves {
  /** P: workload pods bound when the rollout started. */
  pods: number;
  /** Pods evicted, each eviction once. */
  evictions: number;
  /** P + F (above). */
  bound: number;
  /** Evictions of pods placed during the rollout: each one a pod moved a second time (or more). */
  again: number;
  /** Of those, pods placed while no node was updated yet: forced, the bound's F. */
  forced: number;
  /** Of those, pods placed on a node still to drain although an updated node was there: steering missed. */
  missed: number;
}

/**
 * The figures of one rollout: `pods` every workload pod seen, `nodes` the nodes the rollout drains (a
 * node without pods at the start counts: it can be in the first K), `firstUpdatedAt` when the first node
 * was back from its attempt (undefined: none yet).
 */
export function moves(
  pods: readonly PodSeen[],
  nodes: readonly string[],
  k: number,
  firstUpdatedAt: number | undefined,
): Moves {
  const atStart = new Map<string, number>(nodes.map((n) => [n, 0]));
  let p = 0;
  for (const pod of pods) {
    if (pod.boundAt !== undefined) continue;
    p++;
    atStart.set(pod.node, (atStart.get(pod.node) ?? 0) + 1);
  }
  const fewest = [...atStart.values()].sort((a, b) => a - b).slice(0, k);
  const evicted = pods.filter((pod) => pod.evictedAt !== undefined);
  const again = evicted.filter((pod) => pod.boundAt !== undefined);
  const forced = again.filter(
    (pod) => firstUpdatedAt === undefined || (pod.boundAt ?? 0) < firstUpdatedAt,
  ).length;
  return {
    pods: p,
    evictions: evicted.length,
    bound: p + fewest.reduce((sum, n) => sum + n, 0),
    again: again.length,
    forced,
    missed: again.length - forced,
  };
}

/** "30 evictions of 18 pods: 1.67 per pod; bound 22 (1.22 per pod)", and how the moves beyond P split. */
export function movesLine(m: Moves): string {
  const per = (n: number) => (m.pods === 0 ? '0' : (n / m.pods).toFixed(2));
  return `${m.evictions} evictions of ${m.pods} pods: ${per(m.evictions)} per pod; bound ${m.bound} (${per(m.bound)} per pod); moved again ${m.again} (${m.forced} placed before any node was updated, ${m.missed} on a node still to drain while an updated one was there)`;
}
