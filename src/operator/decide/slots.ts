/**
 * decide()'s steps on the slot ledger: which entries have nothing behind them, what becomes of promised
 * successors, how much of the budget is used, and which waiting nodes are promised a slot about to be
 * freed. The ledger is the authority on who holds a slot; these steps read it and the cached nodes and
 * never guess.
 */
import { attemptId } from '../../api/attempt.ts';
import { Phase } from '../../api/phases.ts';
import type { Action } from './action.ts';
import type { DecideConfig } from './decide-input.ts';
import { firstWait, NODE_GATES, type PassState } from './gates.ts';
import type { Ledger } from './ledger-view.ts';
import { ms, needsWork, outsideAttempt, unavailableWithoutSlot } from './need.ts';
import type { NodeView } from './node-view.ts';
import { type PlanPass, planDoneLabel } from './plan-work.ts';
import { attemptReason } from './reason-budgets.ts';
import type { Slot } from './slot.ts';
import type { Wait } from './wait.ts';

/** Actions of these steps that change only the ledger. */
type LedgerAction = Extract<Action, { type: 'release' | 'unpromise' | 'claim' | 'promise' }>;

/**
 * Whether the slot's attempt has ended, for a node outside an attempt: its end was recorded in the ledger
 * (the node may since have been deleted and registered again without its annotations), or the node names
 * the attempt (its admission's write landed, and it is out of it again). A slot an older operator wrote
 * (no number) whose node names no attempt is taken as ended too: freeing an admission that never
 * started only sends the node back through every gate, where redoing an attempt that ended would skip
 * them. Decided from identities alone, never from times two leaders wrote.
 */
export function attemptEnded(slot: Slot, n: NodeView): boolean {
  if (slot.ended !== undefined || n.attempt === attemptId(slot)) return true;
  return slot.attempt === undefined && n.attempt === undefined;
}

/**
 * Ledger entries with nothing behind them: the node is gone, or its attempt ended (a crash between
 * "node Idle" and "release"), or an admission not written yet that no longer stands (the node needs
 * nothing now, or needs it for another reason than the one its budgets allowed). Returns the holders
 * left and the releases. A Plan's attempt that completed keeps its slot for the Plan's
 * postCompleteDelay (`delayed`: held, nothing to step). `admitting`: admissions whose node write is in
 * flight, kept.
 */
export function releaseStale(
  ledger: Ledger,
  byName: ReadonlyMap<string, NodeView>,
  t: number,
  plans?: PlanPass,
  wake?: (at: number) => void,
  admitting: ReadonlySet<string> = new Set(),
): { holders: Set<string>; actions: LedgerAction[]; delayed: Set<string> } {
  const holders = new Set(Object.keys(ledger.slots));
  const delayed = new Set<string>();
  const actions: LedgerAction[] = [];
  const release = (node: string, reason: string) => {
    actions.push({ type: 'release', node, reason });
    holders.delete(node);
  };
  for (const [name, slot] of Object.entries(ledger.slots)) {
    const n = byName.get(name);
    if (!n) release(name, 'node no longer exists');
    // A phase overwritten with nonsense tells nothing of the attempt: the slot stays, the phase is
    // restored from the node's other keys (phase-steps.ts).
    else if (n.stateMalformed || !outsideAttempt(n)) continue;
    // Ended: freed. Else the admission's node write is still to come — kept, and redone, while the node
    // still needs a reboot.
    else if (attemptEnded(slot, n)) {
      const until = postCompleteUntil(slot, n, plans);
      if (t < until) {
        delayed.add(name);
        wake?.(until);
      } else release(name, `node is ${n.state ?? Phase.idle} after its attempt`);
    } else if (!needsWork(n, t)) release(name, 'admitted, but no longer needs a reboot or a Plan');
    else if (!admitting.has(name) && slot.reason && slot.reason !== attemptReason(n, t))
      release(
        name,
        `admitted for ${slot.reason}, but needs a ${attemptReason(n, t)} now: admitted again under its budgets`,
      );
  }
  return { holders, actions, delayed };
}

/**
 * Until when a slot is kept after its attempt ended: a Plan's completed attempt (the node labelled with
 * the hash it applied) keeps it for the Plan's postCompleteDelay, counted from the end of the attempt as
 * this leader saw it (the view's stateSince).
 */
function postCompleteUntil(slot: Ledger['slots'][string], n: NodeView, plans: PlanPass | undefined): number {
  if (!slot.plan || n.labels[planDoneLabel(slot.plan.ref)] !== slot.plan.hash) return 0;
  const delay = plans?.completion(slot.plan.ref)?.postCompleteDelayMs ?? 0;
  return delay > 0 ? ms(n.stateSince) + delay : 0;
}

/**
 * Admissions whose node write has not happened yet (a leader died between the ledger write and the node
 * write, or the node was deleted and registered again), while they may no longer start:
 * - the pool admits nothing now (`hold`: a failing health check, Halted, a closed window, a blocker):
 *   every one is withdrawn, rather than start disrupting a node under a gate that holds the others;
 * - a gate of the node itself holds it now (`gates`: paused, skipped, an autoscaler removing it, a
 *   backoff, a reboot loop, its pods, ...): withdrawn, the reason naming the gate, rather than redo an
 *   admission the node's own gates no longer allow;
 * - else the budget is exceeded (`excess`), by a node an admin cordoned or one that went NotReady in
 *   between: the most recent first, as many as the excess. A holder unavailable already is not withdrawn
 *   then (it would count just the same).
 * The node waits in Pending, and is admitted again once the gates and the budget let it.
 */
export function withdrawUnstarted(
  ledger: Ledger,
  byName: ReadonlyMap<string, NodeView>,
  holders: Set<string>,
  admitting: ReadonlySet<string>,
  limit: { excess: number; hold?: Wait; gates?: (n: NodeView) => Wait | undefined },
  ended: ReadonlySet<string> = new Set(),
): LedgerAction[] {
  const { excess, hold, gates } = limit;
  // An admission whose node write is in flight here has started: its write may land at any moment. A
  // slot kept after its attempt ended (a Plan's postCompleteDelay) is no admission.
  const unstarted = [...holders]
    .filter((name) => !admitting.has(name) && !ended.has(name))
    .map((name) => ({ name, n: byName.get(name), attempt: ledger.slots[name]?.attempt ?? -1 }))
    .filter(
      (u): u is { name: string; n: NodeView; attempt: number } =>
        u.n !== undefined && outsideAttempt(u.n) && !u.n.stateMalformed,
    );
  const actions: LedgerAction[] = [];
  const withdraw = (name: string, why: string) => {
    holders.delete(name);
    actions.push({ type: 'release', node: name, reason: `admission withdrawn before it started: ${why}` });
  };
  const plain = (w: Wait) => w.reason.replace(/^waiting: /, '');
  if (hold) {
    for (const { name } of unstarted) withdraw(name, `the pool admits nothing now (${plain(hold)})`);
    return actions;
  }
  const left = unstarted.filter(({ name, n }) => {
    const wait = gates?.(n);
    if (wait) withdraw(name, `a gate of the node holds it now (${plain(wait)})`);
    return !wait;
  });
  // The most recent admission first: the ledger numbers them in the order it took them.
  const over = left
    .filter(({ n }) => !unavailableWithoutSlot(n))
    .sort((a, b) => b.attempt - a.attempt || (a.name < b.name ? 1 : -1))
    .slice(0, Math.max(0, excess));
  for (const { name } of over)
    withdraw(name, 'the budget is exceeded since (a node cordoned or NotReady meanwhile)');
  return actions;
}

export interface Promises {
  actions: LedgerAction[];
  /** Promised nodes whose predecessor still holds its slot: off the waiting list. */
  promised: Map<string, string>;
  /** Promised nodes whose predecessor's attempt has ended: admitted before any other. */
  successors: Set<string>;
  /** Slots freed this pass whose promise was withdrawn: given to nobody this pass. */
  reserved: number;
}

/**
 * Successors (Ledger.next). One already in an attempt (handed its slot at once) holds a slot, whatever
 * the ledger says of its predecessor: it claims it (added to `holders`). One whose predecessor is still in
 * its attempt waits, promised, while it could still start; one whose predecessor's attempt has ended is
 * admitted first. A withdrawn promise keeps its freed slot from anyone else this pass: the operator may
 * be handing it to the promised node at this very moment, on the ledger as last written. A promised node
 * whose admission is in flight here is left as it is.
 */
export function settlePromises(
  ledger: Ledger,
  byName: ReadonlyMap<string, NodeView>,
  holders: Set<string>,
  inFlight: ReadonlySet<string>,
  c: DecideConfig,
  t: number,
): Promises {
  const out: Promises = { actions: [], promised: new Map(), successors: new Set(), reserved: 0 };
  const pass: PassState = { lastGrant: Number.NEGATIVE_INFINITY, admitted: 0, remediated: 0 };
  for (const [name, s] of Object.entries(ledger.next ?? {})) {
    const n = byName.get(name);
    if (holders.has(name)) {
      out.actions.push({ type: 'unpromise', node: name, reason: 'holds a slot already' });
      continue;
    }
    if (inFlight.has(name)) continue;
    if (n && !outsideAttempt(n)) {
      out.actions.push({
        type: 'claim',
        node: name,
        since: s.since,
        ...(s.attempt === undefined ? {} : { attempt: s.attempt }),
        ...(n.protocol ? { protocol: n.protocol } : {}),
      });
      holders.add(name);
      continue;
    }
    const why = !n
      ? 'node no longer exists'
      : !needsWork(n, t)
        ? 'no longer needs a reboot or a Plan here'
        : (firstWait(NODE_GATES, { node: n, config: c, now: t, pass })?.reason ??
          (c.minGrantSpacingMs > 0 ? 'grants are spaced' : undefined));
    if (why) {
      out.actions.push({ type: 'unpromise', node: name, reason: why });
      if (!holders.has(s.after)) out.reserved++;
    } else if (holders.has(s.after)) out.promised.set(name, s.after);
    else out.successors.add(name);
  }
  return out;
}

/**
 * Nodes disrupted without a slot behind them: NotReady, cordoned, in a phase of an attempt, or held by
 * another coordinator (`elsewhere`: kured's lock names them).
 */
export function unavailable(
  eligible: readonly NodeView[],
  holders: ReadonlySet<string>,
  inFlight: ReadonlySet<string>,
  elsewhere: ReadonlyMap<string, unknown> = new Map(),
): string[] {
  return eligible
    .filter(
      (n) =>
        !holders.has(n.name) && !inFlight.has(n.name) && (unavailableWithoutSlot(n) || elsewhere.has(n.name)),
    )
    .map((n) => n.name);
}

export const byNodeName = (a: NodeView, b: NodeView) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/**
 * Promises: holders soaking after their reboot (their attempt ends within the soak) each get the next
 * node in line that waits for nothing but a slot, the soonest to end first. Not while grants are spaced.
 */
export function promiseEnding(
  holders: Iterable<string>,
  byName: ReadonlyMap<string, NodeView>,
  promised: ReadonlyMap<string, string>,
  nextInLine: readonly NodeView[],
  c: DecideConfig,
): LedgerAction[] {
  if (c.minGrantSpacingMs > 0 || nextInLine.length === 0) return [];
  const taken = new Set(promised.values());
  const ending = [...holders]
    .map((name) => byName.get(name) as NodeView)
    .filter((n) => n.state === Phase.afterReboot && n.ready && !n.paused && !taken.has(n.name))
    .sort((a, b) => ms(a.readySince) - ms(b.readySince) || byNodeName(a, b));
  return ending
    .slice(0, nextInLine.length)
    .map((holder, i) => ({ type: 'promise', node: (nextInLine[i] as NodeView).name, after: holder.name }));
}
