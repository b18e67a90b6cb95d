/** Figures of an observed rollout (src/sim/rollout-observer.ts) for bench/vm-rollout.ts, pure. */
import type { RunObservations } from '../src/whatif/observations.ts';
import type { WhatifReport } from '../src/whatif/report.ts';
import { packedMakespanMs } from './rollout-figures.ts';

export interface PhaseSpan {
  phase: string;
  meanMs: number;
  maxMs: number;
  /** How many times a node was seen in it and left it. */
  count: number;
}

/**
 * How long nodes stayed in each phase they left (from entering it to entering the next), in the order
 * phases were first seen; the phase a node ended in is not counted (it did not leave it).
 */
export function phaseTimes(o: RunObservations): PhaseSpan[] {
  const spans = new Map<string, number[]>();
  for (const n of o.nodes) {
    for (const [i, p] of n.phases.entries()) {
      const next = n.phases[i + 1];
      if (!next || next.phase === p.phase) continue;
      spans.set(p.phase, [...(spans.get(p.phase) ?? []), next.atMs - p.atMs]);
    }
  }
  return [...spans].map(([phase, ms]) => ({
    phase,
    meanMs: ms.reduce((a, b) => a + b, 0) / ms.length,
    maxMs: Math.max(...ms),
    count: ms.length,
  }));
}

/**
 * The shortest the rollout could have been with `slots` slots: each finished node's slot time (its first
 * attempt's start to its finish) packed with no gap between one ending and the next beginning; and the
 * efficiency, that bound over the real last finish.
 */
export function rolloutBound(r: WhatifReport, slots: number): { boundMs: number; efficiencyPct: number } {
  const slotMs = r.nodes.flatMap((n) =>
    n.finished && n.startMs !== undefined && n.finishMs !== undefined ? [n.finishMs - n.startMs] : [],
  );
  const last = Math.max(0, ...r.nodes.flatMap((n) => (n.finishMs === undefined ? [] : [n.finishMs])));
  const boundMs = packedMakespanMs(slotMs, slots);
  return { boundMs, efficiencyPct: last > 0 ? (boundMs / last) * 100 : 0 };
}

/** Evictions the API server granted (201) of `workload`'s pods, per pod of its `replicas`. */
export function evictionsPerPod(o: RunObservations, workload: string, replicas: number): number {
  return o.evictions.filter((e) => e.workload === workload && e.code === 201).length / replicas;
}
