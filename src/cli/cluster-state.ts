/**
 * What the people-facing commands read of the cluster, the way the operator reads it: every node, the
 * slot ledger, the UpdatePolicies resolved (a cluster without the CRD has none), planned into pools (with
 * kured's locks and the health checks read now), and the Plans with their Jobs.
 */
import {
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  KubernetesObjectApi,
  type V1NodeCondition,
} from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, UPDATE_POLICY } from '../api/crd.ts';
import { type CoreosProtocol, isCoreosProtocol } from '../api/keys.ts';
import type { UpdatePolicy } from '../api/update-policy.ts';
import { describeError, statusCode } from '../kube/errors.ts';
import { type Decision, decide } from '../operator/decide/decide.ts';
import type { Ledger } from '../operator/decide/ledger-view.ts';
import { type NodeView, viewNode } from '../operator/decide/node-view.ts';
import { type PassPlan, plansOfPass } from '../operator/plans/plan-pass.ts';
import { passPlan } from '../operator/plans/plan-resolve.ts';
import { type PolicyEntry, type PolicyState, resumeOf } from '../operator/policies/policies.ts';
import type { OperatorSighting, PolicyBlockers } from '../operator/policies/pool-holds.ts';
import { type PoolPlan, planPools } from '../operator/policies/pool-plan.ts';
import { parseKuredLock, viewLock } from '../operator/protocols/kured-lock.ts';
import { lookForOperator } from '../operator/protocols/protocol-operators.ts';
import { readHealth } from '../operator/read/health-check-reads.ts';
import { inPool, LedgerStore } from '../operator/read/ledger.ts';
import type { CalendarClock } from '../policy/calendar-clock.ts';
import type { HealthReading } from '../policy/health-checks.ts';
import { resolvePolicy } from '../policy/resolve.ts';
import { type PlansRead, readPlans } from './plans.ts';

/** How long the people-facing commands wait for the health checks they read (Prometheus's deadline is its own). */
const HEALTH_READ_TIMEOUT_MS = 15_000;

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
        const resumed = resumeOf(p.metadata.annotations);
        return {
          name: p.metadata.name,
          uid: p.metadata.uid ?? '',
          generation: p.metadata.generation ?? 0,
          current,
          ...(current.ok ? { lastValid: current.policy } : {}),
          ...(p.status ? { status: p.status } : {}),
          ...(resumed ? { resumed } : {}),
        };
      })
      .sort((a, b) => (a.name < b.name ? -1 : 1));
    return { state: { known: true, crdMissing: false, policies }, raw: list.items };
  } catch (err) {
    if (statusCode(err) !== 404) throw err;
    return { state: { known: true, crdMissing: true, policies: [] }, raw: [] };
  }
}

/** kured's lock as each policy beside kured sees it now (coexistence.kured), read as the operator reads it. */
async function readKuredLocks(
  kc: KubeConfig,
  state: PolicyState,
  now: Date,
): Promise<Map<string, PolicyBlockers>> {
  const apps = kc.makeApiClient(AppsV1Api);
  const out = new Map<string, PolicyBlockers>();
  for (const entry of state.policies) {
    const k = entry.current.ok ? entry.current.policy.kured : undefined;
    if (!k) continue;
    try {
      const ds = await apps.readNamespacedDaemonSet({ namespace: k.namespace, name: k.name });
      const parsed = parseKuredLock(ds.metadata?.annotations?.[k.annotation], k.concurrency);
      out.set(entry.name, {
        kured: parsed.ok
          ? viewLock(parsed.lock, entry.name, now.getTime())
          : { error: `its value is not kured's: ${parsed.error}` },
      });
    } catch (err) {
      out.set(entry.name, {
        kured: { error: `${k.namespace}/${k.name} cannot be read: ${describeError(err)}` },
      });
    }
  }
  return out;
}

/** Each valid policy's health checks read now, as the operator reads them, with this command's credentials. */
async function readHealthChecks(kc: KubeConfig, state: PolicyState): Promise<Map<string, HealthReading>> {
  const objects = KubernetesObjectApi.makeApiClient(kc);
  const signal = AbortSignal.timeout(HEALTH_READ_TIMEOUT_MS);
  const out = new Map<string, HealthReading>();
  for (const entry of state.policies) {
    const checks = entry.current.ok ? entry.current.policy.healthChecks : [];
    if (checks.length > 0) out.set(entry.name, await readHealth(checks, objects, signal));
  }
  return out;
}

/** Looks for CLUO's and FLUO's own update-operator, as the operator does, for the protocols policies use. */
async function lookForOperators(
  kc: KubeConfig,
  state: PolicyState,
): Promise<ReadonlyMap<CoreosProtocol, OperatorSighting>> {
  const protocols = new Set<CoreosProtocol>();
  for (const e of state.policies) {
    const p = e.current.ok ? e.current.policy : e.lastValid;
    if (isCoreosProtocol(p?.agentProtocol)) protocols.add(p.agentProtocol);
  }
  const api = {
    coordination: kc.makeApiClient(CoordinationV1Api),
    core: kc.makeApiClient(CoreV1Api),
    apps: kc.makeApiClient(AppsV1Api),
  };
  return new Map(
    await Promise.all([...protocols].map(async (p) => [p, await lookForOperator(api, p)] as const)),
  );
}

export async function readClusterState(
  kc: KubeConfig,
  namespace: string,
  now: Date,
  sucNamespace?: string,
  clock?: CalendarClock,
): Promise<ClusterState> {
  const core = kc.makeApiClient(CoreV1Api);
  const ledger = (await new LedgerStore(core, namespace).read().catch(() => undefined))?.ledger ?? {
    slots: {},
  };
  const plans = await readPlans(kc, sucNamespace);
  const passPlans = plans.entries.map((e) => passPlan(e, now.getTime(), undefined, clock));
  const ofPass = plansOfPass(passPlans, ledger, plans.jobs);
  const items = (await core.listNode()).items;
  const nodes = items.map((n) => ofPass.view(viewNode(n))).sort((a, b) => a.name.localeCompare(b.name));
  const conditions = new Map(items.map((n) => [n.metadata?.name ?? '', n.status?.conditions ?? []] as const));
  const { state, raw } = await readPolicies(kc);
  const sightings = await lookForOperators(kc, state);
  // As an operator decides it when not paused cluster-wide (its flags are not in the cluster).
  const kured = await readKuredLocks(kc, state, now);
  const health = await readHealthChecks(kc, state);
  const plan = planPools({
    state,
    paused: false,
    nodes,
    ledger,
    now,
    blockers: (policy) => {
      const reading = health.get(policy);
      return reading ? { ...kured.get(policy), health: reading } : kured.get(policy);
    },
    sighting: (p) => sightings.get(p),
    ...(clock ? { clock } : {}),
  });
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
  // Each node as its pool reads it (a pool of CLUO's or FLUO's agents reads their keys).
  const ofPool = new Map(plan.pools.flatMap((p) => p.nodes).map((n) => [n.name, n]));
  return {
    nodes: nodes.map((n) => ofPool.get(n.name) ?? n),
    conditions,
    ledger,
    policies: state,
    raw,
    plan,
    decisions,
    plans,
    passPlans,
  };
}
