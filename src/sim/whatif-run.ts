/**
 * `nuo whatif run`: rolls a twin (whatif-twin.ts) with the real operator and simulated hosts running
 * nuo's agent (fleet.ts), the independent checker watching, until every node finished or the deadline,
 * and records what happened (src/whatif/observations.ts): the phases the operator wrote on each node,
 * every eviction it asked for (the API server's audit log of the operator's own ServiceAccount: evicted,
 * or refused by which PDB), the pods evicted, and for each unfinished node the operator's view of why
 * (`nuo policy explain`).
 */
import {
  CoreV1Api,
  KubeConfig,
  PolicyV1Api,
  RbacAuthorizationV1Api,
  type V1Node,
  type V1Pod,
} from '@kubernetes/client-node';
import { Annotations, DEFAULT_NAMESPACE } from '../api/keys.ts';
import { Phase } from '../api/phases.ts';
import { readClusterState } from '../cli/cluster-state.ts';
import { ResilientInformer } from '../kube/informer.ts';
import { explainNode } from '../operator/policies/explain.ts';
import { type CalendarClock, calendarAt, REAL_CLOCK } from '../policy/calendar-clock.ts';
import { type ResolvedPolicy, resolvePolicy } from '../policy/resolve.ts';
import { windowState } from '../policy/windows.ts';
import { pollUntil } from '../util/poll.ts';
import type { UpdatePolicyObject } from '../whatif/objects.ts';
import type { ObservedEviction, ObservedNode, RunObservations } from '../whatif/observations.ts';
import type { Snapshot } from '../whatif/snapshot.ts';
import type { Twin } from '../whatif/twin.ts';
import { openStretches } from '../whatif/windows-used.ts';
import { ZONE_LABEL } from '../whatif/workloads.ts';
import { readAuditLog } from './cluster/audit.ts';
import { type LocalCluster, startCluster } from './cluster/cluster.ts';
import { isReady } from './cluster/nodes.ts';
import { Fleet } from './fleet.ts';
import { RebootBehaviour } from './host.ts';
import { installPolicyCrd } from './policies.ts';
import { type EvictionAudit, policyBudgets, refusingPdb, workloadOf } from './whatif-observe.ts';
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

/** How often a run logs its progress. */
const PROGRESS_MS = 10_000;

/** "20 s: 2 of 6 nodes finished; Draining 1, Pending 3". */
function progressLine(nodes: readonly V1Node[], finished: number, elapsedMs: number): string {
  const counts = new Map<string, number>();
  for (const n of nodes) {
    const phase = n.metadata?.annotations?.[Annotations.state] ?? Phase.idle;
    counts.set(phase, (counts.get(phase) ?? 0) + 1);
  }
  const phases = [...counts].map(([p, c]) => `${p} ${c}`).join(', ');
  return `${Math.round(elapsedMs / 1000)} s: ${finished} of ${nodes.length} nodes finished; ${phases}`;
}

/**
 * Records the phases each node enters (its `nuo.dev/state`, since and reason), from `t0`, and each new
 * reason the operator gives within a phase.
 */
class PhaseLog {
  readonly phases = new Map<string, ObservedNode['phases']>();
  t0 = Date.now();

  observe(node: V1Node): void {
    const a = node.metadata?.annotations ?? {};
    const phase = a[Annotations.state] ?? Phase.idle;
    const since = Date.parse(a[Annotations.stateSince] ?? '');
    const list = this.phases.get(node.metadata?.name ?? '') ?? [];
    const last = list.at(-1);
    const atMs = (Number.isNaN(since) ? Date.now() : since) - this.t0;
    const reason = a[Annotations.stateReason];
    if (last && last.phase === phase && last.atMs === atMs && last.reason === reason) return;
    list.push({ phase, atMs, ...(reason ? { reason } : {}) });
    this.phases.set(node.metadata?.name ?? '', list);
  }
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
 * benchmark's sources are) under `policies`, already applied there, and records what happened. Hosts of
 * `notReady` nodes never come back from a reboot.
 */
export async function rollCluster(
  cluster: LocalCluster,
  policies: readonly UpdatePolicyObject[],
  notReady: readonly string[],
  options: Omit<RunOptions, 'standTimeoutMs'>,
): Promise<RunObservations> {
  const { kubeconfig } = cluster;
  const core = kubeconfig.makeApiClient(CoreV1Api);
  await installPolicyCrd(cluster);
  const operatorConfig = await operatorKubeconfig(cluster);
  const resolved = policies.flatMap((p) => {
    const r = resolvePolicy(p);
    return r.ok ? [r.policy] : [];
  });
  const listed = (await core.listNode()).items;
  const fleet = new Fleet(cluster, {
    rebootMs: options.rebootMs,
    rebootMsByNode: rebootsByNode(listed, resolved, options.rebootMsByPool ?? {}),
    budget: policyBudgets(resolved, listed),
    // A node NotReady in the snapshot is down: rebooted, it stays down.
    behaviours: Object.fromEntries(notReady.map((n) => [n, RebootBehaviour.neverReturns])),
  });
  const phases = new PhaseLog();
  const nodes = new ResilientInformer<V1Node>({
    kubeconfig,
    path: '/api/v1/nodes',
    list: (opts) => core.listNode(opts),
    name: 'whatif-nodes',
  });
  nodes.onEvent((type, n) => {
    if (type !== 'delete') phases.observe(n);
  });
  const pods = new Map<string, { node?: string; workload?: string; created: number }>();
  const podInformer = new ResilientInformer<V1Pod>({
    kubeconfig,
    path: '/api/v1/pods',
    list: (opts) => core.listPodForAllNamespaces(opts),
    name: 'whatif-pods',
  });
  podInformer.onEvent((_type, p) => {
    const key = `${p.metadata?.namespace}/${p.metadata?.name}`;
    const workload = workloadOf(p);
    pods.set(key, {
      ...(p.spec?.nodeName ? { node: p.spec.nodeName } : {}),
      ...(workload ? { workload } : {}),
      created: Date.parse(String(p.metadata?.creationTimestamp ?? '')),
    });
  });
  try {
    await Promise.all([nodes.start(), podInformer.start()]);
    await fleet.start();
    const clock = operatorClock(options.calendar, Date.now());
    fleet.startOperator('whatif', [`--kubeconfig=${operatorConfig}`, ...simClockFlags(clock)]);
    options.log(`operator and ${fleet.hosts.size} simulated hosts started; updates staged on every node`);
    phases.t0 = Date.now();
    fleet.stageUpdates();
    const finished = (n: V1Node) => {
      const a = n.metadata?.annotations ?? {};
      return (
        fleet.checker.rebootsOf(n.metadata?.name ?? '') >= 1 &&
        (a[Annotations.state] ?? Phase.idle) === Phase.idle &&
        a[Annotations.rebootNeeded] === undefined &&
        isReady(n)
      );
    };
    let nextProgress = Date.now() + PROGRESS_MS;
    const done = await pollUntil(
      'every node to finish',
      () => {
        const all = nodes.list();
        if (Date.now() >= nextProgress) {
          nextProgress += PROGRESS_MS;
          options.log(progressLine(all, all.filter(finished).length, Date.now() - phases.t0));
        }
        const ending = options.until
          ? all.filter((n) => options.until?.includes(n.metadata?.name ?? ''))
          : all;
        return ending.every(finished) ? true : undefined;
      },
      { timeoutMs: options.timeoutMs, intervalMs: 500 },
    ).catch(() => false);
    const elapsedMs = Date.now() - phases.t0;
    const finishedNodes = new Set(
      nodes
        .list()
        .filter(finished)
        .map((n) => n.metadata?.name ?? ''),
    );
    const now = new Date();
    const state = await readClusterState(kubeconfig, DEFAULT_NAMESPACE, now, undefined, clock);
    const calendar = (ms: number) => calendarAt(clock, phases.t0 + ms);
    await fleet.stop();
    const evictions = await readEvictions(cluster, operatorConfig, phases.t0, pods);
    const poolOf = new Map(state.plan.pools.flatMap((p) => p.nodes.map((n) => [n.name, p.name] as const)));
    const policyOf = new Map(resolved.map((p) => [p.name, p]));
    const observed = nodes.list().map((n): ObservedNode => {
      const name = n.metadata?.name ?? '';
      const pool = poolOf.get(name);
      const view = state.nodes.find((v) => v.name === name);
      const ok = finishedNodes.has(name);
      const decision = pool ? state.decisions.get(pool) : undefined;
      const explain =
        ok || !view
          ? []
          : explainNode({
              node: view,
              plan: state.plan,
              ledger: state.ledger,
              now,
              ...(decision ? { decision } : {}),
            });
      const list = (phases.phases.get(name) ?? []).filter((p) => p.atMs <= elapsedMs);
      const windows = pool ? policyOf.get(pool)?.windows : undefined;
      const starts = list.filter(
        (p, i) => p.phase === Phase.beforeReboot && list[i - 1]?.phase !== Phase.beforeReboot,
      );
      const zone = n.metadata?.labels?.[ZONE_LABEL];
      return {
        name,
        ...(zone ? { zone } : {}),
        ...(pool ? { pool } : {}),
        phases: list,
        reboots: fleet.hosts.get(name)?.reboots ?? 0,
        notReady: notReady.includes(name),
        finished: ok,
        explain,
        windows:
          windows && (windows.windows.length > 0 || windows.exclusions.length > 0)
            ? starts.map((p) => windowState(windows, new Date(calendar(p.atMs))).reason)
            : [],
      };
    });
    const pdbs = (await kubeconfig.makeApiClient(PolicyV1Api).listPodDisruptionBudgetForAllNamespaces())
      .items;
    return {
      elapsedMs,
      timedOut: !done,
      rebootMs: options.rebootMs,
      nodes: observed,
      evictions,
      pdbs: pdbs.map((p) => ({
        name: `${p.metadata?.namespace}/${p.metadata?.name}`,
        ...(p.spec?.minAvailable !== undefined ? { minAvailable: p.spec.minAvailable } : {}),
        ...(p.spec?.maxUnavailable !== undefined ? { maxUnavailable: p.spec.maxUnavailable } : {}),
        ...(p.status
          ? {
              expectedPods: p.status.expectedPods,
              currentHealthy: p.status.currentHealthy,
              desiredHealthy: p.status.desiredHealthy,
              disruptionsAllowed: p.status.disruptionsAllowed,
            }
          : {}),
      })),
      violations: fleet.checker.violations.map((v) => `${v.rule}: ${v.detail}`),
      calendarStartMs: calendar(0),
      windowStretches: resolved.flatMap((p) =>
        p.windows.windows.length > 0 || p.windows.exclusions.length > 0
          ? [{ pool: p.name, stretches: openStretches(p.windows, calendar(0), calendar(elapsedMs)) }]
          : [],
      ),
    };
  } finally {
    await fleet.stop();
    await Promise.all([nodes.stop(), podInformer.stop()]);
  }
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

/**
 * The operator's evictions, from the audit log once it holds them all: the API server writes it in
 * batches, in order, so a request made as the operator after it stopped marks the end.
 */
async function readEvictions(
  cluster: LocalCluster,
  operatorConfig: string,
  t0: number,
  pods: ReadonlyMap<string, { node?: string; workload?: string; created: number }>,
): Promise<ObservedEviction[]> {
  const kc = new KubeConfig();
  kc.loadFromFile(operatorConfig);
  const marker = `whatif-end-${Date.now()}`;
  await kc
    .makeApiClient(CoreV1Api)
    .readNamespace({ name: marker })
    .catch(() => {});
  const events = await pollUntil(
    'the audit log to hold the end of the run',
    async () => {
      const all = (await readAuditLog(cluster.auditLogPath ?? '', OPERATOR_USER)) as EvictionAudit[];
      return all.some((e) => e.objectRef?.name === marker) ? all : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 250 },
  );
  return events
    .filter((e) => e.objectRef?.subresource === 'eviction' && e.verb === 'create')
    .map((e): ObservedEviction => {
      const key = `${e.objectRef?.namespace}/${e.objectRef?.name}`;
      const pod = pods.get(key);
      const pdb = refusingPdb(e);
      const code = e.responseStatus?.code ?? 0;
      return {
        atMs: Date.parse(e.requestReceivedTimestamp) - t0,
        pod: key,
        ...(pod?.node ? { node: pod.node } : {}),
        ...(pod?.workload ? { workload: pod.workload } : {}),
        ...(pod && !Number.isNaN(pod.created) ? { createdMs: pod.created - t0 } : {}),
        code,
        ...(code === 429 && pdb ? { pdb: `${e.objectRef?.namespace}/${pdb}` } : {}),
      };
    })
    .sort((a, b) => a.atMs - b.atMs);
}
