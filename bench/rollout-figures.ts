/**
 * Figures of a rollout from the phase changes an independent watch saw: time per phase, drain time, the
 * slot time spent beyond drain + reboot + soak, and grant latency (from a slot freed while nodes were
 * waiting to the admission that took it). Pure, so the arithmetic is unit-tested.
 */
import { Phase, SLOT_PHASES } from '../src/api/phases.ts';

export interface Transition {
  node: string;
  phase: string;
  /** Milliseconds on a monotonic clock. */
  at: number;
}

export interface PhaseTime {
  phase: Phase;
  meanMs: number;
  p99Ms: number;
}

export interface RolloutFigures {
  phases: PhaseTime[];
  drainMedianMs: number;
  drainMeanMs: number;
  /** Grant latencies, sorted ascending. */
  latencies: number[];
  /** The waits behind them, in admission order: the slot freed, and the admission that took it. */
  waits: Wait[];
  /** Percentile of the grant latencies (nearest rank); NaN without any. */
  p: (percent: number) => number;
  /** Mean slot time per completed attempt minus the drain and `fixedMs` (reboot + soak). */
  overheadMeanMs: (fixedMs: number) => number;
  /** From `since` to the first admission. */
  firstAdmissionMs: number;
  /** Slot time of all attempts, summed (divide by K × rollout time for the budget's utilisation). */
  slotMsTotal: number;
  /** The attempts in admission order: when each was admitted and how long it held its slot. */
  attempts: Attempt[];
}

/** A slot freed while nodes were waiting, and the admission that took it. */
export interface Wait {
  node: string;
  freedAt: number;
  admittedAt: number;
}

/** A node's state-reason as the independent watch saw it change. */
export interface Reason {
  node: string;
  reason: string;
  at: number;
}

/**
 * The `top` longest waits, each with the reason its node showed last before its admission: what the
 * operator said it was waiting for, so that a wait far beyond the API server's latency explains itself
 * (a node NotReady, a failure's backoff) instead of only raising the p99.
 */
export function longestWaits(
  waits: readonly Wait[],
  reasons: readonly Reason[],
  top: number,
): Array<{ node: string; ms: number; reason: string | undefined }> {
  return [...waits]
    .sort((a, b) => b.admittedAt - b.freedAt - (a.admittedAt - a.freedAt))
    .slice(0, top)
    .map((w) => {
      const last = reasons
        .filter((r) => r.node === w.node && r.at < w.admittedAt)
        .reduce<Reason | undefined>((l, r) => (!l || r.at >= l.at ? r : l), undefined);
      return { node: w.node, ms: w.admittedAt - w.freedAt, reason: last?.reason };
    });
}

export interface Attempt {
  /** Milliseconds on the transitions' clock. */
  admittedAt: number;
  slotMs: number;
}

/**
 * How long `k` slots take to run these slot times, each handed to the first slot that frees, with no
 * delay at all between a slot freed and the next admission. With slot times that vary, slots drift out
 * of step and the last ones end at different moments: this is the best any scheduler that admits in
 * this order can do, so the gap between it and the bound is the workload's, the rest is the scheduler's.
 */
export function packedMakespanMs(slotMs: readonly number[], k: number): number {
  if (!Number.isInteger(k) || k < 1) throw new Error(`k must be a positive integer, got ${k}`);
  const ends = Array<number>(Math.min(k, slotMs.length)).fill(0);
  for (const ms of slotMs) {
    let first = 0;
    for (let i = 1; i < ends.length; i++) if ((ends[i] as number) < (ends[first] as number)) first = i;
    ends[first] = (ends[first] as number) + ms;
  }
  return ends.reduce((max, e) => Math.max(max, e), 0);
}

/** Where the K slots' time went besides attempts, in slot-milliseconds summed over the slots. */
export interface SlotIdle {
  /** From `since` to the last slot freed. */
  spanMs: number;
  /** Before a slot's first admission (a slot never used: all of the span). */
  startMs: number;
  /** From a slot freed to its next admission. */
  betweenMs: number;
  /** After a slot's last attempt ended, while others still ran. */
  endMs: number;
}

/**
 * Follows each of the `k` slots from holder to holder, each admission taking the slot freed earliest,
 * and sums the time they stood empty. K × span = slot time of all attempts + start + between + end: the
 * rollout is the work over K plus these, so they say what a rollout lost where. At the start and between
 * attempts the slots wait for the scheduler (and the API server); at the end they wait for the slowest
 * ones, which ran a larger sum of drains than the rest (the workload's: no scheduler can split an attempt).
 */
export function slotIdle(attempts: readonly Attempt[], k: number, since: number): SlotIdle {
  if (!Number.isInteger(k) || k < 1) throw new Error(`k must be a positive integer, got ${k}`);
  const freeAt = Array<number>(k).fill(since);
  const used = Array<boolean>(k).fill(false);
  let startMs = 0;
  let betweenMs = 0;
  for (const a of [...attempts].sort((x, y) => x.admittedAt - y.admittedAt)) {
    let i = 0;
    for (let j = 1; j < k; j++) if ((freeAt[j] as number) < (freeAt[i] as number)) i = j;
    // An admission the watch saw before the release it refilled (never on a budget kept): no idle time.
    const idle = Math.max(0, a.admittedAt - (freeAt[i] as number));
    if (used[i]) betweenMs += idle;
    else startMs += idle;
    used[i] = true;
    freeAt[i] = Math.max(a.admittedAt, freeAt[i] as number) + a.slotMs;
  }
  const end = freeAt.reduce((max, t) => Math.max(max, t), since);
  let endMs = 0;
  for (let i = 0; i < k; i++) {
    if (used[i]) endMs += end - (freeAt[i] as number);
    else startMs += end - since;
  }
  return { spanMs: end - since, startMs, betweenMs, endMs };
}

/**
 * An admission: the first phase holding a slot after one that holds none (BeforeReboot, or a later
 * phase should the watch have seen only the node's later version).
 */
function admission(t: Transition, before: Transition | undefined): boolean {
  return SLOT_PHASES.has(t.phase as Phase) && !(before && SLOT_PHASES.has(before.phase as Phase));
}

/** Nearest-rank percentile of an ascending list. */
export function percentile(sorted: readonly number[], percent: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((percent / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))] as number;
}

export function rolloutFigures(all: readonly Transition[], since: number): RolloutFigures {
  const transitions = all.filter((t) => t.at >= since).sort((a, b) => a.at - b.at);
  const durations = new Map<Phase, number[]>();
  const slotTimes: Array<{ slotMs: number; drainMs: number; admittedAt: number }> = [];
  const byNode = new Map<string, Transition[]>();
  for (const t of transitions) byNode.set(t.node, [...(byNode.get(t.node) ?? []), t]);
  for (const list of byNode.values()) {
    let admittedAt: number | undefined;
    let drainMs = 0;
    for (let i = 0; i < list.length; i++) {
      const t = list[i] as Transition;
      const next = list[i + 1];
      if (admission(t, list[i - 1])) {
        admittedAt = t.at;
        drainMs = 0;
      }
      if (next && SLOT_PHASES.has(t.phase as Phase)) {
        const d = next.at - t.at;
        durations.set(t.phase as Phase, [...(durations.get(t.phase as Phase) ?? []), d]);
        if (t.phase === Phase.draining) drainMs += d;
      }
      if (t.phase === Phase.idle && admittedAt !== undefined) {
        slotTimes.push({ slotMs: t.at - admittedAt, drainMs, admittedAt });
        admittedAt = undefined;
      }
    }
  }

  // A freed slot is owed to a waiting node: each admission is paired with the earliest slot freed while
  // some node was Pending and not yet taken by an earlier admission.
  const waits: Wait[] = [];
  const freed: number[] = [];
  const pending = new Set<string>();
  const holding = new Set<string>();
  const previous = new Map<string, Transition>();
  for (const t of transitions) {
    if (t.phase === Phase.pending) pending.add(t.node);
    else pending.delete(t.node);
    const admitted = admission(t, previous.get(t.node));
    previous.set(t.node, t);
    if (admitted) {
      const at = freed.shift();
      if (at !== undefined) waits.push({ node: t.node, freedAt: at, admittedAt: t.at });
      holding.add(t.node);
    } else if (t.phase === Phase.idle && holding.delete(t.node) && pending.size > 0) {
      freed.push(t.at);
    }
  }
  const latencies = waits.map((w) => w.admittedAt - w.freedAt).sort((a, b) => a - b);

  const mean = (xs: readonly number[]) =>
    xs.length ? xs.reduce((s, x) => s + x, 0) / xs.length : Number.NaN;
  const drains = [...(durations.get(Phase.draining) ?? [])].sort((a, b) => a - b);
  return {
    phases: [...SLOT_PHASES]
      .filter((p) => durations.has(p))
      .map((phase) => {
        const xs = [...(durations.get(phase) ?? [])].sort((a, b) => a - b);
        return { phase, meanMs: mean(xs), p99Ms: percentile(xs, 99) };
      }),
    drainMedianMs: percentile(drains, 50) || 0,
    drainMeanMs: mean(drains) || 0,
    latencies,
    waits,
    p: (percent) => percentile(latencies, percent),
    overheadMeanMs: (fixedMs) => mean(slotTimes.map((s) => s.slotMs - s.drainMs - fixedMs)),
    firstAdmissionMs: (transitions.find((t) => SLOT_PHASES.has(t.phase as Phase))?.at ?? Number.NaN) - since,
    slotMsTotal: slotTimes.reduce((sum, s) => sum + s.slotMs, 0),
    attempts: [...slotTimes]
      .sort((a, b) => a.admittedAt - b.admittedAt)
      .map(({ admittedAt, slotMs }) => ({ admittedAt, slotMs })),
  };
}
