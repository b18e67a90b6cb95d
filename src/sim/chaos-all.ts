/**
 * Chaos runs with everything on (`npm run chaos -- --all`), side by side on one cluster (the pools:
 * chaos-all-plan.ts): FLUO's real update-agents under a FLUO-protocol policy; FleetLock clients asking the
 * operators' FleetLock servers; a mixed pool where kured 1.23.0 reboots its node under its own lock beside
 * nuo's agents, whose nodes an upgrade Plan (a prepare Job, then a Job that reboots the node) updates; and
 * a pool with every gate: the gates run's policy (chaos-gates.ts) with a PromQL health check against a real
 * Prometheus beside its object check, pod blockers of both scopes and a circuit breaker. The run plays the
 * people and programs around it (playAll): the metric turned bad, an autoscaler's deletion taint, blocking
 * pods, a pod that must not be disrupted. The checker holds every pool to its budget and the gates pool to
 * every gate's rule (allChecking).
 */
import { createHash } from 'node:crypto';
import type { KubernetesObject, V1Deployment, V1Node } from '@kubernetes/client-node';
import {
  AgentProtocol,
  Annotations,
  AutoscalerTaints,
  PodAnnotations,
  SCALE_DOWN_PROTECTION,
} from '../api/keys.ts';
import type { UpdatePolicySpec } from '../api/update-policy.ts';
import { sleep } from '../kube/backoff.ts';
import { statusCode } from '../kube/errors.ts';
import { mergePatch, strategicMergePatch } from '../kube/patch.ts';
import { KURED_LOCK_ANNOTATION } from '../operator/protocols/kured-lock.ts';
import { pollUntil } from '../util/poll.ts';
import type { AllPlan, AllPools, Spell } from './chaos-all-plan.ts';
import type { Env } from './chaos-env.ts';
import { CHAOS_NAMESPACE } from './chaos-faults.ts';
import {
  BLOCKER_INTERVAL_MS,
  gatesChecking,
  gatesPolicy,
  HEALTHY,
  persist,
  prepareGates,
  resetGates,
  STALE_MARGIN_MS,
  setHealth,
  WIDGETS,
} from './chaos-gates.ts';
import { POOL_LABEL } from './chaos-policies.ts';
import { prepareUpgrades } from './chaos-upgrade-env.ts';
import type { Budget } from './checker.ts';
import type { GateChecker, GateSettings } from './checker-gates.ts';
import { inAttemptPhase } from './checker-phases.ts';
import type { LocalCluster } from './cluster/cluster.ts';
import { KURED_ACCOUNT } from './kured-agent.ts';
import { applyPolicy } from './policies.ts';
import { MetricTarget, type RunningPrometheus, startPrometheusFor } from './prometheus.ts';

/** The policies of the pools beside the gated one (chaos-gates.ts GATES_POLICY), each named for its pool. */
export const ALL_POLICIES = {
  fluo: 'chaos-fluo',
  fleetlock: 'chaos-fleetlock',
  mixed: 'chaos-mixed',
} as const;
/** The Widget the PromQL check's metric mirrors: written before the metric turns, so the checker can order it. */
const METRIC_WIDGET = 'metric';
const METRIC = 'chaos_health';
/** How old the operator's PromQL reading may be: its interval, a scrape, and the margin. */
const METRIC_STALE_MS = BLOCKER_INTERVAL_MS + 2000 + STALE_MARGIN_MS;
/** How old a reading may be while Prometheus hangs: the interval, a query's timeout (5 s), the margin. */
export const HANG_STALE_MS = BLOCKER_INTERVAL_MS + 5000 + STALE_MARGIN_MS;
const BLOCKER_LABEL = 'chaos.nuo.dev/blocker';
const DND_LABEL = 'chaos.nuo.dev/do-not-disrupt';
const HOSTNAME = 'kubernetes.io/hostname';
const QUICK = {
  drain: { timeout: '60s' },
  reboot: { soak: '1s', rebootTimeout: '20s', returnTimeout: '20s', retryBackoff: '5s' },
};

/** What a campaign with everything on keeps across its runs: Prometheus and the metric it scrapes. */
export interface AllEnv {
  prometheus: RunningPrometheus;
  metric: MetricTarget;
  /** Each FleetLock node's machine ID, as its kubelet reports it. */
  machineIds: Map<string, string>;
  stop(): Promise<void>;
}

/** A node's machine ID, fixed by its name (32 hex digits, as /etc/machine-id). */
const machineIdOf = (node: string) => createHash('sha256').update(node).digest('hex').slice(0, 32);

/** The pools' labels, machine IDs, the CRDs, Prometheus scraping the run's metric, the static policies. */
export async function prepareAll(
  cluster: LocalCluster,
  env: Env,
  pools: AllPools,
  maxUnavailable: number,
): Promise<AllEnv> {
  await prepareGates(cluster);
  await prepareUpgrades(cluster);
  const poolOf = poolsByNode(pools);
  for (const [name, pool] of poolOf)
    await env.core.patchNode({ name, body: { metadata: { labels: { [POOL_LABEL]: pool } } } }, mergePatch);
  const machineIds = new Map(pools.fleetlock.map((n) => [n, machineIdOf(n)]));
  for (const [name, machineID] of machineIds)
    await env.core.patchNodeStatus(
      { name, body: { status: { nodeInfo: { machineID } } } },
      strategicMergePatch,
    );
  const selector = (pool: string) => ({ matchLabels: { [POOL_LABEL]: pool } });
  await applyPolicy(cluster, ALL_POLICIES.fluo, {
    ...QUICK,
    nodeSelector: selector('fluo'),
    maxUnavailable: 1,
    agentProtocol: AgentProtocol.flatcar,
  });
  await applyPolicy(cluster, ALL_POLICIES.fleetlock, {
    ...QUICK,
    nodeSelector: selector('fleetlock'),
    maxUnavailable: 1,
    agentProtocol: AgentProtocol.fleetlock,
  });
  await applyPolicy(cluster, ALL_POLICIES.mixed, {
    ...QUICK,
    nodeSelector: selector('mixed'),
    maxUnavailable,
    coexistence: { kured: { daemonSet: { ...KURED_ACCOUNT }, concurrency: 1 } },
  });
  const metric = new MetricTarget();
  metric.gauges.set(METRIC, 1);
  const prometheus = await startPrometheusFor([await metric.listen()], 'groups: []\n');
  return {
    prometheus,
    metric,
    machineIds,
    stop: async () => {
      await prometheus.stop();
      await metric.close();
    },
  };
}

/** node → the pool label value it carries. */
export function poolsByNode(pools: AllPools): Map<string, string> {
  const out = new Map<string, string>();
  for (const n of pools.fluo) out.set(n, 'fluo');
  for (const n of pools.fleetlock) out.set(n, 'fleetlock');
  for (const n of [...pools.kured, ...pools.plan]) out.set(n, 'mixed');
  for (const n of pools.gates) out.set(n, 'gates');
  return out;
}

/** The gated pool's policy: the gates run's, over its pool, with a PromQL check, pod blockers and a breaker. */
export function allGatesPolicy(
  maxUnavailable: number,
  all: AllPlan,
  prometheusUrl: string,
): UpdatePolicySpec {
  const base = gatesPolicy(maxUnavailable, all.gates);
  return {
    ...base,
    nodeSelector: { matchLabels: { [POOL_LABEL]: 'gates' } },
    healthChecks: [
      ...(base.healthChecks ?? []),
      { name: 'metric', prometheus: { url: prometheusUrl, query: METRIC, condition: '== 1' } },
    ],
    blockers: {
      pods: [
        { selector: { matchLabels: { [BLOCKER_LABEL]: 'node' } }, scope: 'Node' },
        { selector: { matchLabels: { [BLOCKER_LABEL]: 'pool' } }, scope: 'Pool' },
      ],
    },
    // Two of the pool's own reboots at once already trip it: a trip in most runs.
    circuitBreaker: { maxNotReady: 1 },
  };
}

/** What the checker holds an `--all` run to: each pool's budget (the gated one in waves), every gate's rule. */
export function allChecking(
  maxUnavailable: number,
  all: AllPlan,
): { budgets: Budget[]; gates: GateSettings } {
  const of = (pool: string) => (labels: Record<string, string>) => labels[POOL_LABEL] === pool;
  const g = gatesChecking(maxUnavailable, all.gates);
  const healthy = (o: KubernetesObject) =>
    (o as KubernetesObject & { status?: { health?: string } }).status?.health === HEALTHY;
  return {
    budgets: [
      { name: 'pool fluo', selects: of('fluo'), max: 1, protocol: AgentProtocol.flatcar },
      { name: 'pool fleetlock', selects: of('fleetlock'), max: 1, protocol: AgentProtocol.fleetlock },
      { name: 'pool mixed', selects: of('mixed'), max: maxUnavailable },
      ...g.budgets.map((b) => ({ ...b, name: 'pool gates', selects: of('gates') })),
    ],
    gates: {
      ...g.checker,
      selects: of('gates'),
      objects: [
        { ...WIDGETS, namespace: CHAOS_NAMESPACE, name: METRIC_WIDGET, healthy, staleMs: METRIC_STALE_MS },
      ],
      circuitBreaker: { maxNotReady: 1 },
      doNotDisrupt: { namespace: CHAOS_NAMESPACE, labelSelector: `${DND_LABEL}=true` },
    },
  };
}

/** Sets the metric: its Widget first (the checker orders by it), then the gauge Prometheus scrapes. */
async function setMetric(cluster: LocalCluster, a: AllEnv, healthy: boolean, signal?: AbortSignal) {
  await setHealth(cluster, healthy ? HEALTHY : 'HEALTH_WARN', signal, METRIC_WIDGET);
  a.metric.gauges.set(METRIC, healthy ? 1 : 0);
}

/**
 * A clean slate for an `--all` run: the gates run's (the gated policy, its Widget healthy, no node with its
 * condition), the metric good, kured's lock free, no autoscaler taint, no pod of the people's.
 */
export async function resetAll(
  cluster: LocalCluster,
  env: Env,
  a: AllEnv,
  all: AllPlan,
  maxUnavailable: number,
) {
  // The gates run's slate (its Widget healthy, no node with its condition) under the gated pool's policy.
  await resetGates(
    cluster,
    env,
    maxUnavailable,
    all.gates,
    allGatesPolicy(maxUnavailable, all, a.prometheus.url),
  );
  await setMetric(cluster, a, true);
  await env.apps
    .patchNamespacedDaemonSet(
      { ...KURED_ACCOUNT, body: { metadata: { annotations: { [KURED_LOCK_ANNOTATION]: null } } } },
      mergePatch,
    )
    .catch((err) => {
      if (statusCode(err) !== 404) throw err;
    });
  for (const n of (await env.core.listNode()).items)
    if (n.spec?.taints?.some((t) => t.key === AutoscalerTaints.clusterAutoscaler))
      await taint(env, n.metadata?.name ?? '', false);
  for (const label of [BLOCKER_LABEL, DND_LABEL])
    await env.apps.deleteCollectionNamespacedDeployment({ namespace: CHAOS_NAMESPACE, labelSelector: label });
  await pollUntil(
    "no pod of the people's left",
    async () => {
      const pods = await env.core.listNamespacedPod({
        namespace: CHAOS_NAMESPACE,
        labelSelector: `${BLOCKER_LABEL}`,
      });
      const dnd = await env.core.listNamespacedPod({ namespace: CHAOS_NAMESPACE, labelSelector: DND_LABEL });
      return pods.items.length + dnd.items.length === 0 ? true : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 250 },
  );
}

/** What the people and programs around an `--all` run did, for its report. */
export interface AllActs {
  metricBad: number;
  autoscalerTaints: number;
  blockingPods: number;
  doNotDisruptPods: number;
}

/** A Deployment of one pod on `node`, labelled `label`=`value` (and annotated), as its owner runs it. */
function pinned(name: string, node: string, labels: Record<string, string>, annotations = {}): V1Deployment {
  const all = { app: name, ...labels };
  return {
    metadata: { name, namespace: CHAOS_NAMESPACE, labels },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: all, annotations },
        spec: {
          nodeSelector: { [HOSTNAME]: node },
          containers: [{ name, image: 'registry.example/nuo-demo:1' }],
          terminationGracePeriodSeconds: 1,
        },
      },
    },
  };
}

/**
 * Plays the people and programs around an `--all` run until `signal` aborts, each at its spell: the
 * metric turned bad; a cluster autoscaler tainting a node it means to remove (one it may remove: in no
 * attempt, without the scale-down protection nuo sets) and untainting it; a pod a node-scoped and a
 * pool-scoped blocker match, running (the checker told once it runs); a pod annotated do-not-disrupt on
 * a node, its annotation removed before its owner deletes it.
 */
export function playAll(
  cluster: LocalCluster,
  env: Env,
  a: AllEnv,
  all: AllPlan,
  gates: GateChecker,
  signal: AbortSignal,
  note: (line: string) => void,
): { acts: AllActs; done: Promise<void> } {
  const acts: AllActs = { metricBad: 0, autoscalerTaints: 0, blockingPods: 0, doNotDisruptPods: 0 };
  const quiet = (what: string, p: Promise<unknown>) =>
    p.then(
      () => undefined,
      (err: Error) => {
        if (!signal.aborted) note(`${what}: ${err.message}`);
      },
    );
  const at = async (s: Spell) => {
    await sleep(s.atMs, signal);
    return !signal.aborted;
  };
  const metric = all.metric.map(async (s) => {
    if (!(await at(s))) return;
    await setMetric(cluster, a, false, signal);
    acts.metricBad++;
    note(`metric ${METRIC} 0 (its Widget HEALTH_WARN) for ${s.forMs} ms`);
    await sleep(s.forMs, signal);
    await setMetric(cluster, a, true);
  });
  const autoscaler = (async () => {
    const s = all.autoscaler;
    if (!(await at(s))) return;
    const tainted = await taint(env, s.node, true, signal);
    if (!tainted) return;
    acts.autoscalerTaints++;
    note(`${s.node} tainted ${AutoscalerTaints.clusterAutoscaler}:NoSchedule for ${s.forMs} ms`);
    await sleep(s.forMs, signal);
    await taint(env, s.node, false);
  })();
  const blockers = all.blockers.map(async (b) => {
    if (!(await at(b))) return;
    const name = `blocker-${b.scope.toLowerCase()}`;
    await persist(`create ${name}`, () =>
      env.apps.createNamespacedDeployment({
        namespace: CHAOS_NAMESPACE,
        body: pinned(name, b.node, { [BLOCKER_LABEL]: b.scope.toLowerCase() }),
      }),
    );
    const ran = await runningOn(env, name, b.node, b.forMs, signal);
    let end: (() => Promise<void>) | undefined;
    if (ran) {
      acts.blockingPods++;
      end = gates.hold(
        'pod-blocker',
        `${b.scope}-scoped blocking pod ${name} running on ${b.node}`,
        BLOCKER_INTERVAL_MS + STALE_MARGIN_MS,
        b.scope === 'Node' ? b.node : undefined,
      );
      note(`${b.scope}-scoped blocking pod ${name} running on ${b.node} for ${b.forMs} ms`);
      await sleep(b.forMs, signal);
    } else note(`${b.scope}-scoped blocking pod ${name} never ran on ${b.node} (cordoned)`);
    await end?.();
    await persist(`delete ${name}`, () =>
      env.apps.deleteNamespacedDeployment({ namespace: CHAOS_NAMESPACE, name }),
    );
  });
  const dnd = (async () => {
    const s = all.doNotDisrupt;
    if (!(await at(s))) return;
    const name = 'do-not-disrupt';
    await persist(`create ${name}`, () =>
      env.apps.createNamespacedDeployment({
        namespace: CHAOS_NAMESPACE,
        body: pinned(name, s.node, { [DND_LABEL]: 'true' }, { [PodAnnotations.doNotDisrupt]: 'true' }),
      }),
    );
    acts.doNotDisruptPods++;
    note(`pod ${name} (${PodAnnotations.doNotDisrupt}=true) on ${s.node} for ${s.forMs} ms`);
    await sleep(s.forMs, signal);
    // Its owner lets it go: the annotation off first, then the pod.
    const pods = await persist(`list ${name}`, () =>
      env.core.listNamespacedPod({ namespace: CHAOS_NAMESPACE, labelSelector: `${DND_LABEL}=true` }),
    );
    for (const p of pods.items)
      await persist(`release ${p.metadata?.name}`, () =>
        env.core.patchNamespacedPod(
          {
            namespace: CHAOS_NAMESPACE,
            name: p.metadata?.name ?? '',
            body: { metadata: { annotations: { [PodAnnotations.doNotDisrupt]: null } } },
          },
          mergePatch,
        ),
      ).catch((err) => {
        if (statusCode(err) !== 404) throw err;
      });
    await persist(`delete ${name}`, () =>
      env.apps.deleteNamespacedDeployment({ namespace: CHAOS_NAMESPACE, name }),
    );
  })();
  return {
    acts,
    done: Promise.all([
      ...metric.map((p) => quiet('metric', p)),
      quiet('autoscaler', autoscaler),
      ...blockers.map((p) => quiet('blocker', p)),
      quiet('do-not-disrupt', dnd),
    ]).then(() => undefined),
  };
}

/** Whether the Deployment `name`'s pod runs on `node` within `withinMs`. */
async function runningOn(env: Env, name: string, node: string, withinMs: number, signal: AbortSignal) {
  return pollUntil(
    `${name}'s pod to run on ${node}`,
    async () => {
      const pods = await env.core.listNamespacedPod({
        namespace: CHAOS_NAMESPACE,
        labelSelector: `app=${name}`,
      });
      return pods.items.some((p) => p.spec?.nodeName === node && p.status?.phase === 'Running')
        ? true
        : undefined;
    },
    { timeoutMs: withinMs, intervalMs: 250, signal },
  ).catch(() => false);
}

/** A node a cluster autoscaler may remove: in no attempt, and not protected from scale-down. */
const removable = (n: V1Node) =>
  !inAttemptPhase(n) &&
  n.metadata?.annotations?.[Annotations.cordonedByNuo] !== 'true' &&
  !SCALE_DOWN_PROTECTION.some((k) => n.metadata?.annotations?.[k] !== undefined);

/**
 * The cluster autoscaler's deletion taint on `node`, added (once the node is one it may remove, within a
 * minute) or removed, by a write conditional on the node as read. Whether it was added.
 */
async function taint(env: Env, node: string, on: boolean, signal?: AbortSignal): Promise<boolean> {
  const key = AutoscalerTaints.clusterAutoscaler;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (signal?.aborted || Date.now() > deadline) return false;
    const n = await env.core.readNode({ name: node }).catch(() => undefined);
    if (!n || (on && !removable(n))) {
      await sleep(250, signal);
      continue;
    }
    const others = (n.spec?.taints ?? []).filter((t) => t.key !== key);
    const taints = on
      ? [...others, { key, value: String(Math.floor(Date.now() / 1000)), effect: 'NoSchedule' }]
      : others;
    const written = await env.core
      .patchNode(
        {
          name: node,
          body: { metadata: { resourceVersion: n.metadata?.resourceVersion }, spec: { taints } },
        },
        mergePatch,
      )
      .then(
        () => true,
        (err) => {
          if (statusCode(err) === 409 || statusCode(err) === undefined || (statusCode(err) ?? 0) >= 500)
            return false;
          throw err;
        },
      );
    if (written) return true;
    await sleep(250, signal);
  }
}
