/**
 * Chaos runs with UpdatePolicies in place (`npm run chaos -- --policies`): the nodes split into two
 * pools, each with the run's budget and a zone cap of 1, so the checker holds nuo to two budgets and
 * every zone's cap while the faults strike. A node that never returns holds its slot for good, and so,
 * with a zone cap of 1, its zone in its pool waits: those nodes are an expected stall, seen waiting for
 * their zone, not a failure to finish.
 */
import type { UpdatePolicySpec } from '../api/update-policy.ts';
import { mergePatch } from '../kube/patch.ts';
import type { Env } from './chaos-env.ts';
import type { Budget } from './checker.ts';
import type { LocalCluster } from './cluster/cluster.ts';
import { applyPolicy, deletePolicies, installPolicyCrd } from './policies.ts';

const ZONE = 'topology.kubernetes.io/zone';
/** The label that puts a node in a chaos pool. */
export const POOL_LABEL = 'chaos.nuo.dev/pool';

export interface ChaosPools {
  /** node → its pool. */
  poolOf: Map<string, string>;
  budgets: Budget[];
}

/**
 * Soak and timeouts fast enough for seconds-long runs: a node that never returns is Failed after 20 s
 * (a slow but normal one recovers if it returns), and a drain blocked past its timeout (an eviction cut
 * off by a fault holds the PDB for 2 min, see chaos-plan.ts evictionLimboMs) is aborted and retried
 * soon, within the run's bound.
 */
const QUICK: UpdatePolicySpec = {
  drain: { timeout: '60s' },
  reboot: { soak: '1s', rebootTimeout: '20s', returnTimeout: '20s', retryBackoff: '5s' },
};

/** One UpdatePolicy over every node with the run's budget (a campaign without `--policies`). */
export async function prepareOnePool(cluster: LocalCluster, maxUnavailable: number): Promise<void> {
  await installPolicyCrd(cluster);
  await deletePolicies(cluster);
  await applyPolicy(cluster, 'chaos', { ...QUICK, maxUnavailable });
}

/** Puts the first half of the nodes in pool a and the rest in pool b, one policy each with a zone cap of 1. */
export async function preparePools(
  cluster: LocalCluster,
  env: Env,
  names: readonly string[],
  maxUnavailable: number,
): Promise<ChaosPools> {
  await installPolicyCrd(cluster);
  await deletePolicies(cluster);
  const poolOf = new Map(names.map((n, i) => [n, i < names.length / 2 ? 'a' : 'b']));
  for (const [name, pool] of poolOf) {
    await env.core.patchNode({ name, body: { metadata: { labels: { [POOL_LABEL]: pool } } } }, mergePatch);
  }
  for (const pool of ['a', 'b']) {
    await applyPolicy(cluster, `chaos-${pool}`, {
      ...QUICK,
      nodeSelector: { matchLabels: { [POOL_LABEL]: pool } },
      maxUnavailable,
      maxUnavailablePerZone: 1,
    });
  }
  const budgets = ['a', 'b'].map((pool) => ({
    name: `pool ${pool}`,
    selects: (labels: Record<string, string>) => labels[POOL_LABEL] === pool,
    max: maxUnavailable,
    zones: { label: ZONE, max: 1 },
  }));
  return { poolOf, budgets };
}

/**
 * Whether `node` is expected to wait for good: it shares its pool and its zone with the node that never
 * returns (whose slot, and so the zone's only one, stays held), and says it waits for its zone.
 */
export function waitsOnFailedZone(
  node: string,
  neverReturns: string | undefined,
  pools: ChaosPools,
  zoneOf: (node: string) => string | undefined,
  reason: string,
): boolean {
  if (!neverReturns || node === neverReturns) return false;
  const samePool = pools.poolOf.get(node) === pools.poolOf.get(neverReturns);
  const sameZone = zoneOf(node) !== undefined && zoneOf(node) === zoneOf(neverReturns);
  return samePool && sameZone && /waiting for a free slot in zone/.test(reason);
}
