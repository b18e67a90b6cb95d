/**
 * The chaos runner: rollouts on the real local control plane (two operator replicas always run) while
 * faults of every kind in chaos-plan.ts strike at seeded moments (chaos-faults.ts says how each one
 * strikes), with reboots of random lengths and, sometimes, a node that never returns. An independent
 * SafetyChecker per run records every breach of the safety rules, and "not-finished" when the rollout
 * misses its bound.
 *
 * Each run's plan comes from its seed alone (chaos-plan.ts): run i of `--seed S` uses seed S+i, so one
 * failing run's plan is replayed on its own with `--seed S+i --runs 1`. The plan (faults, offsets,
 * targets) is the same on every replay; the timing of the system under test may differ, and so may the
 * pods' placement at its start: the runs of a campaign share one cluster, and each starts with the pods
 * where the earlier runs' drains left them (logged at each run's start). Replaying the campaign up to
 * the failing run (`--seed S --runs i+1`) starts it from the same sequence of runs.
 */
import { appendFileSync, cpSync } from 'node:fs';
import { join } from 'node:path';
import { sleep } from '../kube/backoff.ts';
import { pollUntil } from '../util/poll.ts';
import { type AllEnv, prepareAll, resetAll } from './chaos-all.ts';
import { allPools, describeAll, planAll } from './chaos-all-plan.ts';
import {
  AllReplicas,
  type AllRun,
  allExpected,
  allFaultContext,
  allFleetOptions,
  allLeft,
  kuredLockOf,
  type ReplicaExtras,
  startAll,
} from './chaos-all-run.ts';
import { type Env, prepare, resetNodes } from './chaos-env.ts';
import {
  CHAOS_NAMESPACE,
  type FaultContext,
  LEASE,
  OPERATOR_NAMESPACE,
  type Replicas,
  strike,
} from './chaos-faults.ts';
import {
  BLOCKER_INTERVAL_MS,
  bootedAt,
  type ChaosGates,
  type GatesActs,
  gatesChecking,
  playGates,
  prepareGates,
  resetGates,
} from './chaos-gates.ts';
import { describeGates, expectedReboots, type GatesPlan, gatedRun, planGates } from './chaos-gates-plan.ts';
import {
  DEFAULT_TIMINGS,
  describeFault,
  describePlan,
  FAULT_KINDS,
  type Fault,
  type FaultKind,
  type PlanTimings,
  planRun,
  type RunPlan,
} from './chaos-plan.ts';
import {
  CHAOS_NODE_GATES,
  type ChaosPools,
  prepareFluoPools,
  prepareOnePool,
  preparePools,
} from './chaos-policies.ts';
import { awaitRollout } from './chaos-progress.ts';
import { type DrainSummary, drainSummary, readinessRepairs, workloadReport } from './chaos-report.ts';
import {
  type ChaosUpgrade,
  describeUpgrade,
  planUpgrade,
  UPGRADE_NAME,
  UPGRADE_NAMESPACE,
  UPGRADE_REF,
  upgradeBoundMs,
  upgradePlan,
} from './chaos-upgrade.ts';
import { prepareUpgrades, removeUpgrade } from './chaos-upgrade-env.ts';
import type { Violation } from './checker.ts';
import { type LocalCluster, startCluster } from './cluster/cluster.ts';
import { Fleet } from './fleet.ts';
import { RebootBehaviour } from './host.ts';
import { type LeaseSupervision, superviseKwok } from './kwok-leases.ts';
import { applyPlan, readPlan } from './plans.ts';
import { placementSummary } from './workload.ts';

const _ZONE = 'topology.kubernetes.io/zone';

export interface ChaosOptions {
  /** A running cluster with exactly `nodes` nodes (reused across runs); default: start one and stop it. */
  cluster?: LocalCluster;
  runs: number;
  /** Run i uses seed `seed + i`. */
  seed: number;
  nodes: number;
  maxUnavailable: number;
  log: (line: string) => void;
  /** If any run has a violation, the cluster's logs/ (operators, agents, components) are copied here. */
  keepLogsDir?: string;
  /** Copy the logs to keepLogsDir whatever the outcome. */
  keepLogsAlways?: boolean;
  timings?: Partial<PlanTimings>;
  /** Two UpdatePolicies (pools of half the nodes each, the run's budget and a zone cap of 1 each). */
  policies?: boolean;
  /** An upgrade Plan over every node in each run, beside the staged reboots (chaos-upgrade.ts). */
  plans?: boolean;
  /**
   * A pool of nodes running FLUO's real update-agent under a FLUO-protocol UpdatePolicy beside a pool of
   * nuo's agents (chaos-policies.ts prepareFluoPools); the faults strike both.
   */
  fluo?: boolean;
  /**
   * One UpdatePolicy with every gate: a health check on a custom resource the run flips, waves with a
   * failure budget (a late node halts the pool; the run resumes it), a remediation, refreshes and a
   * budget for those (chaos-gates.ts).
   */
  gates?: boolean;
  /**
   * Everything on, side by side (chaos-all.ts): pools of FLUO's agents, FleetLock clients, kured beside
   * an upgrade Plan, and one with every gate; the faults a clock file and a Prometheus allow as well.
   */
  all?: boolean;
}

export type Rule = Violation['rule'];
export const RULES: readonly Rule[] = [
  'budget',
  'reboot-without-grant',
  'reboot-not-drained',
  'double-reboot',
  'admin-cordon-removed',
  'cordon-left',
  'cordon-outside-attempt',
  'plan-concurrency',
  'conditions-left',
  'protection-left',
  'health-check',
  'halted',
  'reason-budget',
  'remediation-rate',
  'gate-bypassed',
  'ended-before-boot',
  'refresh-not-counted',
  'pod-blocker',
  'circuit-breaker',
  'do-not-disrupt',
  'not-finished',
];

export interface RunResult {
  index: number;
  plan: RunPlan;
  /** Faults actually injected, by kind. */
  injected: Record<FaultKind, number>;
  /** Faults that could not be injected, and why (e.g. no live leader to kill). */
  skipped: string[];
  violations: Violation[];
  /** Operators the fleet had to kill (Fleet.runaways): a failure, though no safety rule's. */
  runaways: string[];
  finished: boolean;
  /** From staging the updates until the rollout was done and every fault had been injected. */
  elapsedMs: number;
  /** The planned never-returning node, seen Failed with its slot held (an expected stall, not a breach). */
  expectedStall?: string;
  drains: DrainSummary;
  /** A gates run: what its people did, and what the checker saw of the gates. */
  gates?: GatesActs & { halts: number; remediations: number; refreshes: number };
  /** An `--all` run: each gate's holds, the people's acts, the checker's sightings, reboots by pool. */
  exercised?: Record<string, number>;
}

export interface ChaosResult {
  runs: RunResult[];
  injected: Record<FaultKind, number>;
  violations: Record<Rule, number>;
  expectedStalls: number;
  /** The command that replays these runs. */
  reproduce: string;
  /** Versions of the control plane the runs used. */
  versions: LocalCluster['binaries']['versions'];
  /** Where the logs were kept (only when a run had a violation and keepLogsDir was given). */
  logsKeptIn?: string;
  /** Gates runs: the health check's unhealthy spells, halts and resumes, remediations and refreshes. */
  gates?: Record<keyof NonNullable<RunResult['gates']>, number>;
  /** `--all` runs: RunResult.exercised added up. */
  exercised?: Record<string, number>;
}

/** Leader election fast enough for seconds-long runs (as the fault tests use). */
const OPERATOR_ARGS = ['--lease-duration=3s', '--renew-deadline=2s', '--retry-period=500ms'];
/**
 * The kubelet's unchanged-status report (5 minutes) shortened as the runs shorten the reboot timeout
 * (10 minutes to 20 s): a withdrawn need is confirmed inside the timeout, as in a cluster with the defaults.
 */
const KUBELET_REPORT_MS = 10_000;

/** Node names as startCluster() makes them: node-0 … node-(n-1), zero-padded to the same width. */
export function nodeNames(count: number): string[] {
  return Array.from({ length: count }, (_, i) => `node-${String(i).padStart(String(count - 1).length, '0')}`);
}

export function reproduceCommand(
  o: Pick<
    ChaosOptions,
    'runs' | 'seed' | 'nodes' | 'maxUnavailable' | 'policies' | 'plans' | 'fluo' | 'gates' | 'all'
  >,
) {
  return `npm run chaos -- --runs ${o.runs} --seed ${o.seed} --nodes ${o.nodes} --max-unavailable ${o.maxUnavailable}${o.policies ? ' --policies' : ''}${o.plans ? ' --plans' : ''}${o.fluo ? ' --fluo' : ''}${o.gates ? ' --gates' : ''}${o.all ? ' --all' : ''}`;
}

const emptyKinds = (): Record<FaultKind, number> =>
  Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>;

export async function runChaos(o: ChaosOptions): Promise<ChaosResult> {
  if (!(Number.isInteger(o.runs) && o.runs >= 1)) throw new Error(`runs must be ≥ 1, got ${o.runs}`);
  if (!Number.isInteger(o.seed)) throw new Error(`seed must be an integer, got ${o.seed}`);
  if (o.fluo && (o.policies || o.plans))
    throw new Error('--fluo makes pools of its own: run it without --policies or --plans');
  if (o.gates && (o.policies || o.plans || o.fluo))
    throw new Error('--gates makes a policy of its own: run it without --policies, --plans or --fluo');
  if (o.all && (o.policies || o.plans || o.fluo || o.gates))
    throw new Error('--all has every pool, Plan and gate of its own: run it alone');
  if (o.all) allPools(nodeNames(o.nodes)); // too few nodes: refused before a cluster starts
  const timings: PlanTimings = { ...DEFAULT_TIMINGS, ...o.timings };
  const names = nodeNames(o.nodes);
  const own = o.cluster === undefined;
  if (own) o.log(`starting a local control plane with ${o.nodes} nodes…`);
  const cluster = o.cluster ?? (await startCluster({ nodes: o.nodes, zones: 2 }));
  const results: RunResult[] = [];
  let logsKeptIn: string | undefined;
  let failed = false;
  let env: Env | undefined;
  const leasesStop = new AbortController();
  let leases: LeaseSupervision | undefined;
  let allEnv: AllEnv | undefined;
  try {
    env = await prepare(cluster, names);
    // For the whole campaign: a Lease KWOK dropped must not lapse between two runs either.
    leases = superviseKwok(env, leasesStop.signal, (line) =>
      o.log(`  ${new Date().toISOString().slice(11, 23)} kwok: ${line}`),
    );
    const setting = o.fluo
      ? { pools: await prepareFluoPools(cluster, env, names, o.maxUnavailable) }
      : o.policies
        ? { pools: await preparePools(cluster, env, names, o.maxUnavailable) }
        : o.gates
          ? await prepareGates(cluster).then(() => ({}))
          : o.all
            ? {}
            : await prepareOnePool(cluster, o.maxUnavailable).then(() => ({}));
    if (o.all) allEnv = await prepareAll(cluster, env, allPools(names), o.maxUnavailable);
    if (o.plans) await prepareUpgrades(cluster);
    for (let i = 0; i < o.runs; i++) {
      const drawn = planRun(o.seed + i, names, o.maxUnavailable, timings, { everything: o.all === true });
      const everything = o.all ? planAll(drawn) : undefined;
      const gatesPlan = o.gates ? planGates(drawn) : everything?.all.gates;
      const plan = everything?.plan ?? (gatesPlan ? gatedRun(drawn, gatesPlan) : drawn);
      const upgrade = o.plans ? planUpgrade(plan.seed, o.maxUnavailable) : everything?.all.upgrade;
      const described =
        describePlan(plan) +
        (upgrade ? `\n${describeUpgrade(upgrade)}` : '') +
        (gatesPlan ? `\n${describeGates(gatesPlan)}` : '') +
        (everything ? `\n${describeAll(everything.all)}` : '');
      o.log(`run ${i + 1}/${o.runs} (seed ${plan.seed}):\n${described}`);
      const repairsBefore = readinessRepairs(cluster);
      const takenBefore = leases.takeovers.length;
      const all = everything &&
        allEnv && { all: everything.all, env: allEnv, maxUnavailable: o.maxUnavailable };
      if (all) await resetAll(cluster, env, all.env, all.all, o.maxUnavailable);
      else if (gatesPlan && env) await resetGates(cluster, env, o.maxUnavailable, gatesPlan);
      const result = await runOne(cluster, env, i, plan, o.log, {
        ...setting,
        ...(upgrade ? { upgrade } : {}),
        ...(gatesPlan && !all
          ? { gates: { plan: gatesPlan, ...gatesChecking(o.maxUnavailable, gatesPlan) } }
          : {}),
        ...(all ? { all } : {}),
      });
      const repairs = readinessRepairs(cluster) - repairsBefore;
      const taken = leases.takeovers.slice(takenBefore);
      results.push(result);
      const outcome =
        (result.violations.length === 0
          ? 'ok'
          : `${result.violations.length} VIOLATION(S):${result.violations.map((v) => `\n    ${v.at.toISOString()} ${v.rule}: ${v.detail}`).join('')}`) +
        result.runaways.map((r) => `; RUNAWAY: ${r}`).join('');
      const d = result.drains;
      o.log(
        `  → ${outcome}; ${(result.elapsedMs / 1000).toFixed(1)}s;${result.gates ? ` gates: ${JSON.stringify(result.gates)};` : ''}${result.exercised ? ` exercised: ${JSON.stringify(result.exercised)};` : ''} slowest drain ${(d.slowestMs / 1000).toFixed(1)}s${d.aborted.length ? `; aborted: ${d.aborted.join('; ')}` : ''}${result.expectedStall ? `; ${result.expectedStall} Failed as planned` : ''}${result.skipped.length ? `; skipped: ${result.skipped.join('; ')}` : ''}${repairs ? `; ${repairs} pod(s) marked NotReady made Ready again, as a kubelet would` : ''}${taken.length ? `; Leases KWOK dropped, renewed by the runner: ${taken.join(', ')}` : ''}`,
      );
    }
  } catch (err) {
    failed = true;
    // What blocked it is usually in the workload's state (a pod never Ready, a PDB allowing nothing).
    if (env) o.log(await workloadReport(cluster, env).catch((e) => `  (workload report failed: ${e})`));
    throw err;
  } finally {
    leasesStop.abort();
    await leases?.done;
    await allEnv?.stop();
    // Evidence first: the cluster's directory goes with it.
    if (
      o.keepLogsDir &&
      (o.keepLogsAlways || failed || results.some((r) => r.violations.length > 0 || r.runaways.length > 0))
    ) {
      cpSync(join(cluster.dir, 'logs'), o.keepLogsDir, { recursive: true });
      logsKeptIn = o.keepLogsDir;
      o.log(`logs kept in ${o.keepLogsDir}`);
    }
    if (own) await cluster.stop();
  }
  const injected = emptyKinds();
  const violations = Object.fromEntries(RULES.map((r) => [r, 0])) as Record<Rule, number>;
  for (const r of results) {
    for (const k of FAULT_KINDS) injected[k] += r.injected[k];
    for (const v of r.violations) violations[v.rule]++;
  }
  const gatesTally = o.gates
    ? Object.fromEntries(
        (['unhealthy', 'resumes', 'remediationSet', 'halts', 'remediations', 'refreshes'] as const).map(
          (k) => [k, results.reduce((sum, r) => sum + Number(r.gates?.[k] ?? 0), 0)],
        ),
      )
    : undefined;
  const exercised: Record<string, number> = {};
  for (const r of results)
    for (const [k, v] of Object.entries(r.exercised ?? {})) exercised[k] = (exercised[k] ?? 0) + v;
  return {
    runs: results,
    injected,
    violations,
    ...(gatesTally ? { gates: gatesTally as NonNullable<ChaosResult['gates']> } : {}),
    ...(o.all ? { exercised } : {}),
    expectedStalls: results.filter((r) => r.expectedStall).length,
    reproduce: reproduceCommand(o),
    versions: cluster.binaries.versions,
    ...(logsKeptIn ? { logsKeptIn } : {}),
  };
}

/**
 * The run's operator replicas: started under identities that name the run (each operator's log file
 * belongs to one run), and the leader found and claimed for a fault.
 */
function runReplicas(
  env: Env,
  fleet: Fleet,
  seed: number,
  args: string[],
  signal: AbortSignal,
  extras?: ReplicaExtras,
): { replicas: Replicas; replicaIds: string[] } {
  let started = 0;
  const replicaIds: string[] = [];
  const alive = (id: string) => {
    const c = fleet.operator(id);
    return c !== undefined && c.exitCode === null && c.signalCode === null;
  };
  /** Replicas a fault has claimed (killed or stopped): no second fault picks the same one. */
  const claimed = new Set<string>();
  const replicas: Replicas = {
    start: ({ clockSkewS } = {}) => {
      const id = `chaos-s${seed}-${++started}`;
      const extra = extras?.start(id, clockSkewS);
      fleet.startOperator(
        id,
        [...args, ...(extra?.args ?? [])],
        extra?.clockFile !== undefined
          ? { clockFile: extra.clockFile }
          : clockSkewS === undefined
            ? {}
            : { clockSkewS },
      );
      replicaIds.push(id);
      return id;
    },
    // The leader is whoever holds the Lease among the live replicas (it may be mid-handover: wait).
    // Claimed in the same step as it is found: two faults waiting out an API server restart together
    // both found the same holder, and the second "killed" a process already dead.
    claimLeader: () =>
      pollUntil(
        'a live replica to hold the Lease',
        async () => {
          const lease = await env.coordination.readNamespacedLease({
            name: LEASE,
            namespace: OPERATOR_NAMESPACE,
          });
          const holder = lease.spec?.holderIdentity;
          if (!holder || !replicaIds.includes(holder) || !alive(holder) || claimed.has(holder))
            return undefined;
          claimed.add(holder);
          return holder;
        },
        { timeoutMs: 30_000, intervalMs: 100, signal },
      ).catch(() => undefined),
    release: (id) => claimed.delete(id),
    ...(extras?.stepClock ? { stepClock: (id: string, stepS: number) => extras.stepClock?.(id, stepS) } : {}),
  };
  return { replicas, replicaIds };
}

async function runOne(
  cluster: LocalCluster,
  env: Env,
  index: number,
  plan: RunPlan,
  log: (line: string) => void,
  setting: {
    pools?: ChaosPools;
    upgrade?: ChaosUpgrade;
    gates?: ChaosGates & { plan: GatesPlan };
    all?: AllRun;
  },
): Promise<RunResult> {
  const { upgrade, gates, all } = setting;
  const expected = gates ? expectedReboots(plan, gates.plan) : all && allExpected(plan, all.all);
  await resetNodes(env);
  // Earlier runs of a campaign leave the pods where their drains put them; this run starts from there.
  const web = await env.core.listNamespacedPod({ namespace: CHAOS_NAMESPACE, labelSelector: 'app=web' });
  log(`  web pods at the start, by node: ${placementSummary(plan.nodes, web.items)}`);
  const agentsLog = join(cluster.dir, 'logs', 'agents.log');
  appendFileSync(
    agentsLog,
    `${new Date().toISOString()} info === chaos run ${index + 1} seed ${plan.seed} ===\n`,
  );
  const alive = (id: string) => {
    const c = fleet.operator(id);
    return c !== undefined && c.exitCode === null && c.signalCode === null;
  };
  const allReplicas = all && (await AllReplicas.create(join(cluster.dir, 'logs'), alive));
  const fleet: Fleet = new Fleet(cluster, {
    rebootMs: DEFAULT_TIMINGS.rebootMinMs,
    rebootMsByNode: Object.fromEntries(plan.updates.map((u) => [u.node, u.rebootMs])),
    budget: setting.pools?.budgets ?? gates?.budgets ?? plan.maxUnavailable,
    nodeGates: CHAOS_NODE_GATES,
    ...(gates ? { gates: gates.checker, bootedAt: bootedAt(gates.plan) } : {}),
    ...(upgrade ? { plans: [{ name: UPGRADE_REF, max: upgrade.concurrency }] } : {}),
    agentCheckIntervalMs: 2000,
    kubelet: { reportMs: KUBELET_REPORT_MS },
    ...(setting.pools?.fluoNodes ? { fluoNodes: setting.pools.fluoNodes } : {}),
    ...(plan.neverReturns ? { behaviours: { [plan.neverReturns]: RebootBehaviour.neverReturns } } : {}),
    ...(all && allReplicas ? allFleetOptions(all, allReplicas) : {}),
  });
  const injected = emptyKinds();
  const skipped: string[] = [];
  const args =
    gates || all ? [...OPERATOR_ARGS, `--blocker-interval=${BLOCKER_INTERVAL_MS}ms`] : OPERATOR_ARGS;
  const cancelled = new AbortController();
  const { replicas, replicaIds } = runReplicas(env, fleet, plan.seed, args, cancelled.signal, allReplicas);
  let t0 = Date.now();
  // Offset from staging, and the wall clock (UTC) to match against the components' logs.
  const stamp = () => `+${((Date.now() - t0) / 1000).toFixed(1)}s ${new Date().toISOString().slice(11, 23)}`;
  const context: FaultContext = {
    cluster,
    core: env.core,
    coordination: env.coordination,
    policy: env.policy,
    fleet,
    replicas,
    signal: cancelled.signal,
    note: () => {},
    ...(all ? allFaultContext(all) : {}),
  };
  const inject = async (f: Fault): Promise<void> => {
    try {
      await strike(f, { ...context, note: (line) => log(`  ${stamp()} ${f.kind}: ${line}`) });
      injected[f.kind]++;
    } catch (err) {
      skipped.push(`${describeFault(f)}: ${(err as Error).message}`);
    }
  };

  try {
    await fleet.start();
    replicas.start();
    replicas.start();
    const updated = new Set(plan.updates.map((u) => u.node));
    fleet.stageUpdates([...updated]);
    // The policy's own reboots: a refresh, a remediation (beyond an update's).
    for (const [node, count] of expected ?? []) {
      const extra = count - (updated.has(node) ? 1 : 0);
      if (extra > 0) fleet.checker.allowReboots(node, extra);
    }
    if (upgrade) await applyPlan(cluster, upgradePlan(upgrade));
    t0 = Date.now();
    const played =
      gates &&
      expected &&
      playGates(cluster, env, fleet, gates.plan, expected, updated, cancelled.signal, (line) =>
        log(`  ${stamp()} gates: ${line}`),
      );
    const around =
      all &&
      (await startAll(cluster, env, fleet, all, plan, cancelled.signal, (line) =>
        log(`  ${stamp()} all: ${line}`),
      ));
    const boundMs =
      plan.boundMs +
      (upgrade
        ? upgradeBoundMs(upgrade, plan.nodes.length, plan.maxUnavailable, {
            rebootMs: DEFAULT_TIMINGS.rebootMaxMs,
            soakMs: DEFAULT_TIMINGS.soakMs,
            slackPerWaveMs: DEFAULT_TIMINGS.slackPerWaveMs,
          })
        : 0);
    const deadline = t0 + boundMs;
    const faults = Promise.all(
      plan.faults.map(async (f) => {
        await sleep(f.atMs, cancelled.signal);
        if (cancelled.signal.aborted) return;
        await inject(f);
      }),
    );
    const hash = async () => (await readPlan(cluster, UPGRADE_NAMESPACE, UPGRADE_NAME)).status?.latestHash;
    const { finished, last } = await awaitRollout(
      env,
      plan,
      fleet,
      faults,
      deadline,
      setting.pools,
      upgrade && {
        concurrency: upgrade.concurrency,
        hash,
        ...(upgrade.nodes ? { nodes: upgrade.nodes } : {}),
      },
      expected && { expected, remediation: (gates?.plan ?? all?.all.gates)?.remediation.node ?? '' },
      all && (async (nodes) => allLeft(nodes, await kuredLockOf(env), all.all)),
    );
    const elapsedMs = Date.now() - t0;
    if (!finished) {
      cancelled.abort();
      log(await workloadReport(cluster, env).catch((err) => `  (workload report failed: ${err})`));
      fleet.checker.notFinished(
        `seed ${plan.seed}: not done within ${(boundMs / 1000).toFixed(0)}s; ${last || 'no node state read'}`,
      );
    }
    await fleet.checker.finalCheck(plan.neverReturns ? [plan.neverReturns] : []);
    await fleet.checker.settle(); // grant confirmations still in flight
    // Let in-flight faults end (an API server restart completes) before the fleet is stopped.
    await faults;
    cancelled.abort();
    await played?.done;
    await around?.done;
    const seen = fleet.checker.gates?.seen;
    return {
      index,
      plan,
      injected,
      skipped,
      violations: [...fleet.checker.violations],
      // The array itself: stopping the fleet (below) adds an operator that hangs on SIGTERM.
      runaways: fleet.runaways,
      finished: finished === true,
      elapsedMs,
      drains: drainSummary(cluster, replicaIds),
      ...(plan.neverReturns && finished ? { expectedStall: plan.neverReturns } : {}),
      ...(around ? { exercised: around.exercised() } : {}),
      ...(played && seen
        ? {
            gates: {
              ...played.acts,
              halts: seen.halts,
              remediations: seen.remediations,
              refreshes: seen.refreshes,
            },
          }
        : {}),
    };
  } finally {
    cancelled.abort();
    await fleet.stop();
    if (upgrade) await removeUpgrade(cluster);
  }
}
