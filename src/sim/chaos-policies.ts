/**
 * Chaos runs with UpdatePolicies in place (`npm run chaos -- --policies`): the nodes split into two
 * pools, each with the run's budget and a zone cap of 1, so the checker holds nuo to two budgets and
 * every zone's cap while the faults strike. With `--fluo`, one pool's nodes run FLUO's real update-agent
 * instead (fluo-agent.ts) under `agentProtocol: flatcar-update-operator`, the other nuo's agents. A node that never returns holds its slot for good, and so,
 * with a zone cap of 1, its zone in its pool waits: those nodes are an expected stall, seen waiting for
 * their zone, not a failure to finish.
 */
import { AgentProtocol } from '../api/keys.ts';
import type { UpdatePolicySpec } from '../api/update-policy.ts';
import { mergePatch } from '../kube/patch.ts';
import type { Env } from './chaos-env.ts';
import type { Budget } from './checker.ts';
import type { NodeGateSettings } from './checker-node-gates.ts';
import type { LocalCluster } from './cluster/cluster.ts';
import { applyPolicy, deletePolicies, installPolicyCrd } from './policies.ts';

const ZONE = 'topology.kubernetes.io/zone';
/** The label that puts a node in a chaos pool. */
export const POOL_LABEL = 'chaos.nuo.dev/pool';

export interface ChaosPools {
  /** node → its pool. */
  poolOf: Map<string, string>;
  budgets: Budget[];
  /** The nodes whose agent is FLUO's real update-agent (none but with `--fluo`). */
  fluoNodes?: string[];
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

/** The node gates every chaos pool has (QUICK's backoff, the defaults else), as the checker holds them. */
export const CHAOS_NODE_GATES: NodeGateSettings = {
  retryBackoffMs: 5000,
  retryBackoffMaxMs: 3_600_000,
  maxIneffectiveReboots: 3,
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
 * The FLUO pool of a `--fluo` run: a third of the nodes, at least 2 (so a budget of 2 is ever used there),
 * and never all of them (the other pool is nuo's agents').
 */
export function fluoPoolNodes(names: readonly string[]): string[] {
  if (names.length < 3)
    throw new Error(`--fluo needs at least 3 nodes (a FLUO pool of 2 and a nuo pool), got ${names.length}`);
  return [...names].sort().slice(0, Math.max(2, Math.floor(names.length / 3)));
}

/**
 * Puts the FLUO pool's nodes (fluoPoolNodes) in pool fluo, under a policy whose agents speak FLUO's
 * protocol, and the rest in pool nuo; the run's budget in each, no zone cap.
 */
export async function prepareFluoPools(
  cluster: LocalCluster,
  env: Env,
  names: readonly string[],
  maxUnavailable: number,
): Promise<ChaosPools> {
  await installPolicyCrd(cluster);
  await deletePolicies(cluster);
  const fluoNodes = fluoPoolNodes(names);
  const poolOf = new Map(names.map((n) => [n, fluoNodes.includes(n) ? 'fluo' : 'nuo']));
  for (const [name, pool] of poolOf) {
    await env.core.patchNode({ name, body: { metadata: { labels: { [POOL_LABEL]: pool } } } }, mergePatch);
  }
  const protocolOf = { fluo: AgentProtocol.flatcar, nuo: undefined };
  const budgets: Budget[] = [];
  for (const pool of ['fluo', 'nuo'] as const) {
    const protocol = protocolOf[pool];
    await applyPolicy(cluster, `chaos-${pool}`, {
      ...QUICK,
      nodeSelector: { matchLabels: { [POOL_LABEL]: pool } },
      maxUnavailable,
      ...(protocol ? { agentProtocol: protocol } : {}),
    });
    budgets.push({
      name: `pool ${pool}`,
      selects: (labels) => labels[POOL_LABEL] === pool,
      max: maxUnavailable,
      ...(protocol ? { protocol } : {}),
    });
  }
  return { poolOf, budgets, fluoNodes };
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
