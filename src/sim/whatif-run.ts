/**
 * `nuo whatif run`: rolls a twin (whatif-twin.ts) with the real operator and simulated hosts running
 * nuo's agent (fleet.ts), the independent checker watching, until every node finished or the deadline,
 * and records what happened (src/whatif/observations.ts): the phases the operator wrote on each node,
 * every eviction it asked for (the API server's audit log of the operator's own ServiceAccount: evicted,
 * or refused by which PDB), the pods evicted, and for each unfinished node the operator's view of why
 * (`nuo policy explain`).
 */
import { CoreV1Api, RbacAuthorizationV1Api, type V1Node } from '@kubernetes/client-node';
import { DEFAULT_NAMESPACE } from '../api/keys.ts';
import { type CalendarClock, REAL_CLOCK } from '../policy/calendar-clock.ts';
import { type ResolvedPolicy, resolvePolicy } from '../policy/resolve.ts';
import { pollUntil } from '../util/poll.ts';
import type { UpdatePolicyObject } from '../whatif/objects.ts';
import type { RunObservations } from '../whatif/observations.ts';
import type { Snapshot } from '../whatif/snapshot.ts';
import type { Twin } from '../whatif/twin.ts';
import { type LocalCluster, startCluster } from './cluster/cluster.ts';
import { Fleet } from './fleet.ts';
import { RebootBehaviour } from './host.ts';
import { installPolicyCrd } from './policies.ts';
import { observeRollout } from './rollout-observer.ts';
import { policyBudgets } from './whatif-observe.ts';
import { type ApplyResult, applyTwin } from './whatif-twin.ts';

/** The operator's ServiceAccount in the twin: the audit log keeps its requests, and only its. */
const OPERATOR_SA = 'nuo-whatif';
/** The user whose requests a cluster rolled by rollCluster must audit (startCluster's `audit.users`). */
export const OPERATOR_USER = `system:serviceaccount:${DEFAULT_NAMESPACE}:${OPERATOR_SA}`;

export interface RunOptions {
  /** How long a simulated host is down for its reboot. */
  rebootMs: number;
  /** How long a host of each pool (UpdatePolicy) is down, where it differs from `rebootMs`. */
  rebootMsByPool?: Record<string, number>;
  /** How long the twin may take to stand as its snapshot did. */
  standTimeoutMs: number;
  /** How long the rollout may run; nodes unfinished then are reported with why. */
  timeoutMs: number;
  log: (line: string) => void;
  /**
   * The simulated clock the operator reads windows on: showing `originMs` (default: the real time) when
   * it starts, `speed` times as fast as real time. Absent: the real clock.
   */
  calendar?: { originMs?: number; speed: number };
  /** The nodes whose finishing ends the run (default: every node), as a suggestion rolls one pool. */
  until?: readonly string[];
}

export interface RunResult {
  observations: RunObservations;
  /** How the twin stood before the rollout. */
  twin: ApplyResult;
}

export async function runWhatif(snapshot: Snapshot, twin: Twin, options: RunOptions): Promise<RunResult> {
  const cluster = await startCluster({ log: options.log, audit: { users: [OPERATOR_USER] } });
  try {
    const stood = await applyTwin(cluster, twin, snapshot, {
      timeoutMs: options.standTimeoutMs,
      log: options.log,
    });
    const notReady = twin.nodes.filter((n) => n.notReady).map((n) => n.name);
    return {
      twin: stood,
      observations: await rollCluster(cluster, snapshot.updatePolicies, notReady, options),
    };
  } finally {
    await cluster.stop();
  }
}

async function operatorKubeconfig(cluster: LocalCluster): Promise<string> {
  const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: DEFAULT_NAMESPACE } } }).catch((err) => {
    if ((err as { code?: number }).code !== 409) throw err;
  });
  await pollUntil(`the default ServiceAccount of ${DEFAULT_NAMESPACE}`, () =>
    core.readNamespacedServiceAccount({ name: 'default', namespace: DEFAULT_NAMESPACE }).then(() => true),
  );
  await cluster.kubeconfig.makeApiClient(RbacAuthorizationV1Api).createClusterRoleBinding({
    body: {
      metadata: { name: OPERATOR_SA },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
      subjects: [{ kind: 'ServiceAccount', name: OPERATOR_SA, namespace: DEFAULT_NAMESPACE }],
    },
  });
  return (await cluster.serviceAccountKubeconfig(DEFAULT_NAMESPACE, OPERATOR_SA)).path;
}

/**
 * Rolls `cluster` (a twin, or any local cluster started auditing OPERATOR_USER, as the prediction
 * benchmark's sources are) under `policies`, already applied there, with the real operator and simulated
 * hosts, and records what happened. Hosts of `notReady` nodes never come back from a reboot.
 */
export async function rollCluster(
  cluster: LocalCluster,
  policies: readonly UpdatePolicyObject[],
  notReady: readonly string[],
  options: Omit<RunOptions, 'standTimeoutMs'>,
): Promise<RunObservations> {
  const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
  await installPolicyCrd(cluster);
  const operatorConfig = await operatorKubeconfig(cluster);
  const resolved = resolvedPolicies(policies);
  const listed = (await core.listNode()).items;
  const fleet = new Fleet(cluster, {
    rebootMs: options.rebootMs,
    rebootMsByNode: rebootsByNode(listed, resolved, options.rebootMsByPool ?? {}),
    budget: policyBudgets(resolved, listed),
    // A node NotReady in the snapshot is down: rebooted, it stays down.
    behaviours: Object.fromEntries(notReady.map((n) => [n, RebootBehaviour.neverReturns])),
  });
  return observeRollout(
    cluster,
    {
      policies: resolved,
      notReady,
      operator: { user: OPERATOR_USER, kubeconfigPath: operatorConfig },
      rebootMs: options.rebootMs,
      timeoutMs: options.timeoutMs,
      log: options.log,
      ...(options.until ? { until: options.until } : {}),
    },
    {
      start: async () => {
        await fleet.start();
        const clock = operatorClock(options.calendar, Date.now());
        fleet.startOperator('whatif', [`--kubeconfig=${operatorConfig}`, ...simClockFlags(clock)]);
        options.log(`operator and ${fleet.hosts.size} simulated hosts started; updates staged on every node`);
        return clock;
      },
      ask: () => fleet.stageUpdates(),
      rebootsOf: (node) => fleet.checker.rebootsOf(node),
      allRebootsOf: (node) => fleet.hosts.get(node)?.reboots ?? 0,
      violations: () => fleet.checker.violations.map((v) => `${v.rule}: ${v.detail}`),
      stop: () => fleet.stop(),
    },
  );
}

/** The policies that resolve (an invalid one rolls nothing). */
export function resolvedPolicies(policies: readonly UpdatePolicyObject[]): ResolvedPolicy[] {
  return policies.flatMap((p) => {
    const r = resolvePolicy(p);
    return r.ok ? [r.policy] : [];
  });
}

/** Each node's reboot time, its pool's (the first policy that selects it), where one is given. */
function rebootsByNode(
  nodes: readonly V1Node[],
  policies: readonly ResolvedPolicy[],
  byPool: Readonly<Record<string, number>>,
): Record<string, number> {
  return Object.fromEntries(
    nodes.flatMap((n) => {
      const pool = policies.find((p) => p.selects(n.metadata?.labels ?? {}))?.name;
      const ms = pool === undefined ? undefined : byPool[pool];
      return ms === undefined ? [] : [[n.metadata?.name ?? '', ms] as const];
    }),
  );
}

/** The clock the twin's operator reads windows on, started at `start`: the real one without a calendar. */
function operatorClock(calendar: RunOptions['calendar'], start: number): CalendarClock {
  if (!calendar || (calendar.originMs === undefined && calendar.speed === 1)) return REAL_CLOCK;
  return { origin: calendar.originMs ?? start, start, speed: calendar.speed };
}

/** The operator's flags for `clock` (config.ts's sim-clock settings); none for the real clock. */
function simClockFlags(clock: CalendarClock): string[] {
  if (clock === REAL_CLOCK) return [];
  const iso = (ms: number) => new Date(ms).toISOString();
  return [
    `--sim-clock-origin=${iso(clock.origin)}`,
    `--sim-clock-start=${iso(clock.start)}`,
    `--sim-clock-speed=${clock.speed}`,
  ];
}
