/**
 * What a chaos run with everything on (`npm run chaos -- --all`) does beside its faults, from its seed
 * alone (pure): which pool each node is in, the gates pool's own plan (chaos-gates-plan.ts), the upgrade
 * Plan of the mixed pool, and the people and programs around the cluster — the metric a PromQL health
 * check reads turned bad, a cluster autoscaler's deletion taint, pods that block (on their node, or in the
 * whole pool), a pod that must not be disrupted. Drawn from a generator of its own, so the run's faults
 * (chaos-plan.ts) are the seed's as without it; the run's plan is then fitted to the pools (no update on a
 * node a Plan's Job reboots, no person's cordon on kured's node, whose kured would lift it).
 */

import { type GatesPlan, gatedRun, planGates } from './chaos-gates-plan.ts';
import { FaultKind, type RunPlan } from './chaos-plan.ts';
import { type ChaosUpgrade, planUpgrade } from './chaos-upgrade.ts';
import { Random } from './random.ts';

/** The nodes of each pool, by name. */
export interface AllPools {
  /** FLUO's real update-agent, under a FLUO-protocol policy. */
  fluo: string[];
  /** FleetLock clients (Zincati's loop) asking the operators' FleetLock servers. */
  fleetlock: string[];
  /** kured 1.23.0, in the mixed pool (coexistence.kured): its lock counts in nuo's budget. */
  kured: string[];
  /** nuo's agents in the mixed pool, upgraded by the Plan, whose Job reboots its node. */
  plan: string[];
  /** nuo's agents under one policy with every gate. */
  gates: string[];
}

/** The fewest nodes an `--all` run takes: two FLUO, two FleetLock, one kured, two Plan, three gates. */
export const ALL_MIN_NODES = 10;

/** Splits the nodes (sorted by name) into the pools: the first seven fixed, the rest the gates pool. */
export function allPools(nodes: readonly string[]): AllPools {
  if (nodes.length < ALL_MIN_NODES)
    throw new Error(
      `--all needs at least ${ALL_MIN_NODES} nodes (seven in four pools, three gated), got ${nodes.length}`,
    );
  const s = [...nodes].sort();
  return {
    fluo: s.slice(0, 2),
    fleetlock: s.slice(2, 4),
    kured: s.slice(4, 5),
    plan: s.slice(5, 7),
    gates: s.slice(7),
  };
}

/** A stretch of time in a run, by offset from staging. */
export interface Spell {
  atMs: number;
  forMs: number;
}

export interface AllPlan {
  pools: AllPools;
  /** The gates pool's own plan: health spells of its object check, the late node, remediation, refresh, waves. */
  gates: GatesPlan;
  /** The mixed pool's upgrade Plan over the `plan` nodes: a prepare Job first, then a Job that reboots. */
  upgrade: ChaosUpgrade;
  /** Spells of the PromQL check's metric reading bad. */
  metric: Spell[];
  /** A gates node (one updated, not the late one) a cluster autoscaler taints ToBeDeletedByClusterAutoscaler:NoSchedule for a while. */
  autoscaler: Spell & { node: string };
  /** Pods matching the gates pool's pod blockers, running for a while: on their node, and pool-wide. */
  blockers: (Spell & { scope: 'Node' | 'Pool'; node: string })[];
  /** A pod annotated nuo.dev/do-not-disrupt on an updated gates node, for a while. */
  doNotDisrupt: Spell & { node: string };
}

/** Mixed into the seed: these draws must not be the fault plan's nor the gates plan's. */
const SALT = 0xa11_0e5;
const tenth = (ms: number) => Math.round(ms / 100) * 100;

/**
 * How long kured adds to a run: its first look comes 30–90 s after its start (kured's delaytick of a
 * minute), and after its reboot as long again before it lets go of its lock.
 */
export const KURED_MS = 200_000;

/** The run's plan with everything on, from the plan its seed draws (planRun with `everything`). */
export function planAll(drawn: RunPlan): { plan: RunPlan; all: AllPlan } {
  const pools = allPools(drawn.nodes);
  const rnd = new Random((drawn.seed ^ SALT) >>> 0);
  const inGates = (n: string) => pools.gates.includes(n);
  const away = (n: string, i: number) =>
    pools.kured.includes(n) ? (pools.gates[i % pools.gates.length] as string) : n;
  // A Plan's Job reboots the plan nodes: an update there would be served by whichever reboot came first.
  const updates = drawn.updates.filter((u) => !pools.plan.includes(u.node));
  const faults = drawn.faults.map((f, i) =>
    f.kind === FaultKind.adminCordon || f.kind === FaultKind.deleteNode ? { ...f, node: away(f.node, i) } : f,
  );
  // Only the gates pool's never-returning node is kept: its gates plan brings it back late.
  const { neverReturns, ...rest } = drawn;
  const fitted: RunPlan = {
    ...rest,
    updates,
    faults,
    ...(neverReturns && inGates(neverReturns) ? { neverReturns } : {}),
  };
  const gates = planGates({
    ...fitted,
    nodes: pools.gates,
    updates: updates.filter((u) => inGates(u.node)),
  });
  const gated = gatedRun(fitted, gates);
  const drawnUpgrade = planUpgrade(drawn.seed, drawn.maxUnavailable);
  const upgrade: ChaosUpgrade = {
    ...drawnUpgrade,
    concurrency: Math.min(drawnUpgrade.concurrency, pools.plan.length),
    reboot: false,
    hostReboot: true,
    prepareJob: true,
    nodes: pools.plan,
  };
  const spell = (from: number, to: number, minMs: number, maxMs: number): Spell => ({
    atMs: tenth(rnd.between(from, to)),
    forMs: tenth(rnd.between(minMs, maxMs)),
  });
  const metric = Array.from({ length: rnd.int(1, 2) }, () => spell(1000, 40_000, 3000, 15_000)).sort(
    (a, b) => a.atMs - b.atMs,
  );
  const gatedUpdates = updates.filter((u) => inGates(u.node)).map((u) => u.node);
  // On a node with a reboot ahead, so the taint can meet it waiting (a node in an attempt is not tainted).
  const tainted = gatedUpdates.filter((n) => n !== gates.late?.node);
  const autoscaler = {
    ...spell(2000, 40_000, 3000, 15_000),
    node: rnd.pick(tainted.length > 0 ? tainted : pools.gates),
  };
  const blockers = [
    { ...spell(1000, 30_000, 3000, 12_000), scope: 'Node' as const, node: rnd.pick(pools.gates) },
    { ...spell(1000, 30_000, 3000, 12_000), scope: 'Pool' as const, node: rnd.pick(pools.gates) },
  ];
  // On a node with a reboot to wait for, which no fault deletes (its pods would go with it).
  const deleted = new Set(faults.flatMap((f) => (f.kind === FaultKind.deleteNode ? [f.node] : [])));
  const spared = (n: string) => !deleted.has(n) && n !== gates.late?.node;
  const candidates = [gatedUpdates.filter(spared), pools.gates.filter(spared), pools.gates].find(
    (c) => c.length > 0,
  ) as string[];
  const doNotDisrupt = { ...spell(0, 20_000, 5000, 30_000), node: rnd.pick(candidates) };
  const spells = [...metric, autoscaler, ...blockers, doNotDisrupt].reduce((s, x) => s + x.forMs, 0);
  const plan: RunPlan = {
    ...gated,
    boundMs: gated.boundMs + spells + KURED_MS + 120_000,
  };
  return { plan, all: { pools, gates, upgrade, metric, autoscaler, blockers, doNotDisrupt } };
}

export function describeAll(a: AllPlan): string {
  const s = (ms: number) => `${(ms / 1000).toFixed(1)}s`;
  const at = (x: Spell) => `+${s(x.atMs)} for ${s(x.forMs)}`;
  return [
    `  pools: fluo ${a.pools.fluo.join(', ')}; fleetlock ${a.pools.fleetlock.join(', ')}; mixed: kured ${a.pools.kured.join(', ')}, Plan ${a.pools.plan.join(', ')}; gates ${a.pools.gates.join(', ')}`,
    `  metric bad ${a.metric.map(at).join(', ')}; autoscaler taints ${a.autoscaler.node} ${at(a.autoscaler)}; ${a.blockers.map((b) => `${b.scope} blocker on ${b.node} ${at(b)}`).join('; ')}; do-not-disrupt on ${a.doNotDisrupt.node} ${at(a.doNotDisrupt)}`,
  ].join('\n');
}
