/**
 * A compressed run mapped back to real time by what was compressed (decision 0070). The twin divides
 * its hosts' time down and its policies' durations by the speed; the drains, the scheduler, the API
 * server and the agents' reactions run at their own pace (and so does the drain timeout, left undivided).
 * So a node's time in Rebooting, AfterReboot (the soak) and Failed is multiplied back, and the rest of its
 * attempt kept; an attempt starts as long after the slot it took was freed as it did in the twin; and a
 * node's wait between its own attempts (the retry backoff) is multiplied back. Pure.
 */
import { Phase, SLOT_PHASES } from '../api/phases.ts';
import type { ObservedNode, RunObservations } from './observations.ts';
import { observedAtSpeed } from './timing.ts';

/** Phases whose length the twin divided by its speed: the host down, the soak, a failed attempt's timeouts. */
const COMPRESSED = new Set<string>([Phase.rebooting, Phase.afterReboot, Phase.failed]);

/** How many times longer a phase lasts in real time than it did in the twin. */
export const stretch = (phase: string, speed: number): number => (COMPRESSED.has(phase) ? speed : 1);

const inSlot = (phase: string) => SLOT_PHASES.has(phase as Phase);

/** One attempt of a node: the index of the phase that began it, and of the one that ended it. */
interface Attempt {
  node: number;
  pool: string | undefined;
  first: number;
  end?: number;
  startMs: number;
  endMs?: number;
  /** Mapped back. */
  start?: number;
  finish?: number;
}

function attemptsOf(nodes: readonly ObservedNode[]): Attempt[] {
  const out: Attempt[] = [];
  nodes.forEach((n, node) => {
    let current: Attempt | undefined;
    n.phases.forEach((p, i) => {
      const now = inSlot(p.phase);
      if (now && !current) {
        current = { node, pool: n.pool, first: i, startMs: p.atMs };
        out.push(current);
      } else if (!now && current) {
        current.end = i;
        current.endMs = p.atMs;
        current = undefined;
      }
    });
  });
  return out.sort((a, b) => a.startMs - b.startMs || a.node - b.node);
}

/**
 * When an attempt starts, mapped back: as long after the last slot freed in its pool, or after the
 * rollout's start, as in the twin; and, after its node's own attempt before, that wait multiplied back.
 */
function mappedStart(a: Attempt, earlier: readonly Attempt[], speed: number): number {
  let start = a.startMs;
  let freed: Attempt | undefined;
  for (const e of earlier)
    if (e.pool === a.pool && e.endMs !== undefined && e.endMs <= a.startMs && e.finish !== undefined)
      if (!freed || (freed.endMs ?? 0) < e.endMs) freed = e;
  if (freed?.finish !== undefined) start = Math.max(start, freed.finish + (a.startMs - (freed.endMs ?? 0)));
  const own = earlier.filter((e) => e.node === a.node && e.finish !== undefined).at(-1);
  if (own?.finish !== undefined) start = Math.max(start, own.finish + (a.startMs - (own.endMs ?? 0)) * speed);
  return start;
}

/** The node's phase times mapped back, given where each of its attempts starts. */
function mappedPhases(n: ObservedNode, starts: ReadonlyMap<number, number>, speed: number): number[] {
  const out: number[] = [];
  n.phases.forEach((p, i) => {
    const before = n.phases[i - 1];
    const previous = out[i - 1];
    const start = starts.get(i);
    if (start !== undefined) out.push(start);
    else if (!before || previous === undefined) out.push(p.atMs);
    else out.push(previous + (p.atMs - before.atMs) * stretch(before.phase, speed));
  });
  return out;
}

/**
 * A monotone map of any other instant of the run (an eviction, a pod's creation, the run's end): through
 * the nodes' mapped phases, never slower than real time, so what came first still does.
 */
export function instantMap(points: readonly (readonly [number, number])[]): (ms: number) => number {
  const sorted = [[0, 0] as const, ...points].sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const table: [number, number][] = [];
  for (const [t, mapped] of sorted) {
    const last = table.at(-1);
    table.push([t, last ? Math.max(mapped, last[1] + (t - last[0])) : mapped]);
  }
  return (ms) => {
    // The last point at or before ms, by bisection: a large run maps tens of thousands of evictions.
    let lo = 0;
    let hi = table.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((table[mid] as [number, number])[0] <= ms) lo = mid + 1;
      else hi = mid;
    }
    const i = lo - 1;
    if (i < 0) return ms;
    const [t, mapped] = table[i] as [number, number];
    const next = table[i + 1];
    if (!next) return mapped + (ms - t);
    return mapped + ((ms - t) * (next[1] - mapped)) / (next[0] - t);
  };
}

/** The run's observations in real time: compressed phases multiplied back, the rest as the twin ran it. */
export function retimed(o: RunObservations, speed: number): RunObservations {
  if (speed === 1) return o;
  // Windows read on the simulated clock pace a rollout that meets them: all of it is compressed time.
  const windowed = o.nodes.some((n) => n.windows.length > 0) || (o.windowStretches?.length ?? 0) > 0;
  if (windowed) return observedAtSpeed(o, speed);
  const attempts = attemptsOf(o.nodes);
  const startsByNode = o.nodes.map(() => new Map<number, number>());
  attempts.forEach((a, i) => {
    a.start = mappedStart(a, attempts.slice(0, i), speed);
    startsByNode[a.node]?.set(a.first, a.start);
    if (a.end === undefined) return;
    const node = o.nodes[a.node] as ObservedNode;
    const phases = mappedPhases(
      { ...node, phases: node.phases.slice(0, a.end + 1) },
      startsByNode[a.node] ?? new Map(),
      speed,
    );
    a.finish = phases[a.end];
  });
  const mapped = o.nodes.map((n, i) => mappedPhases(n, startsByNode[i] ?? new Map(), speed));
  const at = instantMap(
    o.nodes.flatMap((n, i) => n.phases.map((p, k) => [p.atMs, mapped[i]?.[k] ?? p.atMs] as const)),
  );
  return {
    ...o,
    // A run that ran into its deadline ran as long as the deadline given.
    elapsedMs: o.timedOut ? o.elapsedMs * speed : Math.max(at(o.elapsedMs), ...mapped.flat()),
    rebootMs: o.rebootMs * speed,
    nodes: o.nodes.map((n, i) => ({
      ...n,
      phases: n.phases.map((p, k) => ({ ...p, atMs: mapped[i]?.[k] ?? p.atMs })),
    })),
    evictions: o.evictions.map((e) => ({
      ...e,
      atMs: at(e.atMs),
      ...(e.createdMs !== undefined ? { createdMs: at(e.createdMs) } : {}),
    })),
    speed,
  };
}
