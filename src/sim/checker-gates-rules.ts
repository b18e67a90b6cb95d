/**
 * The gates' rules as the independent checker judges them (checker-gates.ts), as pure functions of what
 * it saw: no admission while a health check failed, none in a Halted pool until a person resumed it,
 * remediations within their rate limit, and a budget for some reasons of attempts never exceeded.
 *
 * Order is judged by resourceVersion, not by clocks: one etcd stamps every write of the run (nodes,
 * the policy, the custom resource) with one revision counter, so an admission written after a halt was
 * written has the greater one, whatever the watches' delays and the operators' clocks.
 */
import type { V1Node } from '@kubernetes/client-node';
import { Annotations } from '../api/keys.ts';
import type { AttemptReason } from '../api/update-policy.ts';
import { compareResourceVersions } from '../kube/informer.ts';

/** A stretch of the run between two writes: after `from`, and before `to` (open: still going). */
export interface Span {
  from: string;
  to?: string;
  /** What it was, for the violation's detail. */
  what: string;
  /** The one node it holds (a node-scoped pod blocker's); every node of the pool when absent. */
  node?: string;
}

/** An admission (or a finished node's slot freed) the checker saw, at the write that showed it. */
export interface Seen {
  node: string;
  resourceVersion: string;
}

const after = (a: string, b: string) => (compareResourceVersions(a, b) ?? 0) > 0;

/** Each of `seen` written inside one of `spans` that holds its node: the spans' rule broken, once per event. */
export function inSpans(seen: readonly Seen[], spans: readonly Span[]): { seen: Seen; span: Span }[] {
  const out: { seen: Seen; span: Span }[] = [];
  for (const s of seen) {
    const span = spans.find(
      (p) =>
        (p.node === undefined || p.node === s.node) &&
        after(s.resourceVersion, p.from) &&
        (p.to === undefined || after(p.to, s.resourceVersion)),
    );
    if (span) out.push({ seen: s, span });
  }
  return out;
}

/** A policy's remediation and refresh, as the checker reads a node's reason for an attempt by them. */
export interface PolicyAsks {
  /** Node condition types that ask for a remediation once `True` for `forMs`. */
  remediation?: { types: readonly string[]; forMs: number };
  /** A boot older than this asks for a refresh. */
  maxUptimeMs?: number;
}

/**
 * Why an attempt admitted `n` at `t` (ms): a Plan's, its own need or a request (Reboot), else what the
 * policy asks of it: a condition held long enough (Remediation), a boot too old (Refresh). The checker's
 * own reading of the node, not the operator's reason.
 */
export function reasonOf(n: V1Node, asks: PolicyAsks, t: number): AttemptReason {
  const a = n.metadata?.annotations ?? {};
  if (a[Annotations.plan]) return 'Plan';
  if (a[Annotations.rebootNeeded] === 'true' || a[Annotations.rebootRequested] !== undefined) return 'Reboot';
  const r = asks.remediation;
  const held = (n.status?.conditions ?? []).some(
    (c) =>
      r?.types.includes(c.type) &&
      c.status === 'True' &&
      t - new Date(c.lastTransitionTime ?? t).getTime() >= r.forMs,
  );
  if (held) return 'Remediation';
  const boot = Date.parse(a[Annotations.bootTime] ?? '');
  if (asks.maxUptimeMs !== undefined && t - boot > asks.maxUptimeMs) return 'Refresh';
  return 'Reboot';
}

/** A budget of spec.budgets as the checker holds nuo to it: at most `max` disrupted for its reasons. */
export interface ReasonBudget {
  name: string;
  max: number;
  reasons: readonly AttemptReason[];
}

/**
 * The nodes an admission of `node` at `now` must have left room for in a budget per reason: itself, and
 * those disrupted (an attempt of nuo's among them) since `raceMs` before it or longer (`since`: when each
 * disruption began). The budget limits the admissions for its reasons against every disrupted node, in
 * the operator's order within a pass: two admitted in the same pass are written in either order, so an
 * attempt that began with this one is not held against it (the count of attempts for those reasons at
 * once still is).
 */
export function settledDisruptions(
  node: string,
  since: ReadonlyMap<string, number>,
  now: number,
  raceMs: number,
): string[] {
  const settled = [...since].filter(([, t]) => now - t >= raceMs).map(([name]) => name);
  return [...new Set([node, ...settled])].sort();
}

/**
 * An attempt for `reason` started with `disrupted` nodes of its pool disrupted (itself among them): each
 * budget for that reason it exceeds, as a detail.
 */
export function reasonBudgetBreaches(
  node: string,
  reason: AttemptReason,
  disrupted: readonly string[],
  budgets: readonly ReasonBudget[],
): string[] {
  return budgets
    .filter((b) => b.reasons.includes(reason) && disrupted.length > b.max)
    .map(
      (b) =>
        `${node}'s attempt for ${reason} started with ${disrupted.length} nodes disrupted (budget ${b.name}: ${b.max}): ${disrupted.join(', ')}`,
    );
}

/** Attempts in progress by their reasons: each budget that more of them at once exceed, as a detail. */
export function reasonCountBreaches(
  attempts: ReadonlyMap<string, AttemptReason>,
  budgets: readonly ReasonBudget[],
): string[] {
  const out: string[] = [];
  for (const b of budgets) {
    const mine = [...attempts].filter(([, r]) => b.reasons.includes(r)).map(([n]) => n);
    if (mine.length > b.max)
      out.push(
        `${mine.length} attempts for ${b.reasons.join('/')} at once (budget ${b.name}: ${b.max}): ${mine.sort().join(', ')}`,
      );
  }
  return out;
}

/** The window a remediation rate limit counts over. */
export const HOUR_MS = 3_600_000;

/**
 * Remediations admitted (`at`: ms, in order seen) past `maxPerHour` in any hour: each one that is, as a
 * detail naming the ones within the hour before it.
 */
export function remediationRateBreaches(
  admitted: readonly { node: string; at: number }[],
  maxPerHour: number,
): string[] {
  const out: string[] = [];
  admitted.forEach((r, i) => {
    const within = admitted.slice(0, i + 1).filter((p) => r.at - p.at < HOUR_MS);
    if (within.length > maxPerHour)
      out.push(
        `${within.length} remediations within an hour (maxPerHour ${maxPerHour}): ${within.map((p) => p.node).join(', ')}`,
      );
  });
  return out;
}
