/**
 * What the people-facing commands read of the cluster, the way the operator reads it: every node, the
 * slot ledger, the UpdatePolicies resolved (a cluster without the CRD has none), planned into pools, and
 * the Plans with their Jobs.
 */
import { CoreV1Api, CustomObjectsApi, type KubeConfig, type V1NodeCondition } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, UPDATE_POLICY } from '../api/crd.ts';
import type { UpdatePolicy } from '../api/update-policy.ts';
import { statusCode } from '../kube/errors.ts';
import { type Decision, decide } from '../operator/decide.ts';
import { inPool, type Ledger, LedgerStore } from '../operator/ledger.ts';
import { type NodeView, viewNode } from '../operator/node-view.ts';
import { type PassPlan, plansOfPass } from '../operator/plan-pass.ts';
import { passPlan } from '../operator/plan-resolve.ts';
import type { PolicyEntry, PolicyState } from '../operator/policies.ts';
import { type PoolPlan, planPools } from '../operator/pool-plan.ts';
import { resolvePolicy } from '../policy/resolve.ts';
import { type PlansRead, readPlans } from './plans.ts';

export interface ClusterState {
  nodes: NodeView[];
  /** Each node's status conditions as read (its lifecycle conditions among them). */
  conditions: ReadonlyMap<string, readonly V1NodeCondition[]>;
  ledger: Ledger;
  policies: PolicyState;
  /** The raw policies, with the status the operator wrote. */
  raw: UpdatePolicy[];
  plan: PoolPlan;
  /** Each pool's decision as a pass would make it now. */
  decisions: Map<string, Decision>;
  plans: PlansRead;
  /** The Plans as a pass uses them now. */
  passPlans: PassPlan[];
}

async function readPolicies(kc: KubeConfig): Promise<{ state: PolicyState; raw: UpdatePolicy[] }> {
  try {
    const list = (await kc.makeApiClient(CustomObjectsApi).listClusterCustomObject({
      group: API_GROUP,
      version: API_VERSION,
      plural: UPDATE_POLICY.plural,
    })) as { items: UpdatePolicy[] };
    const policies = list.items
      .map((p): PolicyEntry => {
        const current = resolvePolicy(p);
        return {
          name: p.metadata.name,
          uid: p.metadata.uid ?? '',
          generation: p.metadata.generation ?? 0,
          current,
          ...(current.ok ? { lastValid: current.policy } : {}),
          ...(p.status ? { status: p.status } : {}),
        };
      })
      .sort((a, b) => (a.name < b.name ? -1 : 1));
    return { state: { known: true, crdMissing: false, policies }, raw: list.items };
  } catch (err) {
    if (statusCode(err) !== 404) throw err;
    return { state: { known: true, crdMissing: true, policies: [] }, raw: [] };
  }
}

export async function readClusterState(kc: KubeConfig, namespace: string, now: Date): Promise<ClusterState> {
  const core = kc.makeApiClient(CoreV1Api);
  const ledger = (await new LedgerStore(core, namespace).read().catch(() => undefined))?.ledger ?? {
    slots: {},
  };
  const plans = await readPlans(kc);
  const passPlans = plans.entries.map((e) => passPlan(e, now.getTime()));
  const ofPass = plansOfPass(passPlans, ledger, plans.jobs);
  const items = (await core.listNode()).items;
  const nodes = items.map((n) => ofPass.view(viewNode(n))).sort((a, b) => a.name.localeCompare(b.name));
  const conditions = new Map(items.map((n) => [n.metadata?.name ?? '', n.status?.conditions ?? []] as const));
  const { state, raw } = await readPolicies(kc);
  // As an operator decides it when not paused cluster-wide (its flags are not in the cluster).
  const plan = planPools({ state, paused: false, nodes, ledger, now });
  for (const pool of plan.pools) pool.config = { ...pool.config, plans: ofPass.pass };
  const decisions = new Map(
    plan.pools.map((pool) => {
      const snapshot = {
        nodes: pool.nodes,
        ledger: inPool(ledger, pool.name),
        draining: new Set<string>(),
        admitting: new Set<string>(),
        health: new Map(),
      };
      return [pool.name, decide(snapshot, pool.config, now)] as const;
    }),
  );
  return { nodes, conditions, ledger, policies: state, raw, plan, decisions, plans, passPlans };
}
