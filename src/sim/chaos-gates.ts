/**
 * Chaos runs through a pool's gates (`npm run chaos -- --gates`): one UpdatePolicy over every node with
 * a health check on a custom resource (a Widget whose status the run flips, as a CephCluster's would
 * turn), waves with a failure budget of one failed attempt, a remediation for a node condition, a
 * refresh by maxUptime and a budget for those two reasons. The run plays the people around it
 * (chaos-gates-plan.ts says when): node-problem-detector setting the condition and clearing it once the
 * node rebooted, and the operator on call who resumes a halted pool with `nuo policy resume`. The
 * checker watches the policy and the Widget itself (checker-gates.ts).
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { type CoreV1Api, CustomObjectsApi, type KubernetesObject } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, UPDATE_POLICY } from '../api/crd.ts';
import { Annotations } from '../api/keys.ts';
import { Phase } from '../api/phases.ts';
import type { UpdatePolicy, UpdatePolicySpec } from '../api/update-policy.ts';
import { sleep } from '../kube/backoff.ts';
import { statusCode } from '../kube/errors.ts';
import { mergePatch } from '../kube/patch.ts';
import type { Env } from './chaos-env.ts';
import { CHAOS_NAMESPACE } from './chaos-faults.ts';
import { type GatesPlan, RETURN_TIMEOUT_MS } from './chaos-gates-plan.ts';
import type { Budget } from './checker.ts';
import type { GateSettings } from './checker-gates.ts';
import type { LocalCluster } from './cluster/cluster.ts';
import type { Fleet } from './fleet.ts';
import { clearNodeProblem, setNodeProblem } from './node-problem.ts';
import { applyPolicy, deletePolicies, installPolicyCrd } from './policies.ts';
import { installWidgetCrd } from './widgets.ts';

export const GATES_POLICY = 'chaos-gates';
export const WIDGETS = { group: 'chaos.nuo.dev', version: 'v1', plural: 'widgets' } as const;
const WIDGET = { ...WIDGETS, namespace: CHAOS_NAMESPACE, name: 'health' };
export const HEALTHY = 'HEALTH_OK';
const CONDITION = 'KernelDeadlock';
const HOUR_MS = 3_600_000;
/** The operators' --blocker-interval in a gates run: how often the leader reads the health check. */
export const BLOCKER_INTERVAL_MS = 1000;
/** Beyond one interval, how old a reading may be when it admits (a pass's own time, a slow machine). */
export const STALE_MARGIN_MS = 4000;

const bin = fileURLToPath(new URL('../../bin/nuo.js', import.meta.url));

export interface ChaosGates {
  budgets: Budget[];
  checker: GateSettings;
}

/** The policy of a gates run (its soak and timeouts as chaos-policies.ts QUICK's). */
export function gatesPolicy(maxUnavailable: number, g: GatesPlan): UpdatePolicySpec {
  return {
    maxUnavailable,
    drain: { timeout: '60s' },
    reboot: {
      soak: '1s',
      rebootTimeout: '20s',
      returnTimeout: `${RETURN_TIMEOUT_MS / 1000}s`,
      retryBackoff: '5s',
      maxUptime: '1h',
    },
    healthChecks: [
      {
        name: 'widget',
        object: {
          apiVersion: `${WIDGETS.group}/${WIDGETS.version}`,
          kind: 'Widget',
          namespace: WIDGET.namespace,
          name: WIDGET.name,
          expression: `object.status.health == '${HEALTHY}'`,
        },
      },
    ],
    rollout: {
      waves: {
        initial: g.waves.initial,
        growth: g.waves.growth,
        pauseBetween: `${g.waves.pauseBetweenMs / 1000}s`,
      },
      failureBudget: { maxFailedAttempts: 1 },
    },
    // `for` counts from when the operator first saw the condition (its own clock), whatever its age.
    remediation: { conditions: [{ type: CONDITION, for: '5s' }], maxPerHour: 1 },
    budgets: [{ name: 'fixes', nodes: 1, reasons: ['Remediation', 'Refresh'] }],
  };
}

/** What the checker holds the gates run to: the pool's budget in waves, and the gates' own rules. */
export function gatesChecking(maxUnavailable: number, g: GatesPlan): ChaosGates {
  return {
    budgets: [
      {
        name: GATES_POLICY,
        selects: () => true,
        max: maxUnavailable,
        waves: { initial: g.waves.initial, growth: g.waves.growth },
      },
    ],
    checker: {
      policy: GATES_POLICY,
      object: {
        ...WIDGET,
        healthy: (o) => (o as KubernetesObject & { status?: { health?: string } }).status?.health === HEALTHY,
      },
      staleMs: BLOCKER_INTERVAL_MS + STALE_MARGIN_MS,
      asks: { remediation: { types: [CONDITION], forMs: 5000 }, maxUptimeMs: HOUR_MS },
      reasonBudgets: [{ name: 'fixes', max: 1, reasons: ['Remediation', 'Refresh'] }],
      remediationsPerHour: 1,
    },
  };
}

/** The Widget CRD (once per cluster), no other policy. */
export async function prepareGates(cluster: LocalCluster): Promise<void> {
  await installPolicyCrd(cluster);
  await deletePolicies(cluster);
  await installWidgetCrd(cluster.kubeconfig, WIDGETS, CHAOS_NAMESPACE);
}

/** Sends `call` until it is answered, through an API server restart or pause (as a person retries). */
export async function persist<T>(what: string, call: () => Promise<T>, signal?: AbortSignal): Promise<T> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      return await call();
    } catch (err) {
      const code = statusCode(err);
      if ((code !== undefined && code < 500 && code !== 429) || signal?.aborted) throw err;
      if (Date.now() > deadline) throw new Error(`${what}: no answer within 60s (${(err as Error).message})`);
      await sleep(200, signal);
    }
  }
}

/** Sets a Widget's health (creating it the first time): the health check's own by default. */
export async function setHealth(
  cluster: LocalCluster,
  health: string,
  signal?: AbortSignal,
  name: string = WIDGET.name,
): Promise<void> {
  const custom = cluster.kubeconfig.makeApiClient(CustomObjectsApi);
  const body = {
    apiVersion: `${WIDGETS.group}/${WIDGETS.version}`,
    kind: 'Widget',
    metadata: { name },
    status: { health },
  };
  await persist(
    `set Widget ${name}'s health to ${health}`,
    () =>
      custom.createNamespacedCustomObject({ ...WIDGETS, namespace: WIDGET.namespace, body }).catch((err) => {
        if (statusCode(err) !== 409) throw err;
        return custom.patchNamespacedCustomObject(
          { ...WIDGET, name, body: { status: { health } } },
          mergePatch,
        );
      }),
    signal,
  );
}

const setCondition = (core: CoreV1Api, node: string, present: boolean) =>
  present
    ? setNodeProblem(core, node, {
        type: CONDITION,
        reason: 'DockerHung',
        message: 'chaos runner, as node-problem-detector: task docker:7 blocked for more than 120 seconds.',
        // Held long enough (the policy's `for` is 5m): due at once.
        since: new Date(Date.now() - 10 * 60_000),
      })
    : clearNodeProblem(core, node, CONDITION);

/** A clean slate for a gates run: the run's policy, the Widget healthy, no node with the condition. */
export async function resetGates(
  cluster: LocalCluster,
  env: Env,
  maxUnavailable: number,
  g: GatesPlan,
  spec: UpdatePolicySpec = gatesPolicy(maxUnavailable, g),
): Promise<void> {
  await applyPolicy(cluster, GATES_POLICY, spec);
  await setHealth(cluster, HEALTHY);
  for (const n of (await env.core.listNode()).items)
    if (n.status?.conditions?.some((c) => c.type === CONDITION))
      await setCondition(env.core, n.metadata?.name ?? '', false);
}

/** The Fleet's settings for a gates run: the refresh nodes booted 3 h ago. */
export const bootedAt = (g: GatesPlan): Record<string, Date> =>
  Object.fromEntries(g.refresh.map((n) => [n, new Date(Date.now() - 3 * HOUR_MS)]));

/** What the people around a gates run did, for its report. */
export interface GatesActs {
  unhealthy: number;
  resumes: number;
  remediationSet: boolean;
}

/**
 * Plays the run's people until `signal` aborts: the Widget turns unhealthy and back at its spells, the
 * remediation's condition is set from its moment (on a node with an update, once it rebooted for it)
 * and kept until the node's reboots are done, then cleared; a halted pool is resumed by `nuo policy
 * resume` after the planned delay, and again if it stays halted (a resume the operator could not use).
 */
export function playGates(
  cluster: LocalCluster,
  env: Env,
  fleet: Fleet,
  g: GatesPlan,
  expected: ReadonlyMap<string, number>,
  updated: ReadonlySet<string>,
  signal: AbortSignal,
  note: (line: string) => void,
): { acts: GatesActs; done: Promise<void> } {
  const acts: GatesActs = { unhealthy: 0, resumes: 0, remediationSet: false };
  const quiet = (p: Promise<unknown>) =>
    p.then(
      () => undefined,
      (err: Error) => {
        if (!signal.aborted) note(`gates: ${err.message}`);
      },
    );
  const spells = g.unhealthy.map(async (u) => {
    await sleep(u.atMs, signal);
    if (signal.aborted) return;
    await setHealth(cluster, 'HEALTH_WARN', signal);
    acts.unhealthy++;
    note(`Widget ${WIDGET.name} HEALTH_WARN for ${u.forMs} ms`);
    await sleep(u.forMs, signal);
    // Healthy again even when the run is over: the next run starts healthy anyway.
    await setHealth(cluster, HEALTHY);
  });
  const node = g.remediation.node;
  const want = expected.get(node) ?? 1;
  const remediate = (async () => {
    await sleep(g.remediation.atMs, signal);
    // No phase is Idle, as nuo reads it (a node deleted and registered again has none); a read that
    // failed is no answer.
    const state = async () =>
      (await env.core.readNode({ name: node })).metadata?.annotations?.[Annotations.state] ?? Phase.idle;
    // The condition comes when no update is left to reboot for (else that reboot takes it: no remediation).
    while (
      !signal.aborted &&
      updated.has(node) &&
      !(fleet.checker.rebootsOf(node) >= 1 && (await state().catch(() => undefined)) === Phase.idle)
    )
      await sleep(250, signal);
    while (!signal.aborted && fleet.checker.rebootsOf(node) < want) {
      const n = await env.core.readNode({ name: node }).catch(() => undefined);
      // Set, and set again on a node deleted and registered again (its status is new); a write the API
      // server did not answer (restarting) is tried again at the next look.
      if (n && !n.status?.conditions?.some((c) => c.type === CONDITION)) {
        const set = await setCondition(env.core, node, true).then(
          () => true,
          () => false,
        );
        if (set && !acts.remediationSet)
          note(`${node}: ${CONDITION}=True (for 10m), as node-problem-detector says`);
        acts.remediationSet ||= set;
      }
      await sleep(500, signal);
    }
    if (!signal.aborted)
      await persist(`clear ${CONDITION} on ${node}`, () => setCondition(env.core, node, false), signal);
  })();
  const resume = (async () => {
    const custom = cluster.kubeconfig.makeApiClient(CustomObjectsApi);
    const ref = { group: API_GROUP, version: API_VERSION, plural: UPDATE_POLICY.plural, name: GATES_POLICY };
    let lastResume = 0;
    while (!signal.aborted) {
      const p = (await custom.getClusterCustomObject(ref).catch(() => undefined)) as UpdatePolicy | undefined;
      const halted = p?.status?.conditions?.find((c) => c.type === 'Halted' && c.status === 'True');
      if (halted && Date.now() - lastResume > 15_000) {
        const delay = g.resumeAfterMs[Math.min(acts.resumes, g.resumeAfterMs.length - 1)] ?? 1000;
        await sleep(delay, signal);
        if (signal.aborted) return;
        const r = await nuo(cluster, ['policy', 'resume', GATES_POLICY]);
        lastResume = Date.now();
        acts.resumes++;
        note(`Halted (${halted.message}); after ${delay} ms: nuo policy resume: ${r}`);
      }
      await sleep(250, signal);
    }
  })();
  return {
    acts,
    done: Promise.all([...spells.map(quiet), quiet(remediate), quiet(resume)]).then(() => undefined),
  };
}

/** Runs the nuo CLI as a person would; its output (or its error) in one line. */
function nuo(cluster: LocalCluster, args: string[]): Promise<string> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [bin, ...args, `--kubeconfig=${cluster.kubeconfigPath}`],
      { timeout: 60_000 },
      (err, stdout, stderr) => resolve(err ? `failed: ${stderr.trim() || err.message}` : stdout.trim()),
    );
  });
}
