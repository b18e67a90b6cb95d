/**
 * A Plan as the operator keeps it (its spec checked, its version resolved, its hash computed) and what a
 * pass takes from it: whether it starts attempts, which nodes it selects, how its attempts run, what its
 * completion writes, and how its nodes are drained. Pure.
 */
import { planKey, planLabel, sucPlanLabel } from '../../api/keys.ts';
import type { Plan, PlanSpec } from '../../api/plan.ts';
import { type PlanGroup, planGroupOf, planRefOf, SUC_PLANS } from '../../api/plan-groups.ts';
import { labelSelector, selectorText } from '../../kube/selector.ts';
import { validatePlan } from '../../plan/validate.ts';
import { planWindow } from '../../plan/window.ts';
import { type CalendarClock, calendarAt, REAL_CLOCK, realAt } from '../../policy/calendar-clock.ts';
import type { FieldError } from '../../policy/field-error.ts';
import { parseDuration } from '../../util/duration.ts';
import type { PlanPrepare } from '../decide/plan-work.ts';
import type { DrainSettings } from '../write/drain-runner.ts';
import type { PassPlan } from './plan-pass.ts';

export interface PlanEntry {
  /** "namespace/name". */
  ref: string;
  /** nuo's, or SUC's when the operator adopts SUC's Plans. */
  group: PlanGroup;
  name: string;
  namespace: string;
  uid: string;
  generation: number;
  plan: Plan;
  /** Why the spec cannot be used as it is (what the API server cannot check, a name taken). */
  errors: FieldError[];
  /** The version to apply: the spec's, or the channel's as last resolved. */
  version?: string;
  /** Why the channel (or a secret) could not be read last time; the last version stays in use. */
  resolveError?: string;
  /** The hash of what runs on the node at `version` (with the Plan's secrets). */
  hash?: string;
  /** The hash SUC gives the Plan at `version` (plan/suc-hash.ts). */
  sucHash?: string;
}

/** How a Plan prepares its nodes: a drain (asked for, or implied by a reboot), a cordon, or neither. */
export function planPrepare(spec: PlanSpec): PlanPrepare {
  if (spec.drain || spec.reboot) return 'drain';
  return spec.cordon ? 'cordon' : 'none';
}

/** postCompleteLabels with SUC's $(LATEST_VERSION) (resolved: no '+') and $(LATEST_HASH) expanded. */
export function completionLabels(spec: PlanSpec, version: string, hash: string): Record<string, string> {
  const value = (v: string) => v.replaceAll('$(LATEST_VERSION)', version).replaceAll('$(LATEST_HASH)', hash);
  return Object.fromEntries(Object.entries(spec.postCompleteLabels ?? {}).map(([k, v]) => [k, value(v)]));
}

const delayMs = (spec: PlanSpec) => {
  try {
    return spec.postCompleteDelay ? parseDuration(spec.postCompleteDelay) : 0;
  } catch {
    return 0;
  }
};

/**
 * The Plan as a pass uses it at `now`. A Plan not ready (invalid, no version yet, or of SUC's group while
 * `sucStandDown` says why SUC's controller is taken to run) starts nothing.
 */
export function passPlan(
  e: PlanEntry,
  now: number,
  sucStandDown?: string,
  clock: CalendarClock = REAL_CLOCK,
): PassPlan {
  const spec = e.plan.spec;
  const standDown = e.group === SUC_PLANS ? sucStandDown : undefined;
  const ready =
    e.errors.length === 0 && e.version !== undefined && e.hash !== undefined && standDown === undefined;
  let selects: PassPlan['selects'] = () => false;
  if (ready) selects = labelSelector(spec.nodeSelector ?? {});
  const version = e.version ?? '';
  const hash = e.hash ?? '';
  return {
    ref: e.ref,
    name: e.name,
    ready,
    selects: (labels) => selects(labels),
    hash,
    ...(e.sucHash === undefined ? {} : { sucHash: e.sucHash }),
    version,
    prepare: planPrepare(spec),
    ...(spec.prepare ? { runsPrepare: true } : {}),
    reboot: spec.reboot === true,
    concurrency: spec.concurrency ?? 1,
    ...windowHold(e, now, clock),
    ...(standDown === undefined ? {} : { standDown }),
    completion: { labels: completionLabels(spec, version, hash), postCompleteDelayMs: delayMs(spec) },
    ...(spec.onFailure === 'Stop'
      ? { stop: { generation: e.generation, failed: e.plan.status?.failed ?? [] } }
      : {}),
  };
}

/**
 * Outside the Plan's window, read on `clock`, its nodes wait (an attempt in progress goes on past its end,
 * as SUC's); the reason names the calendar time it opens, `until` the real instant to look again.
 */
function windowHold(e: PlanEntry, now: number, clock: CalendarClock): Pick<PassPlan, 'hold'> {
  if (!e.plan.spec.window) return {};
  const window = planWindow(e.plan.spec.window);
  const at = calendarAt(clock, now);
  if (!window.ok || window.window.contains(at)) return {};
  const next = window.window.nextChange(at);
  const opens = next === undefined ? '' : ` (opens ${new Date(next).toISOString()})`;
  return {
    hold: {
      reason: `waiting: outside Plan ${e.ref}'s window${opens}`,
      ...(next === undefined ? {} : { until: realAt(clock, next) }),
    },
  };
}

/** A drain timeout of SUC's: nanoseconds as a number, or a Go duration. */
function timeoutMs(timeout: number | string | undefined): number | undefined {
  if (timeout === undefined) return undefined;
  if (typeof timeout === 'number') return timeout / 1e6;
  try {
    return parseDuration(timeout);
  } catch {
    return undefined;
  }
}

/**
 * How a Plan's attempt drains its node: the Plan's `drain` as kubectl drain reads it (SUC's defaults:
 * emptyDir data deleted and DaemonSet pods left unless a flag says no), in nuo's engine; a drain without a timeout (0 or none)
 * takes the pool's, since every drain nuo runs ends (safety rule 5); the pool's waitFor applies too.
 */
export function planDrainSettings(spec: PlanSpec, pool: DrainSettings): DrainSettings {
  const d = spec.drain;
  if (!d) return pool;
  const timeout = timeoutMs(d.timeout);
  return {
    timeoutMs: timeout && timeout > 0 ? timeout : pool.timeoutMs,
    gracePeriodSeconds: d.gracePeriod ?? -1,
    deleteEmptyDirData: d.deleteEmptydirData !== false && d.deleteLocalData !== false,
    force: d.force === true,
    podSelector: d.podSelector ? selectorText(d.podSelector) : '',
    ignoreDaemonSets: d.ignoreDaemonSets !== false,
    skipWaitForDeleteTimeoutSeconds: d.skipWaitForDeleteTimeout ?? 0,
    ...(pool.waitFor ? { waitFor: pool.waitFor } : {}),
    ...(pool.onFailure ? { onFailure: pool.onFailure } : {}),
  };
}

/**
 * Plans whose label name (planKey) another Plan took first: the name part of plan.nuo.dev/<name> and
 * plan.upgrade.cattle.io/<name> is shared by every namespace and both groups, so the Plan first by ref
 * keeps it and the others are reported invalid.
 */
export function nameTaken(entries: readonly Pick<PlanEntry, 'ref' | 'name'>[]): Map<string, string> {
  const first = new Map<string, string>();
  const taken = new Map<string, string>();
  for (const e of [...entries].sort((a, b) => (a.ref < b.ref ? -1 : 1))) {
    const key = planKey(e.name);
    const holder = first.get(key);
    if (holder) taken.set(e.ref, holder);
    else first.set(key, e.ref);
  }
  return taken;
}

/** What resolving a Plan gave: its version and hash, or why it could not. */
export interface PlanResolution {
  version?: string;
  hash?: string;
  sucHash?: string;
  resolveError?: string;
}

export const planRef = (p: Plan) =>
  planRefOf(planGroupOf(p.apiVersion), p.metadata.namespace, p.metadata.name);

/**
 * Every Plan checked (its spec, and a name another namespace's Plan took first) with its resolution, in
 * ref order: what the operator and the people-facing commands read alike.
 */
export function planEntries(plans: readonly Plan[], resolutionOf: (p: Plan) => PlanResolution): PlanEntry[] {
  const taken = nameTaken(plans.map((p) => ({ ref: planRef(p), name: p.metadata.name })));
  return plans
    .map((p): PlanEntry => {
      const ref = planRef(p);
      const errors = validatePlan(p.spec);
      const holder = taken.get(ref);
      if (holder)
        errors.push({
          field: 'metadata.name',
          message: `Plan ${holder} has this name: Plan names are shared by every namespace and both API groups (the node labels ${planLabel(p.metadata.name)} and ${sucPlanLabel(p.metadata.name)} hold no namespace: two Plans of one name selecting a node would each undo the other's record there); rename one`,
        });
      const r = resolutionOf(p);
      return {
        ref,
        group: planGroupOf(p.apiVersion),
        name: p.metadata.name,
        namespace: p.metadata.namespace,
        uid: p.metadata.uid ?? '',
        generation: p.metadata.generation ?? 0,
        plan: p,
        errors,
        ...(r.version === undefined ? {} : { version: r.version }),
        ...(r.hash === undefined ? {} : { hash: r.hash }),
        ...(r.sucHash === undefined ? {} : { sucHash: r.sucHash }),
        ...(r.resolveError === undefined ? {} : { resolveError: r.resolveError }),
      };
    })
    .sort((a, b) => (a.ref < b.ref ? -1 : 1));
}
