/**
 * One run of `--all` as the runner (chaos.ts) wires it: the fleet's agents and checks (FLUO's agents,
 * kured, FleetLock clients, every pool's budget and the gates' rules), the operator replicas each with a
 * FleetLock port of its own and a clock file (so a fault can step a running leader's clock), what must be
 * done besides the reboots (the Plan applied, kured's lock let go), and the run's count of the gates it
 * exercised.
 */
import { join } from 'node:path';
import type { V1Node } from '@kubernetes/client-node';
import { KURED_LOCK_ANNOTATION } from '../operator/protocols/kured-lock.ts';
import { ALL_POLICIES, type AllActs, type AllEnv, allChecking, HANG_STALE_MS, playAll } from './chaos-all.ts';
import type { AllPlan } from './chaos-all-plan.ts';
import { HOLDS, HoldTally } from './chaos-all-tally.ts';
import type { Env } from './chaos-env.ts';
import type { FaultContext } from './chaos-faults.ts';
import { bootedAt, type GatesActs, playGates } from './chaos-gates.ts';
import { expectedReboots } from './chaos-gates-plan.ts';
import type { RunPlan } from './chaos-plan.ts';
import { UPGRADE_REF } from './chaos-upgrade.ts';
import type { LocalCluster } from './cluster/cluster.ts';
import { freePort } from './cluster/net.ts';
import { type Fleet, type FleetOptions, writeClockFile } from './fleet.ts';
import { FleetLockClient } from './fleetlock-client.ts';
import { KURED_ACCOUNT } from './kured-agent.ts';

/** An `--all` run: its plan beside the faults', and what the campaign keeps across runs. */
export interface AllRun {
  all: AllPlan;
  env: AllEnv;
  maxUnavailable: number;
}

/** How the runner starts a replica beyond its common flags, and steps its clock (chaos.ts runReplicas). */
export interface ReplicaExtras {
  start(identity: string, clockSkewS?: number): { args: string[]; clockFile?: string };
  stepClock?(identity: string, stepS: number): void;
}

/** Replicas a run starts at most: two, a replacement per leader killed (two), one with a skewed clock. */
const MAX_REPLICAS = 8;

/**
 * The replicas of an `--all` run: each serves FleetLock on a port of its own and reads its wall clock's
 * offset from a file of its own (a skewed replacement starts at its skew; a step moves it while it runs).
 * A FleetLock client asks them in turn, as a Service hands requests to its endpoints.
 */
export class AllReplicas implements ReplicaExtras {
  readonly #dir: string;
  readonly #ports: number[];
  readonly #alive: (identity: string) => boolean;
  readonly #started = new Map<string, { port: number; file: string; skewS: number }>();
  #next = 0;

  private constructor(dir: string, ports: number[], alive: (identity: string) => boolean) {
    this.#dir = dir;
    this.#ports = ports;
    this.#alive = alive;
  }

  static async create(dir: string, alive: (identity: string) => boolean): Promise<AllReplicas> {
    const ports: number[] = [];
    while (ports.length < MAX_REPLICAS) {
      const p = await freePort();
      if (!ports.includes(p)) ports.push(p);
    }
    return new AllReplicas(dir, ports, alive);
  }

  start(identity: string, clockSkewS = 0): { args: string[]; clockFile: string } {
    const port = this.#ports.shift();
    if (port === undefined) throw new Error(`replica ${identity}: all ${MAX_REPLICAS} FleetLock ports used`);
    const file = join(this.#dir, `clock-${identity}`);
    writeClockFile(file, clockSkewS);
    this.#started.set(identity, { port, file, skewS: clockSkewS });
    return { args: [`--fleetlock-port=${port}`], clockFile: file };
  }

  stepClock(identity: string, stepS: number): void {
    const r = this.#started.get(identity);
    if (!r) throw new Error(`replica ${identity} has no clock file`);
    r.skewS += stepS;
    writeClockFile(r.file, r.skewS);
  }

  /** The FleetLock URL of the next live replica, in turn. */
  url(): string {
    const live = [...this.#started].filter(([id]) => this.#alive(id));
    const [, r] = live[this.#next++ % Math.max(1, live.length)] ?? [];
    return `http://127.0.0.1:${r?.port ?? 1}`;
  }
}

/** The fleet of an `--all` run: the pools' agents, and what the checker holds each pool and gate to. */
export function allFleetOptions(run: AllRun, replicas: AllReplicas): Partial<FleetOptions> {
  const { all, env } = run;
  const checking = allChecking(run.maxUnavailable, all);
  return {
    budget: checking.budgets,
    gates: checking.gates,
    bootedAt: bootedAt(all.gates),
    plans: [{ name: UPGRADE_REF, max: all.upgrade.concurrency }],
    fluoNodes: all.pools.fluo,
    kuredNodes: all.pools.kured,
    kured: { periodSeconds: 2 },
    agents: Object.fromEntries(
      all.pools.fleetlock.map((node) => [
        node,
        new FleetLockClient({
          url: () => replicas.url(),
          machineId: env.machineIds.get(node) ?? '',
          group: ALL_POLICIES.fleetlock,
          retryMs: 500,
        }),
      ]),
    ),
  };
}

/** The fault context's part of an `--all` run: the Prometheus a hang stops. */
export const allFaultContext = (run: AllRun): Pick<FaultContext, 'healthRead'> => ({
  healthRead: { prometheus: run.env.prometheus.component, staleMs: HANG_STALE_MS },
});

/** Reboots each node must make: its update's, the gated pool's refreshes and remediation. */
export const allExpected = (plan: RunPlan, all: AllPlan) => expectedReboots(plan, all.gates);

/**
 * What remains of an `--all` run besides the reboots (chaos-progress.ts): kured's lock let go and its node
 * schedulable again. Undefined when nothing does.
 */
export function allLeft(
  nodes: readonly V1Node[],
  kuredLock: string | undefined,
  all: AllPlan,
): string | undefined {
  const locks = kuredLock ? (JSON.parse(kuredLock) as { locks?: unknown[]; nodeID?: string }) : {};
  if ((locks.locks?.length ?? 0) > 0 || locks.nodeID) return `kured's lock still held: ${kuredLock}`;
  const cordoned = nodes.filter(
    (n) => all.pools.kured.includes(n.metadata?.name ?? '') && n.spec?.unschedulable,
  );
  if (cordoned.length > 0)
    return `kured's ${cordoned.map((n) => n.metadata?.name).join(', ')} still cordoned`;
  return undefined;
}

/** kured's lock as its DaemonSet carries it now. */
export async function kuredLockOf(env: Env): Promise<string | undefined> {
  const ds = await env.apps.readNamespacedDaemonSet(KURED_ACCOUNT).catch(() => undefined);
  return ds?.metadata?.annotations?.[KURED_LOCK_ANNOTATION];
}

/** The run's people and programs, and its tally of the holds the operator said it made. */
export async function startAll(
  cluster: LocalCluster,
  env: Env,
  fleet: Fleet,
  run: AllRun,
  plan: RunPlan,
  signal: AbortSignal,
  note: (line: string) => void,
): Promise<{ done: Promise<void>; exercised: () => Record<string, number> }> {
  const gates = fleet.checker.gates;
  if (!gates) throw new Error('an --all run needs the checker to hold its gates');
  const tally = new HoldTally(cluster.kubeconfig);
  await tally.start();
  const expected = allExpected(plan, run.all);
  const updated = new Set(plan.updates.map((u) => u.node));
  const people = playGates(cluster, env, fleet, run.all.gates, expected, updated, signal, note);
  const around = playAll(cluster, env, run.env, run.all, gates, signal, note);
  const sum = (nodes: readonly string[], of: (n: string) => number) => nodes.reduce((s, n) => s + of(n), 0);
  const exercised = (): Record<string, number> => {
    const { pools } = run.all;
    const acts: GatesActs & AllActs = { ...people.acts, ...around.acts };
    return {
      ...Object.fromEntries(HOLDS.map((h) => [`holds.${h}`, tally.counts[h]])),
      'checker.halts': gates.seen.halts,
      'checker.unhealthy': gates.seen.unhealthy,
      'checker.remediations': gates.seen.remediations,
      'checker.refreshes': gates.seen.refreshes,
      'checker.circuitTrips': gates.seen.trips,
      'people.resumes': acts.resumes,
      'people.unhealthy': acts.unhealthy,
      'people.metricBad': acts.metricBad,
      'people.autoscalerTaints': acts.autoscalerTaints,
      'people.blockingPods': acts.blockingPods,
      'people.doNotDisruptPods': acts.doNotDisruptPods,
      'reboots.planJobs': sum(pools.plan, (n) => fleet.checker.planRebootsOf(n)),
      'reboots.fluo': sum(pools.fluo, (n) => fleet.checker.rebootsOf(n)),
      'reboots.fleetlock': sum(pools.fleetlock, (n) => fleet.checker.rebootsOf(n)),
      'reboots.kured': sum(pools.kured, (n) => fleet.checker.kuredRebootsOf(n)),
      'reboots.gates': sum(pools.gates, (n) => fleet.checker.rebootsOf(n)),
    };
  };
  return {
    done: Promise.all([people.done, around.done]).then(() => tally.stop()),
    exercised,
  };
}
