/**
 * A rollout played on a model of its drains (bench/order-model.ts): pure, so its arithmetic is
 * unit-tested. A drain of a node without pods takes what it took in the run. A drain of a node with pods
 * takes a fixed part, then evicts its pods at a rate shared equally by every such drain in progress (a
 * processor-sharing queue: the PDBs and the replacements' scheduling are the server).
 */

/** One node of a measured rollout. */
export interface Measured {
  /** Pods its drain evicted. */
  pods: number;
  drainMs: number;
  /** Its slot time beyond the drain: reboot, soak and every overhead. */
  restMs: number;
  /** When it was admitted, from the run's first admission. */
  admittedMs: number;
}

export interface Contention {
  /** The fixed part of a drain with pods. */
  baseMs: number;
  /** The rate at which the drains in progress evict pods, shared. */
  podsPerSecond: number;
}

export const Order = {
  measured: 'measured',
  mostPods: 'mostPods',
  /** As measured until 2·K or fewer wait; then the most pods first. */
  mostPodsInTail: 'mostPodsInTail',
  /** Nodes with pods at even intervals among the others, each kind as measured. */
  spread: 'spread',
} as const;
export type Order = (typeof Order)[keyof typeof Order];

const STEP_MS = 50;

/** A drain of a node with pods in progress: its pods left to evict, and when it started. */
interface Draining {
  left: number;
  startedMs: number;
}

/** Evicts the pods of the step from nowMs on; returns the drains done at its end (nowMs + STEP_MS). */
function stepDrains(drains: Draining[], c: Contention, nowMs: number): Draining[] {
  const evicting = drains.filter((d) => nowMs - d.startedMs >= c.baseMs);
  const share = (c.podsPerSecond * STEP_MS) / 1000 / Math.max(1, evicting.length);
  for (const d of evicting) d.left -= share;
  return drains.filter((d) => d.left <= 0);
}

/**
 * The drain times the model gives each node with pods, each drain started when it was in the run: how
 * well the model fits the run, free of any order.
 */
export function replayDrains(nodes: readonly Measured[], c: Contention): Map<Measured, number> {
  const waiting = nodes.filter((n) => n.pods > 0).sort((a, b) => a.admittedMs - b.admittedMs);
  const active = new Map<Draining, Measured>();
  const result = new Map<Measured, number>();
  for (let t = 0, next = 0; next < waiting.length || active.size > 0; t += STEP_MS) {
    for (; next < waiting.length && (waiting[next] as Measured).admittedMs <= t; next++) {
      const n = waiting[next] as Measured;
      active.set({ left: n.pods, startedMs: t }, n);
    }
    for (const d of stepDrains([...active.keys()], c, t)) {
      result.set(active.get(d) as Measured, t + STEP_MS - d.startedMs);
      active.delete(d);
    }
  }
  return result;
}

/** The contention that fits the run's drains best (least squares over a grid), and how well. */
export function fitContention(nodes: readonly Measured[]): Contention & { rmsErrorMs: number } {
  let best: (Contention & { rmsErrorMs: number }) | undefined;
  for (let baseMs = 0; baseMs <= 10_000; baseMs += 500) {
    for (let podsPerSecond = 1; podsPerSecond <= 60; podsPerSecond++) {
      const c = { baseMs, podsPerSecond };
      let sq = 0;
      let count = 0;
      for (const [n, ms] of replayDrains(nodes, c)) {
        sq += (ms - n.drainMs) ** 2;
        count++;
      }
      const rmsErrorMs = count === 0 ? 0 : Math.sqrt(sq / count);
      if (!best || rmsErrorMs < best.rmsErrorMs) best = { ...c, rmsErrorMs };
    }
  }
  return best as Contention & { rmsErrorMs: number };
}

/** The nodes with pods at even intervals among the others, each kind in the order given. */
export function spread(nodes: readonly Measured[]): Measured[] {
  const loaded = nodes.filter((n) => n.pods > 0);
  const light = nodes.filter((n) => n.pods === 0);
  const out: Measured[] = [];
  for (let i = 0, l = 0, e = 0; i < nodes.length; i++) {
    // The next slot goes to a loaded node when that keeps their share of the order so far at or under theirs.
    const due = l < loaded.length && (e >= light.length || (l + 1) * nodes.length <= (i + 1) * loaded.length);
    out.push((due ? loaded[l++] : light[e++]) as Measured);
  }
  return out;
}

export interface Played {
  rolloutMs: number;
  meanDrainMs: number;
  /** bench:rollout's figure: ceil(N/K)·(mean drain + R + soak) / rollout, R + soak taken as restFloorMs. */
  efficiency: number;
}

/**
 * Every node waiting at 0, admitted in `order` whenever one of the K slots is free; a slot is freed
 * restMs after its drain. `restFloorMs` (R + soak) makes the efficiency figure's bound.
 */
export function play(
  nodes: readonly Measured[],
  k: number,
  c: Contention,
  order: Order,
  restFloorMs: number,
): Played {
  const byAdmission = [...nodes].sort((a, b) => a.admittedMs - b.admittedMs);
  const mostPods = (ns: Measured[]) => [...ns].sort((a, b) => b.pods - a.pods);
  let waiting =
    order === Order.mostPods
      ? mostPods(byAdmission)
      : order === Order.spread
        ? spread(byAdmission)
        : byAdmission;
  const draining = new Map<Draining, Measured>();
  /** Drains of nodes without pods, and slots after their drain: when each ends. */
  const lightDrains: { endMs: number; node: Measured }[] = [];
  const slotsEnd: number[] = [];
  let held = 0;
  let drainSum = 0;
  let tailSorted = false;
  let t = 0;
  const drained = (n: Measured, atMs: number, drainMs: number) => {
    drainSum += drainMs;
    slotsEnd.push(atMs + n.restMs);
  };
  for (; waiting.length > 0 || held > 0; t += STEP_MS) {
    for (let i = slotsEnd.length - 1; i >= 0; i--) {
      if ((slotsEnd[i] as number) <= t) {
        slotsEnd.splice(i, 1);
        held--;
      }
    }
    if (order === Order.mostPodsInTail && !tailSorted && waiting.length <= 2 * k) {
      waiting = mostPods(waiting);
      tailSorted = true;
    }
    while (held < k && waiting.length > 0) {
      const n = waiting[0] as Measured;
      waiting = waiting.slice(1);
      held++;
      if (n.pods > 0) draining.set({ left: n.pods, startedMs: t }, n);
      else lightDrains.push({ endMs: t + n.drainMs, node: n });
    }
    for (let i = lightDrains.length - 1; i >= 0; i--) {
      const d = lightDrains[i] as { endMs: number; node: Measured };
      if (d.endMs <= t) {
        lightDrains.splice(i, 1);
        drained(d.node, d.endMs, d.node.drainMs);
      }
    }
    for (const d of stepDrains([...draining.keys()], c, t)) {
      drained(draining.get(d) as Measured, t + STEP_MS, t + STEP_MS - d.startedMs);
      draining.delete(d);
    }
  }
  const rolloutMs = t - STEP_MS;
  const meanDrainMs = drainSum / nodes.length;
  const bound = Math.ceil(nodes.length / k) * (meanDrainMs + restFloorMs);
  return { rolloutMs, meanDrainMs, efficiency: bound / rolloutMs };
}
