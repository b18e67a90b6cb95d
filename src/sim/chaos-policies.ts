/**
 * Chaos runs with UpdatePolicies in place (`npm run chaos -- --policies`): the nodes split into two
 * pools, each with the run's budget and a zone cap of 1, so the checker holds nuo to two budgets and
 * every zone's cap while the faults strike. A node that never returns holds its slot for good, and so,
 * with a zone cap of 1, its zone in its pool waits: those nodes are an expected stall, seen waiting for
 * their zone, not a failure to finish.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ApiextensionsV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, UPDATE_POLICY } from '../api/crd.ts';
import type { UpdatePolicySpec } from '../api/update-policy.ts';
import { statusCode } from '../kube/errors.ts';
import { mergePatch } from '../kube/patch.ts';
import { pollUntil } from '../util/poll.ts';
import type { Env } from './chaos-env.ts';
import type { Budget } from './checker.ts';
import type { LocalCluster } from './cluster/cluster.ts';

const ZONE = 'topology.kubernetes.io/zone';
/** The label that puts a node in a chaos pool. */
export const POOL_LABEL = 'chaos.nuo.dev/pool';
const CRD_FILE = fileURLToPath(new URL('../../deploy/base/updatepolicy-crd.yaml', import.meta.url));

export interface ChaosPools {
  /** node → its pool. */
  poolOf: Map<string, string>;
  budgets: Budget[];
}

/** The settings of both pools: as fast as the operator flags of a chaos run (chaos.ts OPERATOR_ARGS). */
const spec = (pool: string, maxUnavailable: number): UpdatePolicySpec => ({
  nodeSelector: { matchLabels: { [POOL_LABEL]: pool } },
  maxUnavailable,
  maxUnavailablePerZone: 1,
  drain: { timeout: '60s' },
  reboot: { soak: '1s', rebootTimeout: '20s', returnTimeout: '20s', retryBackoff: '5s' },
});

/** Installs the CRD, puts the first half of the nodes in pool a and the rest in pool b, one policy each. */
export async function preparePools(
  cluster: LocalCluster,
  env: Env,
  names: readonly string[],
  maxUnavailable: number,
): Promise<ChaosPools> {
  const applied = spawnSync(
    cluster.binaries.path.kubectl,
    [`--kubeconfig=${cluster.kubeconfigPath}`, 'apply', '-f', CRD_FILE],
    { encoding: 'utf8' },
  );
  if (applied.status !== 0) throw new Error(`installing the UpdatePolicy CRD failed: ${applied.stderr}`);
  const crds = cluster.kubeconfig.makeApiClient(ApiextensionsV1Api);
  await pollUntil('the UpdatePolicy CRD to be established', async () => {
    const crd = await crds.readCustomResourceDefinition({ name: `${UPDATE_POLICY.plural}.${API_GROUP}` });
    return crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')
      ? true
      : undefined;
  });
  const poolOf = new Map(names.map((n, i) => [n, i < names.length / 2 ? 'a' : 'b']));
  for (const [name, pool] of poolOf) {
    await env.core.patchNode({ name, body: { metadata: { labels: { [POOL_LABEL]: pool } } } }, mergePatch);
  }
  const custom = cluster.kubeconfig.makeApiClient(CustomObjectsApi);
  const ref = { group: API_GROUP, version: API_VERSION, plural: UPDATE_POLICY.plural };
  for (const pool of ['a', 'b']) {
    const body = {
      apiVersion: `${API_GROUP}/${API_VERSION}`,
      kind: UPDATE_POLICY.kind,
      metadata: { name: `chaos-${pool}` },
      spec: spec(pool, maxUnavailable),
    };
    await custom.createClusterCustomObject({ ...ref, body }).catch((err: unknown) => {
      if (statusCode(err) !== 409) throw err;
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
