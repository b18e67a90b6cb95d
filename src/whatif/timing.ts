/**
 * How long things take in a `nuo whatif run`, pure: the host's time down from the reboot and return
 * times, and time compression (`--speed N`): the policies the twin's operator is given with every
 * duration divided by N (their calendars read on a clock N times as fast), and what the run observed
 * mapped back with every time multiplied by N.
 */
import { Default } from 'typebox/value';
import { UpdatePolicySpec } from '../api/update-policy.ts';
import { parseDuration } from '../util/duration.ts';
import type { UpdatePolicyObject } from './objects.ts';
import type { RunObservations } from './observations.ts';

/** The most a run compresses time: beyond it the twin's own latencies (API round trips) dominate. */
export const MAX_SPEED = 100;

/** A run that cannot be timed as asked: the message says why and what to do. */
export class TimingError extends Error {}

/** A Go duration divided by `speed`, in whole milliseconds as the operator reads them: "30s" / 10 → "3000ms". */
export function compressDuration(text: string, speed: number): string {
  const ms = Math.round(parseDuration(text) / speed);
  return ms === 0 ? '0' : `${ms}ms`;
}

/**
 * The policy with its defaults filled in (a default left out would stay at full length) and every
 * duration divided by `speed` but the drain timeout: a twin's drains run at their own pace (decision
 * 0070), so a divided timeout would end drains the real rollout lets finish. Windows and scheduled
 * budgets stay as written: the twin's operator reads them on a simulated clock running `speed` times as
 * fast (src/policy/calendar-clock.ts).
 */
export function compressPolicy(policy: UpdatePolicyObject, speed: number): UpdatePolicyObject {
  if (speed === 1) return policy;
  const spec = Default(UpdatePolicySpec, structuredClone(policy.spec ?? {})) as UpdatePolicySpec;
  const c = (d: string | undefined) => compressDuration(d ?? '0', speed);
  const reboot = spec.reboot ?? {};
  const kured = spec.coexistence?.kured;
  const waves = spec.rollout?.waves;
  return {
    ...policy,
    spec: {
      ...spec,
      reboot: {
        ...reboot,
        rebootTimeout: c(reboot.rebootTimeout),
        returnTimeout: c(reboot.returnTimeout),
        soak: c(reboot.soak),
        minGrantSpacing: c(reboot.minGrantSpacing),
        retryBackoff: c(reboot.retryBackoff),
        retryBackoffMax: c(reboot.retryBackoffMax),
        ...(reboot.failedSlotTTL !== undefined ? { failedSlotTTL: c(reboot.failedSlotTTL) } : {}),
      },
      ...(spec.remediation
        ? {
            remediation: {
              ...spec.remediation,
              conditions: spec.remediation.conditions.map((r) => ({ ...r, for: c(r.for) })),
            },
          }
        : {}),
      ...(spec.rollout && waves?.pauseBetween !== undefined
        ? { rollout: { ...spec.rollout, waves: { ...waves, pauseBetween: c(waves.pauseBetween) } } }
        : {}),
      ...(spec.notifications
        ? { notifications: spec.notifications.map((n) => ({ ...n, blockedFor: c(n.blockedFor) })) }
        : {}),
      ...(spec.coexistence && kured
        ? { coexistence: { ...spec.coexistence, kured: { ...kured, lockTTL: c(kured.lockTTL) } } }
        : {}),
    },
  };
}

export interface TimingFlags {
  /** From the agent's reboot until the host boots again; absent: each pool's measure, else 1 minute. */
  rebootMs?: number;
  /** From the new boot until the node is Ready; absent: each pool's measure, else 0. */
  returnMs?: number;
  /** How many times faster than real time the twin rolls. */
  speed: number;
  /** How long the rollout may run, in real-rollout time. */
  timeoutMs: number;
}

/** The reboot time when neither --reboot-time nor a pool's measure gives one. */
export const DEFAULT_REBOOT_MS = 60_000;

/** Where a time came from: its flag, the pool's status.durations (what nuo measured there), or the default. */
export type TimeSource = 'flag' | 'measured' | 'default';

/** A pool's host times in real-rollout time, and where each came from. */
export interface PoolTimes {
  /** The UpdatePolicy; absent: nodes in no pool. */
  pool?: string;
  rebootMs: number;
  returnMs: number;
  rebootFrom: TimeSource;
  returnFrom: TimeSource;
  /** Attempts the measure was taken over, when one was used. */
  measuredAttempts?: number;
}

/**
 * A pool's reboot and return times: each flag given wins; else the median nuo measured on the cluster
 * (`measured`: the snapshot's UpdatePolicy of that name, its status.durations); else the default.
 */
export function poolTimes(
  pool: string | undefined,
  measured: UpdatePolicyObject | undefined,
  flags: Pick<TimingFlags, 'rebootMs' | 'returnMs'>,
): PoolTimes {
  const d = measured?.status?.durations;
  const pick = (flag: number | undefined, p50: number | undefined, fallback: number) =>
    flag !== undefined
      ? { ms: flag, from: 'flag' as const }
      : p50 !== undefined
        ? { ms: Math.round(p50 * 1000), from: 'measured' as const }
        : { ms: fallback, from: 'default' as const };
  const reboot = pick(flags.rebootMs, d?.rebootP50Seconds, DEFAULT_REBOOT_MS);
  const ret = pick(flags.returnMs, d?.returnP50Seconds, 0);
  const used = reboot.from === 'measured' || ret.from === 'measured';
  return {
    ...(pool !== undefined ? { pool } : {}),
    rebootMs: reboot.ms,
    returnMs: ret.ms,
    rebootFrom: reboot.from,
    returnFrom: ret.from,
    ...(used && d ? { measuredAttempts: d.samples } : {}),
  };
}

export interface TwinTiming {
  policies: UpdatePolicyObject[];
  /**
   * How long a twin host is down, from its reboot until its node is Ready, in twin time: the pools'
   * time when they share one (a node in no pool is never rebooted), else the flags' or defaults'.
   */
  hostDownMs: number;
  /** How long a twin host of each pool is down, in twin time. */
  hostDownMsByPool: Record<string, number>;
  /** Each pool's times and where they came from, then those of nodes in no pool (real-rollout time). */
  times: PoolTimes[];
  /** The run's deadline in twin time. */
  timeoutMs: number;
}

/**
 * What the twin runs with. A twin host comes back with its new boot ID and Ready at once, after reboot
 * plus return time; the operator times the reboot up to the new boot against `reboot.rebootTimeout`, so a
 * split that only the sum breaks is refused rather than predicted as a failure the real rollout would
 * not have. `measured` are the policies whose status says what nuo measured (the snapshot's).
 */
export function twinTiming(
  policies: readonly UpdatePolicyObject[],
  flags: TimingFlags,
  measured: readonly UpdatePolicyObject[] = policies,
): TwinTiming {
  if (!(flags.speed >= 1 && flags.speed <= MAX_SPEED))
    throw new TimingError(`--speed must be from 1 to ${MAX_SPEED}, got ${flags.speed}`);
  const times = policies.map((p) =>
    poolTimes(
      p.metadata.name,
      measured.find((m) => m.metadata.name === p.metadata.name),
      flags,
    ),
  );
  policies.forEach((p, i) => {
    const t = times[i] as PoolTimes;
    const downMs = t.rebootMs + t.returnMs;
    const spec = Default(UpdatePolicySpec, structuredClone(p.spec ?? {})) as UpdatePolicySpec;
    const limit = parseDuration(spec.reboot?.rebootTimeout ?? '0');
    if (t.returnMs > 0 && t.rebootMs <= limit && downMs > limit)
      throw new TimingError(
        `the reboot plus return time of UpdatePolicy ${p.metadata.name}'s hosts (${downMs / 1000} s: reboot ${t.rebootFrom}, return ${t.returnFrom}) exceeds its reboot.rebootTimeout (${limit / 1000} s): a twin host comes back booted and Ready at once, so the twin would time the reboot out where the real one may not; shorten the two (--reboot-time, --return-time), or pass their sum as --reboot-time if the real reboot does take that long`,
      );
  });
  const unpooled = poolTimes(undefined, undefined, flags);
  const downs = new Set(times.map((t) => t.rebootMs + t.returnMs));
  const shared = downs.size === 1 ? [...downs][0] : undefined;
  return {
    policies: policies.map((p) => compressPolicy(p, flags.speed)),
    hostDownMs: (shared ?? unpooled.rebootMs + unpooled.returnMs) / flags.speed,
    hostDownMsByPool: Object.fromEntries(
      times.map((t) => [t.pool as string, (t.rebootMs + t.returnMs) / flags.speed]),
    ),
    times: [...times, unpooled],
    timeoutMs: flags.timeoutMs / flags.speed,
  };
}

/** A run of a compressed twin mapped back to real time: every time and duration multiplied by `speed`. */
export function observedAtSpeed(o: RunObservations, speed: number): RunObservations {
  if (speed === 1) return o;
  const x = (ms: number) => ms * speed;
  return {
    ...o,
    elapsedMs: x(o.elapsedMs),
    rebootMs: x(o.rebootMs),
    nodes: o.nodes.map((n) => ({ ...n, phases: n.phases.map((p) => ({ ...p, atMs: x(p.atMs) })) })),
    evictions: o.evictions.map((e) => ({
      ...e,
      atMs: x(e.atMs),
      ...(e.createdMs !== undefined ? { createdMs: x(e.createdMs) } : {}),
    })),
    speed,
  };
}
