/**
 * What decide() reads of a node beyond its phase: whether it needs a reboot and why, whether it is in an
 * attempt, whether it counts as disrupted, and the reason that names its malformed annotations.
 */
import { Phase } from '../../api/phases.ts';
import type { NodeView } from './node-view.ts';
import type { PlanWork } from './plan-work.ts';

/** A Date as milliseconds, NaN when absent (comparisons with NaN are false: nothing is decided on it). */
export const ms = (d: Date | undefined) => d?.getTime() ?? Number.NaN;

/** Longest part of the agent's reason for a need that is repeated in the operator's own reason. */
const NEED_REASON_MAX = 200;

/**
 * Why the node needs a reboot at `t`, or undefined: its agent's need, a person's request, then what its
 * policy asks (a remediation, a refresh). A `reboot-requested` time still to come asks for a reboot not
 * before then (a request written ahead, like `at`): until then the node needs nothing because of it.
 */
export function needsReboot(n: NodeView, t: number): string | undefined {
  if (n.rebootNeeded) {
    const why = n.rebootNeededReason;
    if (!why) return 'reboot needed';
    return `reboot needed: ${why.length > NEED_REASON_MAX ? `${why.slice(0, NEED_REASON_MAX)}…` : why}`;
  }
  if (n.rebootRequested && n.rebootRequested.getTime() <= t)
    return `reboot requested at ${n.rebootRequested.toISOString()}`;
  return n.policyAsks?.need?.reason;
}

/**
 * The node's next attempt is a remediation: its policy's condition is all it needs a reboot for (an
 * agent's need, a request or a Plan would reboot it anyway, and take no remediation of the pool's).
 */
export function remediationOnly(n: NodeView, t: number): boolean {
  return (
    n.policyAsks?.need?.kind === 'remediation' &&
    !n.rebootNeeded &&
    !(n.rebootRequested && n.rebootRequested.getTime() <= t) &&
    n.work === undefined
  );
}

/**
 * The Plan the node's next attempt applies: the Plan it needs, unless a reboot it needs goes first (a Plan
 * that reboots the node serves both in one attempt).
 */
export function nextPlan(n: NodeView, t: number): PlanWork | undefined {
  const w = n.work;
  if (!w) return undefined;
  return w.reboot || needsReboot(n, t) === undefined ? w : undefined;
}

/** Why the node needs an attempt at `t` (a reboot, or a Plan to apply), or undefined. */
export function needsWork(n: NodeView, t: number): string | undefined {
  const plan = nextPlan(n, t);
  if (plan) return `Plan ${plan.ref} to apply (version ${plan.version})`;
  return needsReboot(n, t);
}

/** The reason of a node whose reboot was requested for a time still to come. */
export const REQUESTED_LATER = 'reboot requested for ';

/** Idle (or never touched) or Pending: phases that hold no slot. */
export function outsideAttempt(n: NodeView): boolean {
  return n.state === undefined || n.state === Phase.idle || n.state === Phase.pending;
}

/**
 * Disrupted = holds a slot, or is NotReady, or is cordoned, or runs a Plan's Job, or an autoscaler is
 * removing it. A node nuo cordoned, or
 * left in a phase of an attempt, or running a Job, without a slot behind it (freed by hand, or any slip)
 * counts too: fail closed.
 */
export function unavailableWithoutSlot(n: NodeView): boolean {
  return (
    !n.ready ||
    n.unschedulable ||
    n.cordonedByNuo ||
    !outsideAttempt(n) ||
    n.planJob === true ||
    n.removedBy !== undefined
  );
}

export const MALFORMED = 'ignored malformed annotations: ';

/**
 * The reason to record for a node outside an attempt, naming its malformed annotations (safety rule 8).
 * The problems are part of the one reason decide() writes: two writers of state-reason overwrite each
 * other on every pass, a write storm for as long as the annotation stays malformed.
 */
export function withProblems(n: NodeView, reason: string): string {
  if (n.problems.length === 0) return reason;
  const problems = `${MALFORMED}${n.problems.join('; ')}`;
  return reason ? `${reason}; ${problems}` : problems;
}
