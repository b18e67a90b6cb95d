/**
 * What a rollout did, as `nuo whatif` reports it (src/whatif/observations.ts), whatever reboots the
 * nodes: the simulated hosts of a twin (whatif-run.ts) or real VM nodes (bench/vm-rollout.ts). It records
 * the phases the operator wrote on each node, every eviction it asked for (the API server's audit log of
 * the operator's own user: evicted, or refused by which PDB), the pods evicted, and for each unfinished
 * node the operator's view of why (`nuo policy explain`).
 */
import { CoreV1Api, KubeConfig, PolicyV1Api, type V1Node, type V1Pod } from '@kubernetes/client-node';
import { Annotations, DEFAULT_NAMESPACE } from '../api/keys.ts';
import { Phase } from '../api/phases.ts';
import { readClusterState } from '../cli/cluster-state.ts';
import { ResilientInformer } from '../kube/informer.ts';
import { explainNode } from '../operator/policies/explain.ts';
import { type CalendarClock, calendarAt } from '../policy/calendar-clock.ts';
import type { ResolvedPolicy } from '../policy/resolve.ts';
import { windowState } from '../policy/windows.ts';
import { pollUntil } from '../util/poll.ts';
import type { ObservedEviction, ObservedNode, RunObservations } from '../whatif/observations.ts';
import { openStretches } from '../whatif/windows-used.ts';
import { ZONE_LABEL } from '../whatif/workloads.ts';
import { readAuditLog } from './cluster/audit.ts';
import type { LocalCluster } from './cluster/cluster.ts';
import { isReady } from './cluster/nodes.ts';
import { type EvictionAudit, refusingPdb, workloadOf } from './whatif-observe.ts';

/** The user the operator sends its requests as (the cluster audits it), and a kubeconfig of that user. */
export interface OperatorIdentity {
  user: string;
  kubeconfigPath: string;
}

/** What reboots the nodes of an observed rollout. */
export interface RolloutDriver {
  /**
   * Starts the operator and whatever reboots nodes (before the rollout's time 0); returns the clock the
   * operator reads windows on.
   */
  start(): Promise<CalendarClock>;
  /** Asks every node for its update: the rollout's time 0. */
  ask(): void | Promise<void>;
  /** How many times `node` rebooted for its update since start (a node finishes after one). */
  rebootsOf(node: string): number;
  /** How many times `node` rebooted since start, for any reason (the report's count). */
  allRebootsOf(node: string): number;
  /** What the independent checker saw broken. */
  violations(): string[];
  stop(): Promise<void>;
}

/**
 * When a phase began: `written`, the operator's `nuo.dev/state-since`, for an operator on this machine's
 * clock; `seen`, when this process first saw it, for an operator on another machine's clock (a VM's),
 * whose written times are not comparable with this process's.
 */
export type PhaseStamp = 'written' | 'seen';

export interface ObserveOptions {
  policies: readonly ResolvedPolicy[];
  /** Nodes down from the start. */
  notReady: readonly string[];
  operator: OperatorIdentity;
  /** How long a reboot takes, as the report states it. */
  rebootMs: number;
  timeoutMs: number;
  log: (line: string) => void;
  /** The nodes whose finishing ends the run (default: every node). */
  until?: readonly string[];
  /** How a phase's start is timed (default `written`). */
  stamp?: PhaseStamp;
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
  /** Each node's last state-since as written, so a phase seen again is not taken for a new one. */
  readonly #since = new Map<string, string>();
  readonly #stamp: PhaseStamp;
  t0 = Date.now();

  constructor(stamp: PhaseStamp) {
    this.#stamp = stamp;
  }

  observe(node: V1Node): void {
    const name = node.metadata?.name ?? '';
    const a = node.metadata?.annotations ?? {};
    const phase = a[Annotations.state] ?? Phase.idle;
    const sinceText = a[Annotations.stateSince] ?? '';
    const list = this.phases.get(name) ?? [];
    const last = list.at(-1);
    const reason = a[Annotations.stateReason];
    if (last && last.phase === phase && this.#since.get(name) === sinceText && last.reason === reason) return;
    this.#since.set(name, sinceText);
    const since = Date.parse(sinceText);
    const atMs = (this.#stamp === 'written' && !Number.isNaN(since) ? since : Date.now()) - this.t0;
    list.push({ phase, atMs, ...(reason ? { reason } : {}) });
    this.phases.set(name, list);
  }
}

/**
 * Starts `driver`, asks every node for its update, and records the rollout until every node (or every
 * node of `until`) finished, or `timeoutMs`.
 */
export async function observeRollout(
  cluster: LocalCluster,
  options: ObserveOptions,
  driver: RolloutDriver,
): Promise<RunObservations> {
  const { kubeconfig } = cluster;
  const core = kubeconfig.makeApiClient(CoreV1Api);
  const { policies: resolved, notReady } = options;
  const phases = new PhaseLog(options.stamp ?? 'written');
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
    const clock = await driver.start();
    phases.t0 = Date.now();
    await driver.ask();
    const finished = (n: V1Node) => {
      const a = n.metadata?.annotations ?? {};
      return (
        driver.rebootsOf(n.metadata?.name ?? '') >= 1 &&
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
    await driver.stop();
    const evictions = await readEvictions(cluster, options.operator, phases.t0, pods);
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
        reboots: driver.allRebootsOf(name),
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
      violations: driver.violations(),
      calendarStartMs: calendar(0),
      windowStretches: resolved.flatMap((p) =>
        p.windows.windows.length > 0 || p.windows.exclusions.length > 0
          ? [{ pool: p.name, stretches: openStretches(p.windows, calendar(0), calendar(elapsedMs)) }]
          : [],
      ),
    };
  } finally {
    await driver.stop();
    await Promise.all([nodes.stop(), podInformer.stop()]);
  }
}

/**
 * The operator's evictions, from the audit log once it holds them all: the API server writes it in
 * batches, in order, so a request made as the operator after it stopped marks the end.
 */
async function readEvictions(
  cluster: LocalCluster,
  operator: OperatorIdentity,
  t0: number,
  pods: ReadonlyMap<string, { node?: string; workload?: string; created: number }>,
): Promise<ObservedEviction[]> {
  const kc = new KubeConfig();
  kc.loadFromFile(operator.kubeconfigPath);
  const marker = `whatif-end-${Date.now()}`;
  await kc
    .makeApiClient(CoreV1Api)
    .readNamespace({ name: marker })
    .catch(() => {});
  const events = await pollUntil(
    'the audit log to hold the end of the run',
    async () => {
      const all = (await readAuditLog(cluster.auditLogPath ?? '', operator.user)) as EvictionAudit[];
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
