/**
 * The node lifecycle conditions (KEP-5683) nuo publishes on a Node, as pure functions: which ones the
 * node should carry now, from its phase and its attempt, and the status patch that gets it there while
 * touching nuo's own conditions only. lifecycle-writer.ts sends the patch. Each message stays the same
 * for as long as the node's situation does, so a node is written when its situation changes, not on
 * every pass (docs/decisions/0046-node-lifecycle-conditions.md).
 */
import type { V1Node, V1NodeCondition } from '@kubernetes/client-node';
import {
  LifecycleConditions as C,
  LIFECYCLE_CONDITIONS,
  type LifecycleCondition,
  NUO_REASON_PREFIX,
} from '../../api/keys.ts';
import { Phase } from '../../api/phases.ts';
import { needsReboot, nextPlan, outsideAttempt } from '../decide/need.ts';
import type { NodeView } from '../decide/node-view.ts';
import type { Slot } from '../decide/slot.ts';

/** Why nuo maintains the node: the reason of each of its conditions (a stable CamelCase category). */
export const NuoReason = {
  /** The node's agent reported that it needs a reboot (an OS update staged, a sentinel file). */
  rebootNeeded: 'NuoRebootNeeded',
  /** A person asked for a reboot (`nuo reboot`: nuo.dev/reboot-requested). */
  rebootRequested: 'NuoRebootRequested',
  /** A Plan's upgrade. */
  plan: 'NuoPlan',
  /** The node's policy reboots it for a Node condition held too long (`remediation`). */
  remediation: 'NuoRemediation',
  /** The node's policy reboots it for a boot older than its `reboot.maxUptime`. */
  refresh: 'NuoRefresh',
} as const;

/** A condition nuo wants on the node: status True (one nuo does not want is removed). */
export interface WantedCondition {
  type: LifecycleCondition;
  reason: string;
  message: string;
}

/** A condition nuo wrote, so nuo's to change or remove: its reason carries nuo's prefix. */
export const ownedByNuo = (c: Pick<V1NodeCondition, 'reason'>): boolean =>
  c.reason?.startsWith(NUO_REASON_PREFIX) === true;

/** Phases in which the maintenance itself runs (a Plan's Job, the reboot, the health gate, a failure). */
const IN_PROGRESS: ReadonlySet<Phase> = new Set([
  Phase.upgrading,
  Phase.rebootGranted,
  Phase.rebooting,
  Phase.afterReboot,
  Phase.failed,
]);

const want = (type: LifecycleCondition, reason: string, message: string): WantedCondition => ({
  type,
  reason,
  message,
});

/** A reboot's cause: the need the agent reported, else a person's request, else what its policy asks. */
function rebootReason(n: NodeView): string {
  if (n.rebootNeeded) return NuoReason.rebootNeeded;
  if (n.rebootRequested) return NuoReason.rebootRequested;
  const kind = n.policyAsks?.need?.kind;
  return kind ? NuoReason[kind] : NuoReason.rebootNeeded;
}

/**
 * A node outside an attempt: MaintenancePlanned while it needs an attempt (or has a reboot requested for
 * later); nothing while paused or skipped, since nuo plans nothing for it then.
 */
function planned(n: NodeView, now: Date): WantedCondition[] {
  if (n.paused || n.skipped) return [];
  const waits = 'nuo maintains it when its pool allows (nuo.dev/state-reason says what it waits for)';
  const plan = nextPlan(n, now.getTime());
  if (plan)
    return [
      want(
        C.maintenancePlanned,
        NuoReason.plan,
        `Plan ${plan.ref} to apply (version ${plan.version}); ${waits}`,
      ),
    ];
  const reboot = needsReboot(n, now.getTime());
  if (reboot) return [want(C.maintenancePlanned, rebootReason(n), `${reboot}; ${waits}`)];
  if (n.rebootRequested)
    return [
      want(
        C.maintenancePlanned,
        NuoReason.rebootRequested,
        `reboot requested for ${n.rebootRequested.toISOString()}; nuo maintains it from then, when its pool allows`,
      ),
    ];
  return [];
}

/**
 * The lifecycle conditions the node should carry now: `slot` is its slot in the ledger (a Plan's
 * attempt names its Plan there), `managed` whether a policy selects it (nuo publishes nothing on a node
 * it does not manage). Outside an attempt: MaintenancePlanned while it waits for one. In an attempt:
 * MaintenancePlanned until the maintenance starts (hooks, drain); DrainInProgress while draining;
 * Drained from the end of the drain until the attempt ends; MaintenanceInProgress from the grant or the
 * Plan's Job through the health gate, and while Failed (nuo holds its slot: still out of service).
 */
export function wantedConditions(
  n: NodeView,
  slot: Slot | undefined,
  managed: boolean,
  now: Date,
): WantedCondition[] {
  if (!managed) return [];
  if (outsideAttempt(n) || n.state === undefined) return planned(n, now);
  const ref = slot?.plan?.ref ?? n.plan;
  const reason = ref === undefined ? rebootReason(n) : NuoReason.plan;
  const what = ref === undefined ? 'a reboot' : `Plan ${ref}`;
  if (n.state === Phase.beforeReboot || n.state === Phase.draining) {
    const admitted = want(
      C.maintenancePlanned,
      reason,
      `nuo admitted the node for ${what}; nuo.dev/state shows its progress`,
    );
    if (n.state === Phase.beforeReboot) return [admitted];
    return [
      admitted,
      want(
        C.drainInProgress,
        reason,
        "nuo evicts the node's pods through the Eviction API (kubectl drain's rules)",
      ),
    ];
  }
  if (!IN_PROGRESS.has(n.state)) return [];
  // A reboot's attempt is always drained; a Plan's only when it drains (a reboot implies a drain).
  const drained = ref === undefined || slot?.plan?.prepare === 'drain';
  const doing =
    ref === undefined
      ? 'nuo reboots the node'
      : `nuo applies Plan ${ref} (its Job${slot?.plan?.reboot ? ', then a reboot' : ''})`;
  const message =
    n.state === Phase.failed
      ? `the node did not reboot or come back within nuo's timeouts (Failed); nuo keeps it out of service until it returns healthy`
      : `${doing}, then holds it until it passes nuo's health gate`;
  return [
    ...(drained
      ? [want(C.drained, reason, 'nuo drained the node; it stays cordoned until the maintenance ends')]
      : []),
    want(C.maintenanceInProgress, reason, message),
  ];
}

/** One entry of a strategic merge patch of `status.conditions` (merge key: type). */
export type ConditionPatch =
  | {
      type: LifecycleCondition;
      status: 'True';
      reason: string;
      message: string;
      lastHeartbeatTime: string;
      lastTransitionTime: string;
    }
  | { type: LifecycleCondition; $patch: 'delete' };

/** A condition time as the API server or the client library gives it, as RFC 3339. */
const timeOf = (t: unknown): string | undefined =>
  t instanceof Date ? t.toISOString() : typeof t === 'string' ? t : undefined;

/**
 * The strategic merge patch of `status.conditions` from `current` to `wanted`, empty when nothing is to
 * change. Only nuo's own conditions are set or removed: a lifecycle condition another writer set stays as
 * it is, and nuo does without that one. A condition written is stamped now (lastHeartbeatTime); its
 * lastTransitionTime is now when it turns True, else kept.
 */
export function lifecyclePatch(
  current: readonly V1NodeCondition[] | undefined,
  wanted: readonly WantedCondition[],
  now: Date,
): ConditionPatch[] {
  const at = now.toISOString();
  const patch: ConditionPatch[] = [];
  for (const type of LIFECYCLE_CONDITIONS) {
    const have = current?.find((c) => c.type === type);
    if (have && !ownedByNuo(have)) continue;
    const w = wanted.find((c) => c.type === type);
    if (!w) {
      if (have) patch.push({ type, $patch: 'delete' });
      continue;
    }
    if (have?.status === 'True' && have.reason === w.reason && have.message === w.message) continue;
    const since = have?.status === 'True' ? timeOf(have.lastTransitionTime) : undefined;
    patch.push({
      type,
      status: 'True',
      reason: w.reason,
      message: w.message,
      lastHeartbeatTime: at,
      lastTransitionTime: since ?? at,
    });
  }
  return patch;
}

/** The node's lifecycle conditions as a decision reads them (type, status, reason, message). */
function lifecycleOf(node: V1Node | undefined): string {
  const conditions = (node?.status?.conditions ?? []).filter((c) =>
    (LIFECYCLE_CONDITIONS as readonly string[]).includes(c.type),
  );
  return JSON.stringify(conditions.map((c) => [c.type, c.status, c.reason, c.message]));
}

/** Whether two versions of a node carry the same lifecycle conditions (heartbeat times aside). */
export const sameLifecycle = (a: V1Node | undefined, b: V1Node): boolean => lifecycleOf(a) === lifecycleOf(b);
