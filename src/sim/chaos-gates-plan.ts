/**
 * What a `--gates` chaos run does to a pool's gates beside its faults, from its seed alone (pure): when
 * the custom resource the health check reads turns unhealthy and for how long, which node comes back
 * too late (Failed: a failed attempt that halts the pool), how long the person takes to resume a halt,
 * which node's condition asks for a remediation and when, and which nodes are up longer than maxUptime.
 * Drawn from a generator of its own, so the run's plan (chaos-plan.ts) is the seed's as without it.
 */
import type { RunPlan } from './chaos-plan.ts';
import { Random } from './random.ts';

export interface GatesPlan {
  /** A node whose reboot outlasts the policy's returnTimeout: Failed, then back, then done. */
  late?: { node: string; rebootMs: number };
  /** Spells of the health check's resource being unhealthy, by offset from staging. */
  unhealthy: { atMs: number; forMs: number }[];
  /** How long the person takes to resume each halt, in turn (the last one for every later halt). */
  resumeAfterMs: number[];
  /** The node whose condition asks for a remediation, from `atMs` (after its own reboot, if it has one). */
  remediation: { node: string; atMs: number };
  /** Nodes up longer than maxUptime from the start: a refresh each, unless an update reboots it first. */
  refresh: string[];
  waves: { initial: number; growth: number; pauseBetweenMs: number };
}

/** The policy's returnTimeout in a gates run (chaos-policies.ts QUICK): a later return is a failure. */
export const RETURN_TIMEOUT_MS = 20_000;

const tenth = (ms: number) => Math.round(ms / 100) * 100;

export function planGates(plan: RunPlan): GatesPlan {
  const rnd = new Random(plan.seed * 7919 + 1);
  const updated = plan.updates.map((u) => u.node);
  // The node that never returns in the plan comes back late instead (a halt must end for the run to).
  const lateNode = plan.neverReturns ?? (rnd.chance(0.6) ? rnd.pick(updated) : undefined);
  // Back well past its returnTimeout: a leader that takes over meanwhile counts that timeout afresh from
  // its first sight of the node (decision 0073), so a return just past it may come before it fires.
  const lateMs = tenth(rnd.between(2.5 * RETURN_TIMEOUT_MS, 3 * RETURN_TIMEOUT_MS));
  const spells = rnd.int(1, 3);
  const unhealthy = Array.from({ length: spells }, () => ({
    atMs: tenth(rnd.between(1000, 40_000)),
    // Mostly longer than a reading may be old (checker-gates.ts staleMs), so the checker's rule bites.
    forMs: tenth(rnd.between(3000, 15_000)),
  })).sort((a, b) => a.atMs - b.atMs);
  const resumeAfterMs = Array.from({ length: 3 }, () => tenth(rnd.between(1000, 8000)));
  const remediation = { node: rnd.pick(plan.nodes), atMs: tenth(rnd.between(2000, 30_000)) };
  // Mostly nodes without an update (an update's reboot refreshes a node before its own need shows).
  const refresh = plan.nodes.filter(
    (n) => n !== remediation.node && rnd.chance(updated.includes(n) ? 0.2 : 0.7),
  );
  return {
    ...(lateNode ? { late: { node: lateNode, rebootMs: lateMs } } : {}),
    unhealthy,
    resumeAfterMs,
    remediation,
    refresh,
    waves: { initial: rnd.int(1, 2), growth: 2, pauseBetweenMs: tenth(rnd.between(0, 3000)) },
  };
}

/**
 * The run's plan under its gates: no node that never returns (it is `late`), the late node's reboot
 * that long, and the bound longer by the unhealthy spells, a halt per failure expected, and a wave for
 * the policy's own reboots.
 */
export function gatedRun(plan: RunPlan, g: GatesPlan): RunPlan {
  const { neverReturns: _, ...rest } = plan;
  const updates = plan.updates.map((u) =>
    u.node === g.late?.node ? { ...u, rebootMs: g.late.rebootMs } : u,
  );
  const unhealthyMs = g.unhealthy.reduce((s, u) => s + u.forMs, 0);
  const haltMs = (g.late ? g.late.rebootMs : 0) + 2 * Math.max(...g.resumeAfterMs) + 30_000;
  return { ...rest, updates, boundMs: plan.boundMs + unhealthyMs + haltMs + 60_000 };
}

/** Reboots each node must make in the run: its update's, a refresh's, the remediation's. */
export function expectedReboots(plan: RunPlan, g: GatesPlan): Map<string, number> {
  const out = new Map(plan.updates.map((u) => [u.node, 1]));
  for (const n of g.refresh) out.set(n, 1);
  out.set(g.remediation.node, (out.get(g.remediation.node) ?? 0) + 1);
  return out;
}

export function describeGates(g: GatesPlan): string {
  const s = (ms: number) => `${(ms / 1000).toFixed(1)}s`;
  return [
    `  gates: waves ${g.waves.initial}×${g.waves.growth} (pause ${s(g.waves.pauseBetweenMs)}), failure budget 1; ${g.late ? `${g.late.node} back after ${s(g.late.rebootMs)} (past returnTimeout)` : 'no late node'}`,
    `  health check unhealthy: ${g.unhealthy.map((u) => `+${s(u.atMs)} for ${s(u.forMs)}`).join(', ')}; halts resumed after ${g.resumeAfterMs.map(s).join(', ')}`,
    `  remediation ${g.remediation.node} from +${s(g.remediation.atMs)}; refresh (booted 3h ago, maxUptime 1h): ${g.refresh.join(', ') || 'none'}`,
  ].join('\n');
}
