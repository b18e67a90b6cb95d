/**
 * The plan of one chaos run, derived from its seed alone (pure, no cluster): which nodes get an update,
 * how long each takes to reboot, whether one of them never comes back, and which faults strike when.
 * Same seed, nodes and budget ⇒ the same plan, draw for draw — the system's own timing may still vary,
 * but the faults, their offsets and their targets do not, so a failing seed can be rerun.
 */
import { Random } from './random.ts';

export const FaultKind = {
  /** SIGKILL the operator replica that holds the Lease; a fresh replica replaces it (two always run). */
  killLeader: 'kill-leader',
  /** Kill one node's agent (a crashed DaemonSet pod) and start it again after `downMs`. */
  restartAgent: 'restart-agent',
  /** Restart kube-apiserver (an API outage of a few seconds); at most one per run. */
  restartApiserver: 'restart-apiserver',
  /** Restart etcd (the API server answers errors until it is back); at most one per run. */
  restartEtcd: 'restart-etcd',
  /** SIGSTOP the leader past its Lease, then SIGCONT it: a process that hangs rather than dies. */
  pauseLeader: 'pause-leader',
  /** SIGSTOP kube-apiserver or etcd for `pauseMs`, then SIGCONT: requests hang instead of failing. */
  pauseComponent: 'pause-component',
  /** SIGKILL the leader; its replacement runs with its wall clock skewed by `skewS` (libfaketime). */
  skewClock: 'skew-clock',
  /**
   * An admin cordons a node (`kubectl cordon`, whatever nuo is doing with it) and uncordons it `downMs`
   * later (`kubectl uncordon`): on a node nuo is draining that removes nuo's cordon mid-attempt.
   */
  adminCordon: 'admin-cordon',
  /** The Node object of a node being updated is deleted while it holds a slot; re-registered after `downMs`. */
  deleteNode: 'delete-node',
  /**
   * A third client writes hostile values into nuo's keys (garbage state and counts, an oversized
   * request); a person removes the oversized one `downMs` later, nuo must clean or ignore the rest.
   */
  hostileAnnotations: 'hostile-annotations',
  /** A third client writes a reboot grant nuo did not give (`forgery` says which kind). */
  forgeGrant: 'forge-grant',
  /** The workload's PodDisruptionBudget allows no disruption for `downMs` (evictions refused), then 1 again. */
  changePdb: 'change-pdb',
  /**
   * The leader's wall clock jumps back `stepS` seconds while it leads (NTP stepping, a resumed VM); its
   * monotonic clock runs on. Only where every replica reads its offset from a file (`--all`).
   */
  stepClock: 'step-clock',
  /** The kubelet of `node`'s next boot posts the new boot ID `lateMs` after its agent or client started. */
  kubeletLate: 'kubelet-late',
  /** The Prometheus server a health check asks is stopped (SIGSTOP) for `pauseMs`: its queries hang. */
  hangHealth: 'hang-health',
} as const;
export type FaultKind = (typeof FaultKind)[keyof typeof FaultKind];
export const FAULT_KINDS: readonly FaultKind[] = Object.values(FaultKind);
/** The kinds drawn only for a run with everything on (PlanOptions.everything): a clock file, a Prometheus. */
export const EVERYTHING_KINDS: readonly FaultKind[] = [
  FaultKind.stepClock,
  FaultKind.kubeletLate,
  FaultKind.hangHealth,
];
/** The kinds every run draws. */
export const BASE_FAULT_KINDS: readonly FaultKind[] = FAULT_KINDS.filter(
  (k) => !EVERYTHING_KINDS.includes(k),
);

/** What a forged grant looks like: the old boolean, a well-formed grant signed with another key, or junk. */
export const Forgery = {
  plain: 'plain',
  otherKey: 'other-key',
  junk: 'junk',
} as const;
export type Forgery = (typeof Forgery)[keyof typeof Forgery];
const FORGERIES: readonly Forgery[] = Object.values(Forgery);

/** Components a pause-component fault may stop. */
export const PAUSABLE = ['kube-apiserver', 'etcd'] as const;
export type Pausable = (typeof PAUSABLE)[number];

export type Fault =
  | { kind: typeof FaultKind.killLeader; atMs: number }
  | { kind: typeof FaultKind.restartAgent; atMs: number; node: string; downMs: number }
  | { kind: typeof FaultKind.restartApiserver; atMs: number }
  | { kind: typeof FaultKind.restartEtcd; atMs: number }
  | { kind: typeof FaultKind.pauseLeader; atMs: number; pauseMs: number }
  | { kind: typeof FaultKind.pauseComponent; atMs: number; component: Pausable; pauseMs: number }
  | { kind: typeof FaultKind.skewClock; atMs: number; skewS: number }
  | { kind: typeof FaultKind.adminCordon; atMs: number; node: string; downMs: number }
  | { kind: typeof FaultKind.deleteNode; atMs: number; node: string; downMs: number }
  | { kind: typeof FaultKind.hostileAnnotations; atMs: number; node: string; downMs: number }
  | { kind: typeof FaultKind.forgeGrant; atMs: number; node: string; forgery: Forgery }
  | { kind: typeof FaultKind.changePdb; atMs: number; downMs: number }
  | { kind: typeof FaultKind.stepClock; atMs: number; stepS: number }
  | { kind: typeof FaultKind.kubeletLate; atMs: number; node: string; lateMs: number }
  | { kind: typeof FaultKind.hangHealth; atMs: number; pauseMs: number };

export interface PlannedUpdate {
  node: string;
  /** How long this node's simulated reboot takes. */
  rebootMs: number;
}

export interface RunPlan {
  seed: number;
  /** Every node of the cluster (agents run on all of them; only `updates` need a reboot). */
  nodes: string[];
  maxUnavailable: number;
  /** Nodes that get an OS update (each must reboot exactly once), by name. */
  updates: PlannedUpdate[];
  /**
   * One updated node that goes down for its reboot and never returns, or none. The rollout is expected
   * to stall on it: the operator must mark it Failed and keep its slot (fail closed) while the others
   * finish with the slots left. Only planned when maxUnavailable ≥ 2, so the others can finish.
   */
  neverReturns?: string;
  /** Faults by offset from the moment the updates are staged. */
  faults: Fault[];
  /** The rollout must be done within this long after staging, else the run records "not-finished". */
  boundMs: number;
}

export interface PlanTimings {
  soakMs: number;
  /** Reboot durations are drawn in [rebootMinMs, rebootMaxMs]; about half are the minimum. */
  rebootMinMs: number;
  rebootMaxMs: number;
  /** Per wave of the bound: ceil(n/K)·(max reboot + soak + slackPerWaveMs) + slackMs + evictionLimboMs. */
  slackPerWaveMs: number;
  slackMs: number;
  /**
   * Kubernetes' own recovery time for an eviction cut off mid-request (its client SIGKILLed, or the API
   * server restarted): the Eviction API records the pod in the PDB's status.disruptedPods *before* it
   * deletes the pod; if the delete never happens, the still-running pod counts as disrupted until the
   * disruption controller drops the entry after its DeletionTimeout (2 min), and every eviction under
   * that PDB gets 429 meanwhile. The rollout must wait that out (safety rule 5), so the bound allows it.
   */
  evictionLimboMs: number;
}

export const DEFAULT_TIMINGS: PlanTimings = {
  soakMs: 1000,
  rebootMinMs: 300,
  rebootMaxMs: 3000,
  slackPerWaveMs: 15_000,
  slackMs: 60_000,
  evictionLimboMs: 120_000,
};

/** What a run has beyond the base campaign, which decides the kinds of fault drawn for it. */
export interface PlanOptions {
  /** Every replica reads its clock from a file and a health check asks a Prometheus: EVERYTHING_KINDS too. */
  everything?: boolean;
}

/** Rounds to 100 ms, so plans print and compare cleanly. */
const tenth = (ms: number) => Math.round(ms / 100) * 100;

/**
 * Derives one run's plan. The order of the draws is part of the contract (changing it changes every
 * seed's plan): updates, reboot times, the node that never returns, then the faults.
 */
export function planRun(
  seed: number,
  nodes: readonly string[],
  maxUnavailable: number,
  timings: PlanTimings = DEFAULT_TIMINGS,
  options: PlanOptions = {},
): RunPlan {
  if (nodes.length < 2) throw new Error(`a chaos run needs at least 2 nodes, got ${nodes.length}`);
  if (!(Number.isInteger(maxUnavailable) && maxUnavailable >= 1)) {
    throw new Error(`maxUnavailable must be a positive integer, got ${maxUnavailable}`);
  }
  const rnd = new Random(seed);
  const sorted = [...nodes].sort();

  // 1. Which nodes get an update: at least half of them (and at least 2), chosen by a partial shuffle.
  const count = rnd.int(Math.max(2, Math.ceil(sorted.length / 2)), sorted.length);
  const pool = [...sorted];
  for (let i = 0; i < count; i++) {
    const j = rnd.int(i, pool.length - 1);
    [pool[i], pool[j]] = [pool[j] as string, pool[i] as string];
  }
  const chosen = pool.slice(0, count).sort();

  // 2. Reboot times: about half reboot fast, the others are delayed up to rebootMaxMs.
  const updates = chosen.map((node) => ({
    node,
    rebootMs: rnd.chance(0.5)
      ? timings.rebootMinMs
      : tenth(rnd.between(timings.rebootMinMs, timings.rebootMaxMs)),
  }));

  // 3. Zero or one node that never returns; with K = 1 its held slot would stall every other node.
  let neverReturns: string | undefined;
  if (maxUnavailable >= 2 && rnd.chance(0.35)) neverReturns = rnd.pick(chosen);

  // 4. Faults at random moments within the rollout's expected span (waves of the usable slots).
  const slots = neverReturns ? maxUnavailable - 1 : maxUnavailable;
  const toFinish = neverReturns ? count - 1 : count;
  const waves = Math.max(1, Math.ceil(toFinish / slots));
  const meanReboot = updates.reduce((s, u) => s + u.rebootMs, 0) / updates.length;
  const windowMs = Math.max(6000, waves * (meanReboot + timings.soakMs + 2500));
  const at = () => tenth(rnd.between(1000, windowMs));
  const faults: Fault[] = [];
  const leaderKills = rnd.int(1, 2);
  for (let i = 0; i < leaderKills; i++) faults.push({ kind: FaultKind.killLeader, atMs: at() });
  const agentRestarts = rnd.int(1, 3);
  for (let i = 0; i < agentRestarts; i++) {
    faults.push({
      kind: FaultKind.restartAgent,
      atMs: at(),
      // Mostly a node being updated (its agent matters to the rollout), sometimes any node.
      node: rnd.chance(0.75) ? rnd.pick(chosen) : rnd.pick(sorted),
      downMs: tenth(rnd.between(0, 2000)),
    });
  }
  if (rnd.chance(0.5)) faults.push({ kind: FaultKind.restartApiserver, atMs: at() });
  // The wider campaign's kinds, each drawn in every plan in this order (part of the seed contract).
  const within = (minMs: number, maxMs: number) => tenth(rnd.between(minMs, maxMs));
  if (rnd.chance(0.3)) faults.push({ kind: FaultKind.restartEtcd, atMs: at() });
  if (rnd.chance(0.4)) faults.push({ kind: FaultKind.pauseLeader, atMs: at(), pauseMs: within(4000, 8000) });
  if (rnd.chance(0.3)) {
    const component = rnd.pick(PAUSABLE);
    faults.push({ kind: FaultKind.pauseComponent, atMs: at(), component, pauseMs: within(2000, 8000) });
  }
  if (rnd.chance(0.3)) {
    const skewS = Math.round(rnd.between(30, 900)) * (rnd.chance(0.5) ? 1 : -1);
    faults.push({ kind: FaultKind.skewClock, atMs: at(), skewS });
  }
  if (rnd.chance(0.5)) {
    // Mostly a node being updated, so the uncordon often lands mid-attempt.
    const node = rnd.chance(0.75) ? rnd.pick(chosen) : rnd.pick(sorted);
    faults.push({ kind: FaultKind.adminCordon, atMs: at(), node, downMs: within(2000, 15_000) });
  }
  const returning = chosen.filter((n) => n !== neverReturns);
  if (rnd.chance(0.3)) {
    const node = rnd.pick(returning);
    faults.push({ kind: FaultKind.deleteNode, atMs: at(), node, downMs: within(1000, 5000) });
  }
  if (rnd.chance(0.5)) {
    const node = rnd.pick(sorted);
    faults.push({ kind: FaultKind.hostileAnnotations, atMs: at(), node, downMs: within(1000, 5000) });
  }
  if (rnd.chance(0.5)) {
    const node = rnd.pick(sorted);
    faults.push({ kind: FaultKind.forgeGrant, atMs: at(), node, forgery: rnd.pick(FORGERIES) });
  }
  if (rnd.chance(0.4)) faults.push({ kind: FaultKind.changePdb, atMs: at(), downMs: within(2000, 15_000) });
  // Drawn after every base kind, so a seed's base faults are the same with everything on or not.
  if (options.everything) {
    if (rnd.chance(0.5))
      faults.push({ kind: FaultKind.stepClock, atMs: at(), stepS: -Math.round(rnd.between(120, 600)) });
    // Early in the run, so the node still has its reboot ahead of it.
    const lates = rnd.int(0, 2);
    for (let i = 0; i < lates; i++) {
      const atMs = tenth(rnd.between(1000, Math.max(2000, windowMs / 2)));
      faults.push({
        kind: FaultKind.kubeletLate,
        atMs,
        node: rnd.pick(returning),
        lateMs: within(3000, 12_000),
      });
    }
    // Longer than a reading may be old (a query's timeout and the interval), so the hold must show.
    if (rnd.chance(0.5))
      faults.push({ kind: FaultKind.hangHealth, atMs: at(), pauseMs: within(12_000, 25_000) });
  }
  faults.sort((a, b) => a.atMs - b.atMs); // stable: ties keep their draw order

  const maxReboot = Math.max(...updates.map((u) => u.rebootMs));
  const boundMs =
    waves * (maxReboot + timings.soakMs + timings.slackPerWaveMs) + timings.slackMs + timings.evictionLimboMs;
  return {
    seed,
    nodes: sorted,
    maxUnavailable,
    updates,
    ...(neverReturns ? { neverReturns } : {}),
    faults,
    boundMs,
  };
}

export function describeFault(f: Fault): string {
  const at = `+${(f.atMs / 1000).toFixed(1)}s`;
  const secs = (ms: number) => `${(ms / 1000).toFixed(1)}s`;
  switch (f.kind) {
    case FaultKind.killLeader:
    case FaultKind.restartApiserver:
    case FaultKind.restartEtcd:
      return `${at} ${f.kind}`;
    case FaultKind.restartAgent:
      return `${at} ${f.kind} ${f.node} (down ${secs(f.downMs)})`;
    case FaultKind.pauseLeader:
      return `${at} ${f.kind} for ${secs(f.pauseMs)}`;
    case FaultKind.pauseComponent:
      return `${at} ${f.kind} ${f.component} for ${secs(f.pauseMs)}`;
    case FaultKind.skewClock:
      return `${at} ${f.kind} ${f.skewS > 0 ? '+' : ''}${f.skewS}s`;
    case FaultKind.adminCordon:
      return `${at} ${f.kind} ${f.node} (uncordoned after ${secs(f.downMs)})`;
    case FaultKind.deleteNode:
      return `${at} ${f.kind} ${f.node} (re-registered after ${secs(f.downMs)})`;
    case FaultKind.hostileAnnotations:
      return `${at} ${f.kind} ${f.node} (oversized value removed after ${secs(f.downMs)})`;
    case FaultKind.forgeGrant:
      return `${at} ${f.kind} ${f.node} (${f.forgery})`;
    case FaultKind.changePdb:
      return `${at} ${f.kind} (no disruption allowed for ${secs(f.downMs)})`;
    case FaultKind.stepClock:
      return `${at} ${f.kind} ${f.stepS}s`;
    case FaultKind.kubeletLate:
      return `${at} ${f.kind} ${f.node} (its next boot ID posted ${secs(f.lateMs)} late)`;
    case FaultKind.hangHealth:
      return `${at} ${f.kind} (Prometheus stopped for ${secs(f.pauseMs)})`;
  }
}

/** The plan in a few lines, printed before each run so a failure can be matched to its cause. */
export function describePlan(p: RunPlan): string {
  const updates = p.updates
    .map(
      (u) =>
        `${u.node} ${(u.rebootMs / 1000).toFixed(1)}s${u.node === p.neverReturns ? ' NEVER RETURNS' : ''}`,
    )
    .join(', ');
  return [
    `  updates (${p.updates.length}/${p.nodes.length}, maxUnavailable ${p.maxUnavailable}): ${updates}`,
    `  faults: ${p.faults.map(describeFault).join('; ')}`,
    `  bound: ${(p.boundMs / 1000).toFixed(0)}s`,
  ].join('\n');
}
