/**
 * Reboots a pool's policy asks for on its own (docs/decisions/0059-remediation-and-refresh.md): a
 * remediation, for a Node condition held long enough (`remediation`), and a refresh, for a boot older
 * than `reboot.maxUptime`. Pure: the node, the policy's settings and the time in; the need out. Both go
 * through the pool's budget, windows and gates like any other need; remediations also through a rate
 * limit counted over the ledger's record and the pool's `nuo.dev/remediated-at`, so a new leader honours
 * it, and a node registered again without its annotations still counts.
 */
import type { ResolvedRemediation } from '../../policy/resolve.ts';
import type { RemediationRecord } from './ledger-view.ts';
import { ms } from './need.ts';
import type { NodeView } from './node-view.ts';
import { AS_WRITTEN, type Observed } from './observed-clock.ts';
import { PolicyNeedKind, type PolicyReading } from './policy-reading.ts';

/** The window the remediation rate limit counts over. */
export const RATE_WINDOW_MS = 3_600_000;

/** The share of maxUptime over which nodes' refreshes spread out (each node's name fixes its place). */
export const REFRESH_SPREAD = 0.1;

/** A whole number of the largest unit that fits (days, hours, minutes, seconds), e.g. "168h" → "7d". */
export function shortDuration(durationMs: number): string {
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
  ] as const)
    if (durationMs >= size && durationMs % size === 0) return `${durationMs / size}${unit}`;
  return `${Math.round(durationMs / 1000)}s`;
}

/**
 * The first of the policy's conditions the node holds: due once held `for`, counted from when the deciding
 * process first saw it held with its lastTransitionTime (the node's clock wrote that: a new one starts the
 * count afresh); one without a transition time counts from now, so it never comes due on a guess.
 */
export function remediationReading(
  n: Pick<NodeView, 'name' | 'conditions'>,
  r: ResolvedRemediation,
  t: number,
  observed: Observed = AS_WRITTEN,
): PolicyReading {
  let dueAt: number | undefined;
  let faulty = false;
  for (const want of r.conditions) {
    const c = n.conditions.find((c) => c.type === want.type && c.status === want.status);
    if (!c) continue;
    faulty = true;
    const written = ms(c.since);
    if (Number.isNaN(written)) continue;
    const mark = `${c.status}|${c.since?.toISOString()}`;
    const due = observed(`condition/${n.name}/${c.type}`, mark, written) + want.forMs;
    if (due <= t)
      return {
        need: {
          kind: PolicyNeedKind.remediation,
          reason: `remediation: ${want.type}=${want.status} since ${c.since?.toISOString()} (for ${shortDuration(want.forMs)} or more)`,
        },
        faulty,
      };
    dueAt = Math.min(dueAt ?? due, due);
  }
  return { ...(dueAt === undefined ? {} : { dueAt }), ...(faulty ? { faulty } : {}) };
}

/** 32-bit FNV-1a of a string: a spread that every operator computes the same for the same node. */
function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** The node's own delay past maxUptime, in [0, REFRESH_SPREAD × maxUptime): fixed by its name. */
export function refreshSpread(node: string, maxUptimeMs: number): number {
  return Math.floor((fnv1a(node) / 2 ** 32) * REFRESH_SPREAD * maxUptimeMs);
}

/** A node whose agent reports a boot older than maxUptime plus its spread needs a refresh. */
export function refreshReading(
  n: Pick<NodeView, 'name' | 'bootTime'>,
  maxUptimeMs: number,
  t: number,
): PolicyReading {
  if (!n.bootTime) return {};
  const dueAt = n.bootTime.getTime() + maxUptimeMs + refreshSpread(n.name, maxUptimeMs);
  if (dueAt > t) return { dueAt };
  return {
    need: {
      kind: PolicyNeedKind.refresh,
      reason: `refresh: up since ${n.bootTime.toISOString()} (maxUptime ${shortDuration(maxUptimeMs)})`,
    },
  };
}

/** What a policy's remediation and maxUptime ask of the node: a remediation before a refresh. */
export function policyReading(
  n: Pick<NodeView, 'name' | 'conditions' | 'bootTime'>,
  p: { remediation?: ResolvedRemediation; maxUptimeMs?: number },
  t: number,
  observed: Observed = AS_WRITTEN,
): PolicyReading {
  const fix = p.remediation ? remediationReading(n, p.remediation, t, observed) : {};
  const refresh = p.maxUptimeMs === undefined ? {} : refreshReading(n, p.maxUptimeMs, t);
  const need = fix.need ?? refresh.need;
  const dues = [fix.dueAt, refresh.dueAt].filter((d): d is number => d !== undefined);
  return {
    ...(need ? { need } : {}),
    ...(dues.length > 0 ? { dueAt: Math.min(...dues) } : {}),
    ...(fix.faulty ? { faulty: true } : {}),
  };
}

/** A pool's remediation rate limit as one pass reads it. */
export interface RemediationRate {
  maxPerHour: number;
  /** When the pool's nodes were last admitted for a remediation, within the last hour (ms, oldest first). */
  recent: number[];
  /** The real length of an hour when the calendar runs faster (a whatif run's simulated clock). */
  hourMs?: number;
}

/**
 * The remediations of the pool within the last hour (`hourMs` real ms), each from when the deciding process
 * first saw it (its time was written on another leader's clock): those the ledger recorded, and each
 * node's `nuo.dev/remediated-at` where the ledger names none of that node's (one written before the ledger
 * kept them). `expired`: the ledger's records out of the hour, which the pass may forget.
 */
export function remediationRate(
  nodes: readonly Pick<NodeView, 'name' | 'remediatedAt'>[],
  recorded: readonly RemediationRecord[],
  maxPerHour: number,
  t: number,
  hourMs = RATE_WINDOW_MS,
  observed: Observed = AS_WRITTEN,
): RemediationRate & { expired: RemediationRecord[] } {
  const within = (at: number) => at > t - hourMs;
  const seen = recorded.map((r) => ({
    r,
    at: observed(`remediation/${r.node}/${r.at}`, r.at, Date.parse(r.at)),
  }));
  const logged = seen.filter(({ at }) => within(at));
  const named = new Set(logged.map(({ r }) => r.node));
  const unrecorded = nodes.flatMap((n) =>
    named.has(n.name) || !n.remediatedAt
      ? []
      : [observed(`remediated/${n.name}`, n.remediatedAt.toISOString(), n.remediatedAt.getTime())],
  );
  const recent = [...logged.map(({ at }) => at), ...unrecorded].filter(within).sort((a, b) => a - b);
  return {
    maxPerHour,
    recent,
    expired: seen.filter(({ at }) => !within(at)).map(({ r }) => r),
    ...(hourMs !== RATE_WINDOW_MS ? { hourMs } : {}),
  };
}

/**
 * Why a remediation may not start now: the pool started maxPerHour of them within the hour (those of
 * this pass included); until the oldest leaves the hour. Undefined when it may.
 */
export function rateWait(
  rate: RemediationRate,
  admittedThisPass: number,
): { reason: string; until?: number } | undefined {
  const used = rate.recent.length + admittedThisPass;
  if (used < rate.maxPerHour) return undefined;
  const oldest = rate.recent[used - rate.maxPerHour];
  const until = oldest === undefined ? undefined : oldest + (rate.hourMs ?? RATE_WINDOW_MS);
  return {
    reason: `waiting: remediation rate limit (${rate.maxPerHour} an hour in the pool)${until === undefined ? '' : `; next after ${new Date(until).toISOString()}`}`,
    ...(until === undefined ? {} : { until }),
  };
}
