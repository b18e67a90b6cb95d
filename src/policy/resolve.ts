/**
 * An UpdatePolicy as the operator uses it: defaults filled in, every field parsed, or every problem named
 * by its field. Whatever the API server could not refuse (an unknown time zone, a bad cron expression or
 * regular expression, a selector it does not parse) and whatever a CRD older than these types let in is
 * found here; a policy with any problem is not used at all, never half of it.
 */
import { Default, Errors } from 'typebox/value';
import type { AgentProtocol } from '../api/keys.ts';
import type { AttemptReason, NotifyOn, UpdatePolicy } from '../api/update-policy.ts';
import { NOTIFY_ON, READINGS_BOUNDS, UpdatePolicySpec } from '../api/update-policy.ts';
import { type WaitFor, waitForProblems } from '../drain/wait-for.ts';
import {
  type LabelSelectorSpec,
  labelSelector,
  parseSelector,
  type Selector,
  selectorText,
} from '../kube/selector.ts';
import { type MaxUnavailable, parseMaxUnavailable } from '../operator/decide/budget.ts';
import type { RolloutSettings } from '../operator/decide/waves.ts';
import { KURED_LOCK_ANNOTATION, type KuredSettings } from '../operator/protocols/kured-lock.ts';
import { parseDuration } from '../util/duration.ts';
import type { FieldError } from './field-error.ts';
import { type ResolvedHealthCheck, resolveHealthCheck } from './health-checks.ts';
import { type PrometheusBlockerSpec, parsePrometheusSpec } from './prometheus.ts';
import { type ParsedWindows, parseWindows } from './windows-parse.ts';

/** A budget of spec.budgets, parsed. */
export interface ResolvedBudget {
  name: string;
  nodes: MaxUnavailable;
  /** The reasons it limits; absent: every reason. */
  reasons?: ReadonlySet<AttemptReason>;
  /** When it applies (no window: always). */
  windows: ParsedWindows;
}

export interface ResolvedPolicy {
  name: string;
  generation: number;
  selects: Selector;
  maxUnavailable: MaxUnavailable;
  maxUnavailablePerZone?: MaxUnavailable;
  /** spec.budgets: each a size, the reasons it limits (all when absent) and when it applies. */
  budgets: ResolvedBudget[];
  zoneLabel: string;
  zoneOrder: 'Parallel' | 'OneAtATime';
  paused: boolean;
  /** The protocol the pool's node agents speak. */
  agentProtocol: AgentProtocol;
  windows: ParsedWindows;
  prometheus?: PrometheusBlockerSpec;
  /** Pods whose running blocks new attempts in the pool: pod labels, and their namespace's. */
  podBlockers: {
    /** The pods' label selector, as the list request sends it. */
    selector: string;
    /** Their namespace's label selector as text ('' selects every namespace). */
    namespaceSelector: string;
    /** Their namespace's labels must match this (everything when not given). */
    namespaces: Selector;
    /** Pool: a matching pod holds the whole pool; Node: only the node it runs on. */
    scope: 'Pool' | 'Node';
  }[];
  drain: {
    timeoutMs: number;
    gracePeriodSeconds: number;
    deleteEmptyDirData: boolean;
    force: boolean;
    podSelector: string;
    skipWaitForDeleteTimeoutSeconds: number;
    /** drain.waitFor, each named by its field for the node's reason. */
    waitFor: WaitFor[];
    onFailure: { action: 'Retry' | 'Skip'; afterAttempts: number };
  };
  reboot: {
    rebootTimeoutMs: number;
    returnTimeoutMs: number;
    soakMs: number;
    minGrantSpacingMs: number;
    retryBackoffMs: number;
    retryBackoffMaxMs: number;
    maxIneffectiveReboots: number;
    beforeRebootAnnotations: string[];
    afterRebootAnnotations: string[];
    pendingTaint: boolean;
    /** A Failed node's slot is released after this long (reboot.failedSlotTTL); absent: kept. */
    failedSlotTtlMs?: number;
    /** Reboot nodes up longer than this (plus their spread); absent: never. */
    maxUptimeMs?: number;
  };
  /** Reboots for Node conditions (spec.remediation), when asked for. */
  remediation?: ResolvedRemediation;
  circuitBreaker?: MaxUnavailable;
  /** Waves and a failure budget (spec.rollout); absent: the pool rolls as maxUnavailable allows. */
  rollout?: RolloutSettings;
  /** Checks that must pass before each admission and before a finished node frees its slot. */
  healthChecks: ResolvedHealthCheck[];
  /** How old a blocker's or health check's reading may be and still count, and how long a read may take. */
  readings: { maxAgeMs: number; timeoutMs: number };
  /** kured beside nuo on this pool (coexistence.kured), its TTL parsed. */
  kured?: KuredSettings;
  notifications: ResolvedNotification[];
}

/** A policy's `remediation`, defaults filled in and durations parsed. */
export interface ResolvedRemediation {
  conditions: { type: string; status: string; forMs: number }[];
  maxPerHour: number;
}

/** Where a pool's news goes, and which (policy `notifications[]`). */
export interface ResolvedNotification {
  format: 'JSON' | 'Slack';
  /** The key of the Secret nuo-notifications that holds the receiver's URL. */
  secretKey: string;
  on: ReadonlySet<NotifyOn>;
  blockedForMs: number;
}

export type Resolution = { ok: true; policy: ResolvedPolicy } | { ok: false; errors: FieldError[] };

/** Collects errors by field: each parse says what went wrong with its field, and the rest go on. */
class Problems {
  readonly errors: FieldError[] = [];

  /** `parse(value)`, or undefined with the error recorded under `field`. */
  take<T>(field: string, parse: () => T): T | undefined {
    try {
      return parse();
    } catch (err) {
      this.errors.push({ field, message: (err as Error).message });
      return undefined;
    }
  }
}

const countOrPercent = (value: number | string) => parseMaxUnavailable(String(value));

/** A JSON pointer as the field paths of nuo's messages write it: /windows/weekly/0/days → windows.weekly[0].days. */
function fieldPath(pointer: string): string {
  const path = pointer
    .split('/')
    .slice(1)
    .map((part) => (/^\d+$/.test(part) ? `[${part}]` : `.${part}`))
    .join('')
    .replace(/^\./, '');
  return path || 'spec';
}

/** The schema's own errors (a CRD older than these types, or none installed), by field path. */
function schemaErrors(spec: unknown): FieldError[] {
  return [...Errors(UpdatePolicySpec, spec)].map((e) => ({
    field: fieldPath(e.instancePath),
    message: e.message,
  }));
}

export function resolvePolicy(policy: Pick<UpdatePolicy, 'metadata' | 'spec'>): Resolution {
  const spec = Default(UpdatePolicySpec, structuredClone(policy.spec ?? {})) as Required<UpdatePolicySpec>;
  const invalid = schemaErrors(spec);
  if (invalid.length > 0) return { ok: false, errors: invalid };
  const p = new Problems();
  const drain = spec.drain as Required<NonNullable<UpdatePolicySpec['drain']>>;
  const reboot = spec.reboot as Required<NonNullable<UpdatePolicySpec['reboot']>>;
  const readings = spec.readings as Required<NonNullable<UpdatePolicySpec['readings']>>;
  const d = (field: string, text: string) => p.take(field, () => parseDuration(text)) ?? 0;
  const resolved: ResolvedPolicy = {
    name: policy.metadata.name,
    generation: policy.metadata.generation ?? 0,
    selects: p.take('nodeSelector', () => labelSelector(spec.nodeSelector ?? {})) ?? (() => false),
    maxUnavailable: p.take('maxUnavailable', () => countOrPercent(spec.maxUnavailable)) ?? {
      kind: 'count',
      value: 1,
    },
    budgets: (spec.budgets ?? []).flatMap((b, i) => {
      const nodes = p.take(`budgets[${i}].nodes`, () => countOrPercent(b.nodes));
      const windows = parseWindows(b.windows ?? {});
      if (!windows.ok)
        p.errors.push(...windows.errors.map((e) => ({ ...e, field: `budgets[${i}].${e.field}` })));
      if (!nodes || !windows.ok) return [];
      return [
        {
          name: b.name,
          nodes,
          ...(b.reasons ? { reasons: new Set(b.reasons) } : {}),
          windows: windows.windows,
        },
      ];
    }),
    ...optional('maxUnavailablePerZone', spec.maxUnavailablePerZone, (v) =>
      p.take('maxUnavailablePerZone', () => countOrPercent(v)),
    ),
    zoneLabel: spec.zoneLabel,
    zoneOrder: spec.zoneOrder,
    paused: spec.paused,
    agentProtocol: spec.agentProtocol,
    windows: windowsOf(spec, p),
    ...optional('prometheus', spec.blockers?.prometheus, (v) => prometheusOf(v, p)),
    podBlockers: (spec.blockers?.pods ?? []).map((b, i) => ({
      selector: p.take(`blockers.pods[${i}].selector`, () => checkedSelectorText(b.selector)) ?? '',
      namespaceSelector: selectorText(b.namespaceSelector ?? {}),
      namespaces:
        p.take(`blockers.pods[${i}].namespaceSelector`, () => labelSelector(b.namespaceSelector ?? {})) ??
        (() => false),
      scope: b.scope ?? 'Pool',
    })),
    drain: {
      timeoutMs: d('drain.timeout', drain.timeout),
      gracePeriodSeconds: drain.gracePeriodSeconds,
      deleteEmptyDirData: drain.deleteEmptyDirData,
      force: drain.force,
      podSelector: p.take('drain.podSelector', () => checkedSelector(drain.podSelector)) ?? '',
      skipWaitForDeleteTimeoutSeconds: drain.skipWaitForDeleteTimeoutSeconds,
      waitFor: (drain.waitFor ?? []).map((w, i) => {
        const name = `drain.waitFor[${i}]`;
        return {
          name,
          selector: p.take(`${name}.selector`, () => checkedSelectorText(w.selector)) ?? '',
          namespaceSelector:
            p.take(`${name}.namespaceSelector`, () => checkedSelectorText(w.namespaceSelector ?? {})) ?? '',
          maxWaitSeconds: Math.ceil(d(`${name}.maxWait`, w.maxWait) / 1000),
          afterMaxWait: w.afterMaxWait ?? 'Evict',
        };
      }),
      onFailure: {
        action: drain.onFailure?.action ?? 'Retry',
        afterAttempts: drain.onFailure?.afterAttempts ?? 3,
      },
    },
    reboot: {
      rebootTimeoutMs: d('reboot.rebootTimeout', reboot.rebootTimeout),
      returnTimeoutMs: d('reboot.returnTimeout', reboot.returnTimeout),
      soakMs: d('reboot.soak', reboot.soak),
      minGrantSpacingMs: d('reboot.minGrantSpacing', reboot.minGrantSpacing),
      retryBackoffMs: d('reboot.retryBackoff', reboot.retryBackoff),
      retryBackoffMaxMs: d('reboot.retryBackoffMax', reboot.retryBackoffMax),
      maxIneffectiveReboots: reboot.maxIneffectiveReboots,
      beforeRebootAnnotations: reboot.beforeRebootAnnotations ?? [],
      afterRebootAnnotations: reboot.afterRebootAnnotations ?? [],
      pendingTaint: reboot.pendingTaint,
      ...optional('failedSlotTtlMs', reboot.failedSlotTTL, (v) => d('reboot.failedSlotTTL', v)),
      ...optional('maxUptimeMs', reboot.maxUptime, (v) => d('reboot.maxUptime', v)),
    },
    ...optional('remediation', spec.remediation, (r) => ({
      conditions: r.conditions.map((c, i) => ({
        type: c.type,
        status: c.status ?? 'True',
        forMs: d(`remediation.conditions[${i}].for`, c.for ?? '5m'),
      })),
      maxPerHour: r.maxPerHour ?? 1,
    })),
    ...optional('circuitBreaker', spec.circuitBreaker?.maxNotReady, (v) =>
      p.take('circuitBreaker.maxNotReady', () => countOrPercent(v)),
    ),
    ...optional('rollout', spec.rollout, (r) => rolloutOf(r, d)),
    healthChecks: (spec.healthChecks ?? []).flatMap((c, i) => {
      const resolved = p.take(`healthChecks[${i}]`, () => resolveHealthCheck(c));
      return resolved ? [resolved] : [];
    }),
    readings: readingsOf(readings, d, p),
    ...optional('kured', spec.coexistence?.kured, (k) => ({
      namespace: k.daemonSet.namespace,
      name: k.daemonSet.name,
      annotation: k.lockAnnotation ?? KURED_LOCK_ANNOTATION,
      concurrency: k.concurrency ?? 1,
      holdLock: k.holdLock ?? false,
      ttlMs: d('coexistence.kured.lockTTL', k.lockTTL ?? '5m'),
    })),
    notifications: (spec.notifications ?? []).map((n, i) => ({
      format: n.format ?? 'JSON',
      secretKey: n.secretKey,
      on: new Set(n.events ?? NOTIFY_ON),
      blockedForMs: d(`notifications[${i}].blockedFor`, n.blockedFor ?? '1h'),
    })),
  };
  for (const message of waitForProblems(resolved.drain.waitFor))
    p.errors.push({ field: 'drain.waitFor', message });
  return p.errors.length > 0 ? { ok: false, errors: p.errors } : { ok: true, policy: resolved };
}

/**
 * spec.readings, its durations parsed and held to the CRD's bounds (a CRD older than them, or none
 * installed, lets any value through): out of bounds is an error naming the field.
 */
function readingsOf(
  r: Required<NonNullable<UpdatePolicySpec['readings']>>,
  d: (field: string, text: string) => number,
  p: Problems,
): ResolvedPolicy['readings'] {
  const bounded = (field: 'maxAge' | 'timeout') => {
    const { min, max } = READINGS_BOUNDS[field];
    const ms = d(`readings.${field}`, r[field]);
    if (ms < parseDuration(min) || ms > parseDuration(max))
      p.errors.push({ field: `readings.${field}`, message: `${r[field]}: must be from ${min} to ${max}` });
    return ms;
  };
  const maxAgeMs = bounded('maxAge');
  const timeoutMs = bounded('timeout');
  if (timeoutMs >= maxAgeMs)
    p.errors.push({
      field: 'readings.timeout',
      message: `${r.timeout}: must be less than maxAge (${r.maxAge}): a reading that took longer would be too old when it lands`,
    });
  return { maxAgeMs, timeoutMs };
}

/** Waves (defaults filled in) and the failure budget, when either is set. */
function rolloutOf(
  r: NonNullable<UpdatePolicySpec['rollout']>,
  d: (field: string, text: string) => number,
): RolloutSettings | undefined {
  const waves = r.waves && {
    initial: r.waves.initial ?? 1,
    growth: r.waves.growth ?? 2,
    pauseBetweenMs: d('rollout.waves.pauseBetween', r.waves.pauseBetween ?? '0s'),
  };
  const max = r.failureBudget?.maxFailedAttempts;
  if (!waves && max === undefined) return undefined;
  return { ...(waves ? { waves } : {}), ...(max === undefined ? {} : { maxFailedAttempts: max }) };
}

/** A label selector's query text, once it parses (the server filters with it). */
function checkedSelectorText(spec: LabelSelectorSpec): string {
  labelSelector(spec);
  return selectorText(spec);
}

/** The selector text, once it parses (the drain engine parses it again where it uses it). */
function checkedSelector(text: string): string {
  parseSelector(text);
  return text;
}

/** `{ [key]: parse(value) }` when the value is set and parses, else nothing. */
function optional<K extends string, V, T>(key: K, value: V | undefined, parse: (v: V) => T | undefined) {
  const parsed = value === undefined ? undefined : parse(value);
  return (parsed === undefined ? {} : { [key]: parsed }) as Partial<Record<K, T>>;
}

function windowsOf(spec: UpdatePolicySpec, p: Problems): ParsedWindows {
  const parsed = parseWindows(spec.windows ?? {});
  if (parsed.ok) return parsed.windows;
  p.errors.push(...parsed.errors);
  return { windows: [], exclusions: [] };
}

function prometheusOf(spec: unknown, p: Problems): PrometheusBlockerSpec | undefined {
  const parsed = parsePrometheusSpec(spec);
  if (parsed.ok) return parsed.value;
  p.errors.push(...parsed.errors);
  return undefined;
}
