/**
 * How each setting tried by `nuo whatif run --suggest` fared, read off its run's report, and which to
 * suggest: the fastest that finished its pool with no drain waiting on a PodDisruptionBudget, no node
 * stuck, no safety rule broken, inside the window. Pure.
 */
import type { WhatifReport } from './report.ts';
import type { Candidate } from './suggest.ts';

/** Totals closer than this to the fastest are run-to-run noise: among them the gentlest is suggested. */
export const TIE = 0.05;

export interface Outcome {
  /** The pool's nodes, and how many finished. */
  nodes: number;
  finished: number;
  /** From the rollout's start to the pool's last node finishing, when all did. */
  totalMs?: number;
  /** How long the run rolled: until the pool's nodes finished, or its deadline. */
  elapsedMs?: number;
  /** PDBs that refused an eviction from a drain of the pool's nodes. */
  pdbsBlocked: string[];
  /** The pool's nodes that did not finish. */
  stuck: string[];
  violations: string[];
  /** Finished within `--window`; undefined when no window was given. */
  fitsWindow?: boolean;
  /** The run could not be made (the twin did not stand): why. */
  error?: string;
}

export interface Tried {
  candidate: Candidate;
  outcome: Outcome;
}

export interface Ranked extends Tried {
  /** A suggestion: nothing below holds it back. */
  eligible: boolean;
  /** Why it is not one. */
  why: string[];
}

/** The outcome for `pool` of a run's report; `windowMs`: the window its pool must finish in. */
export function outcomeOf(report: WhatifReport, pool: string, windowMs: number | undefined): Outcome {
  const line = report.pools.find((p) => p.name === pool);
  const members = new Set(report.nodes.filter((n) => n.pool === pool).map((n) => n.name));
  const totalMs = line?.finishMs;
  return {
    nodes: members.size,
    finished: line?.finished ?? 0,
    ...(totalMs !== undefined ? { totalMs } : {}),
    elapsedMs: report.elapsedMs,
    pdbsBlocked: [...new Set(report.drainWaits.filter((w) => members.has(w.node)).map((w) => w.pdb))].sort(),
    stuck: report.stuck.filter((s) => members.has(s.node)).map((s) => s.node),
    violations: report.violations,
    ...(windowMs !== undefined ? { fitsWindow: totalMs !== undefined && totalMs <= windowMs } : {}),
  };
}

function whyNot(o: Outcome): string[] {
  if (o.error !== undefined) return [`the run failed: ${o.error}`];
  const why: string[] = [];
  if (o.totalMs === undefined) why.push(`${o.nodes - o.finished} of ${o.nodes} node(s) did not finish`);
  if (o.pdbsBlocked.length > 0) why.push(`drains waited on ${o.pdbsBlocked.join(', ')}`);
  if (o.fitsWindow === false && o.totalMs !== undefined) why.push('longer than the window');
  if (o.violations.length > 0) why.push(`${o.violations.length} safety rule(s) broken`);
  return why;
}

/** Gentler first: fewer nodes at once, then fewer per zone, then one zone at a time, then tried first. */
function gentler(a: Ranked, b: Ranked, order: Map<Candidate, number>): number {
  const x = a.candidate;
  const y = b.candidate;
  const oneAtATime = (c: Candidate) => (c.settings.zoneOrder === 'OneAtATime' ? 0 : 1);
  return (
    x.slots - y.slots ||
    x.zoneSlots - y.zoneSlots ||
    oneAtATime(x) - oneAtATime(y) ||
    (order.get(x) ?? 0) - (order.get(y) ?? 0)
  );
}

/**
 * Every setting tried, the suggestion first (when there is one): eligible ones by total, except that the
 * gentlest of those within TIE of the fastest goes first; then the rest, those that finished first,
 * then by fewer PDBs blocked, then by total.
 */
export function rankSuggestions(tried: readonly Tried[]): Ranked[] {
  const order = new Map(tried.map((t, i) => [t.candidate, i]));
  const ranked = tried.map((t): Ranked => {
    const why = whyNot(t.outcome);
    return { ...t, eligible: why.length === 0, why };
  });
  const total = (r: Ranked) => r.outcome.totalMs ?? Number.POSITIVE_INFINITY;
  const eligible = ranked
    .filter((r) => r.eligible)
    .sort((a, b) => total(a) - total(b) || gentler(a, b, order));
  const fastest = eligible[0];
  const tied = fastest ? eligible.filter((r) => total(r) <= total(fastest) * (1 + TIE)) : [];
  const chosen = [...tied].sort((a, b) => gentler(a, b, order))[0];
  const rest = ranked
    .filter((r) => !r.eligible)
    .sort(
      (a, b) =>
        Number(b.outcome.totalMs !== undefined) - Number(a.outcome.totalMs !== undefined) ||
        a.outcome.pdbsBlocked.length - b.outcome.pdbsBlocked.length ||
        total(a) - total(b) ||
        gentler(a, b, order),
    );
  return [...(chosen ? [chosen] : []), ...eligible.filter((r) => r !== chosen), ...rest];
}
