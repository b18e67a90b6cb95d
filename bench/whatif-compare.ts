/**
 * How a `nuo whatif run` prediction compares with the real rollout it predicted, both as reports
 * (src/whatif/report.ts) of the same observations: total time, each node's finish, the nodes that never
 * finished and the PDBs that held them. Pure.
 */
import type { WhatifReport } from '../src/whatif/report.ts';

export interface Outcome {
  /** The last finish of a node that finished: the total when every node did. */
  lastFinishMs?: number;
  /** Nodes that did not finish by the deadline. */
  stuck: string[];
  /**
   * For each node that did not finish, the PDB that refused its drain last: what held it at the end
   * (earlier refusals that went on are timing, not what stalls the rollout).
   */
  blockedPdbs: string[];
}

export interface Comparison {
  real: Outcome;
  predicted: Outcome;
  /** (predicted − real) / real of the last finish, in %. */
  totalErrorPct?: number;
  /** |predicted − real| finish of the nodes that finished in both. */
  finishError?: { medianMs: number; maxMs: number; nodes: number };
  sameStuck: boolean;
  sameBlockedPdbs: boolean;
}

export function outcome(r: WhatifReport): Outcome {
  const finishes = r.nodes.flatMap((n) => (n.finished && n.finishMs !== undefined ? [n.finishMs] : []));
  const stuck = r.nodes.filter((n) => !n.finished).map((n) => n.name);
  return {
    ...(finishes.length > 0 ? { lastFinishMs: Math.max(...finishes) } : {}),
    stuck: stuck.sort(),
    blockedPdbs: [
      ...new Set(
        stuck.flatMap((node) => {
          const waits = r.drainWaits.filter((w) => w.node === node);
          const last = waits.reduce<(typeof waits)[number] | undefined>(
            (a, w) => (a && a.lastMs >= w.lastMs ? a : w),
            undefined,
          );
          return last ? [last.pdb] : [];
        }),
      ),
    ].sort(),
  };
}

const median = (xs: readonly number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
};

const sameSet = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && a.every((x) => b.includes(x));

export function compare(real: WhatifReport, predicted: WhatifReport): Comparison {
  const r = outcome(real);
  const p = outcome(predicted);
  const finishOf = new Map(predicted.nodes.map((n) => [n.name, n.finished ? n.finishMs : undefined]));
  const errors = real.nodes.flatMap((n) => {
    const other = finishOf.get(n.name);
    return n.finished && n.finishMs !== undefined && other !== undefined
      ? [Math.abs(other - n.finishMs)]
      : [];
  });
  return {
    real: r,
    predicted: p,
    ...(r.lastFinishMs && p.lastFinishMs !== undefined
      ? { totalErrorPct: ((p.lastFinishMs - r.lastFinishMs) / r.lastFinishMs) * 100 }
      : {}),
    ...(errors.length > 0
      ? { finishError: { medianMs: median(errors), maxMs: Math.max(...errors), nodes: errors.length } }
      : {}),
    sameStuck: sameSet(r.stuck, p.stuck),
    sameBlockedPdbs: sameSet(r.blockedPdbs, p.blockedPdbs),
  };
}
