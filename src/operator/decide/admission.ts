/**
 * decide()'s steps for nodes outside an attempt: what each one records while it needs nothing, and the
 * admission of those that need a reboot or a Plan — the longest-waiting first, while the budget has room
 * and no gate holds them back (a Plan's prepare run and succeeded first); the others wait in Pending,
 * with the reason.
 */
import { Phase } from '../../api/phases.ts';
import type { Action } from './action.ts';
import type { DecideConfig } from './decide-input.ts';
import { firstWait, NODE_GATES, PASS_GATES, type PassState } from './gates.ts';
import {
  MALFORMED,
  ms,
  needsWork,
  nextPlan,
  outsideAttempt,
  REQUESTED_LATER,
  remediationOnly,
  unavailableWithoutSlot,
  withProblems,
} from './need.ts';
import type { NodeView } from './node-view.ts';
import { ownNodeLast } from './own-node.ts';
import { prepareWait } from './plan-prepare.ts';
import { planSlot } from './plan-work.ts';
import { attemptReason, reasonLimit } from './reason-budgets.ts';
import { byNodeName } from './slots.ts';
import type { Wait } from './wait.ts';
import type { ZoneBudget } from './zones.ts';

/** A node that needs nothing: back to Idle, and its reason kept true (a request for later, problems). */
function idleStep(n: NodeView, wake: (at: number) => void): Action[] {
  if (n.rebootRequested) wake(n.rebootRequested.getTime());
  if (n.policyAsks?.dueAt !== undefined) wake(n.policyAsks.dueAt);
  if ((n.state !== undefined && n.state !== Phase.idle) || n.ownKeysMalformed) {
    // Out of an attempt, or nuo's own keys overwritten with nonsense: written Idle afresh, the reason
    // naming what was found.
    return [
      { type: 'transition', node: n.name, to: Phase.idle, reason: withProblems(n, 'no reboot needed') },
    ];
  }
  const later = n.rebootRequested?.toISOString();
  const reason = withProblems(n, later ? `${REQUESTED_LATER}${later}: not before then` : '');
  const stale = n.stateReason?.startsWith(MALFORMED) || n.stateReason?.startsWith(REQUESTED_LATER);
  if (reason ? n.stateReason === reason : !stale) return [];
  return [{ type: 'explain', node: n.name, reason: reason || 'no reboot needed' }];
}

export interface AdmissionInput {
  /** Eligible nodes outside an attempt that need a reboot and are not promised a slot still held. */
  waiting: NodeView[];
  /** Promised nodes whose predecessor's attempt has ended: first in line. */
  successors: ReadonlySet<string>;
  /** The pool's per-zone budget, if it has one. */
  zones?: ZoneBudget;
  slots: number;
  /** What limits the slots, as a waiting node's reason names it ("maxUnavailable 2", "wave 1 of 1 node(s)"). */
  slotsBy?: string;
  /** The slots another coordinator's holders take, named (decide.ts takenElsewhere). */
  takenElsewhere?: string | undefined;
  used: number;
  lastGrant: number;
  config: DecideConfig;
  t: number;
  wake: (at: number) => void;
}

export interface Admission {
  actions: Action[];
  used: number;
  /** Pending nodes that wait for nothing but a slot, in admission order (candidates for a promise). */
  nextInLine: NodeView[];
}

/**
 * Successors first; with `podsOf` (the first wave, decide.ts firstWavePods), nodes whose pods are not read
 * yet (their read holds the line, so nobody is chosen before every count is known), then the fewest pods
 * to evict; then Pending nodes by how long they wait, then newly needing nodes by name.
 */
export function admissionOrder(
  waiting: NodeView[],
  successors: ReadonlySet<string>,
  podsOf?: (node: string) => number | undefined,
): NodeView[] {
  const pods = (n: NodeView) => podsOf?.(n.name) ?? -1;
  return [...waiting].sort((a, b) => {
    const as = successors.has(a.name);
    if (as !== successors.has(b.name)) return as ? -1 : 1;
    if (podsOf && pods(a) !== pods(b)) return pods(a) < pods(b) ? -1 : 1;
    const ap = a.state === Phase.pending;
    if (ap !== (b.state === Phase.pending)) return ap ? -1 : 1;
    return ap ? ms(a.stateSince) - ms(b.stateSince) || byNodeName(a, b) : byNodeName(a, b);
  });
}

/**
 * Admits waiting nodes in order while slots remain (Idle ones at once: a free slot is not left idle for a
 * pass that only writes Pending); each other one waits in Pending with the first reason that holds it.
 */
export function admit(input: AdmissionInput): Admission {
  const { config: c, t, wake } = input;
  if (c.reasonBudgetsChangeAt !== undefined) wake(c.reasonBudgetsChangeAt);
  const actions: Action[] = [];
  const nextInLine: NodeView[] = [];
  const pass: PassState = { lastGrant: input.lastGrant, admitted: 0, remediated: 0 };
  let used = input.used;
  const ordered = admissionOrder(input.waiting, input.successors, c.firstWavePods);
  // The operator's own node goes last, after any zone order: its drain hands the leadership over.
  for (const n of ownNodeLast(input.zones?.order(ordered) ?? ordered, c.ownNode)) {
    const gate = { node: n, config: c, now: t, pass };
    const plan = nextPlan(n, t);
    let wait: Wait | undefined = firstWait(NODE_GATES, gate);
    // The Plan's prepare runs before the budget is asked (it disrupts nothing): one Job write at a time,
    // after the node says it waits.
    const prepare =
      wait || !plan ? undefined : prepareWait(n, plan, c.plans?.jobs(n.name) ?? [], c.retryBackoffMs, t);
    if (plan && prepare?.action?.type === 'prepareJob') c.plans?.take(plan, n.name);
    if (prepare?.action && n.state === Phase.pending) {
      actions.push(prepare.action);
      continue;
    }
    wait ??= prepare?.wait;
    // A node unavailable already (cordoned by someone else, NotReady) is counted in `used`: its admission
    // takes no new slot, so it fits while the budget is not exceeded.
    const takesSlot = !unavailableWithoutSlot(n);
    const pool = { slots: input.slots, name: input.slotsBy ?? `maxUnavailable ${input.slots}` };
    const limit = reasonLimit(n, t, c.reasonBudgets, pool);
    if (!wait && (takesSlot ? used + 1 : used) > limit.slots) {
      const taken = input.takenElsewhere === undefined ? '' : `; ${input.takenElsewhere}`;
      wait = { reason: `waiting for a free slot (${limit.name}${taken})` };
      // A Plan's attempt is never promised a slot: a handover's admission records no Plan in the ledger.
      // Nor is one its reason's budget holds: a slot the pool frees may still be over that budget.
      const promisable = limit === pool && !input.successors.has(n.name) && !nextPlan(n, t);
      if (n.state === Phase.pending && promisable) nextInLine.push(n);
    }
    wait ??= input.zones?.wait(n, takesSlot);
    wait ??= firstWait(PASS_GATES, gate);
    if (wait?.holdsLine) {
      // Its pods are being read: nobody behind it goes first. The rest keep their reasons this pass.
      if (wait.until !== undefined) wake(wait.until);
      if (n.state !== Phase.pending)
        actions.push({ type: 'pending', node: n.name, reason: withProblems(n, wait.reason) });
      break;
    }
    if (wait) {
      if (wait.until !== undefined) wake(wait.until);
      if (input.successors.has(n.name))
        actions.push({ type: 'unpromise', node: n.name, reason: wait.reason });
      const reason = withProblems(n, wait.reason);
      if (n.state !== Phase.pending) actions.push({ type: 'pending', node: n.name, reason });
      else if (n.stateReason !== reason) actions.push({ type: 'explain', node: n.name, reason });
      continue;
    }
    const remediation = remediationOnly(n, t);
    actions.push({
      type: 'admit',
      node: n.name,
      reason: needsWork(n, t) ?? 'admitted',
      for: attemptReason(n, t),
      ...(plan ? { plan: planSlot(plan) } : {}),
      ...(n.protocol ? { protocol: n.protocol } : {}),
      ...(remediation ? { remediation } : {}),
    });
    if (remediation) pass.remediated++;
    if (plan) c.plans?.take(plan, n.name);
    // A node cordoned by someone else already counts as unavailable; admitting it uses no new slot.
    if (takesSlot) used++;
    input.zones?.take(n, takesSlot);
    pass.admitted++;
  }
  return { actions, used, nextInLine };
}

/**
 * Sorts the eligible nodes outside a slot: those that need nothing get their idle step, those left in a
 * phase of an attempt without a slot start over in Pending, and the rest wait for admission (but those
 * promised a slot still held, which wait off the list).
 */
export function outsideSlots(
  eligible: readonly NodeView[],
  skip: (name: string) => boolean,
  promised: ReadonlyMap<string, string>,
  t: number,
  wake: (at: number) => void,
): { actions: Action[]; waiting: NodeView[] } {
  const actions: Action[] = [];
  const waiting: NodeView[] = [];
  for (const n of eligible) {
    if (skip(n.name)) continue;
    const need = needsWork(n, t);
    // A phase of an attempt without a slot behind it (its slot freed by hand, an admission withdrawn as
    // its node write landed): the attempt ends, nuo's cordon undone; a need left waits in Pending.
    if (!outsideAttempt(n)) {
      const reason = withProblems(n, `${need ?? 'no reboot needed'}; its attempt ended: it holds no slot`);
      actions.push({ type: 'end', node: n.name, reason, to: need ? Phase.pending : Phase.idle });
    } else if (!need) actions.push(...idleStep(n, wake));
    else if (!promised.has(n.name)) waiting.push(n);
  }
  return { actions, waiting };
}
