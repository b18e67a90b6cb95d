import type { Action } from './action.ts';
import { admit, outsideSlots } from './admission.ts';
import { budgetSlots } from './budget.ts';
import type { DecideConfig, Snapshot } from './decide-input.ts';
import { revokeForeignGrants } from './foreign-grants.ts';
import { firstWait, type PassState, REDO_GATES } from './gates.ts';
import type { NodeView } from './node-view.ts';
import { stepHolder } from './phase-steps.ts';
import { promiseEnding, releaseStale, settlePromises, unavailable, withdrawUnstarted } from './slots.ts';
import { pendingTaints } from './taints.ts';
import type { SlotCap } from './waves.ts';
import { ZoneBudget } from './zones.ts';

export interface Decision {
  actions: Action[];
  budget: {
    slots: number;
    used: number;
    eligible: number;
    holders: string[];
    unavailable: string[];
    /** Admissions in flight in this process, counted against the budget (Snapshot.admitting). */
    admitting: string[];
  };
  /** The earliest time a time-based condition (soak, timeout, backoff, spacing) changes a decision. */
  wakeAt?: number;
}

/** The cap with the fewest slots: the budget's, unless another is tighter. */
function tightest(budget: SlotCap, others: readonly SlotCap[]): SlotCap {
  return others.reduce((min, c) => (c.slots < min.slots ? c : min), budget);
}

/** The earliest future moment a step asked to look again at. */
function wakeUp(t: number) {
  let earliest = Number.POSITIVE_INFINITY;
  return {
    at: (at: number) => {
      if (at > t && at < earliest) earliest = at;
    },
    earliest: () => (Number.isFinite(earliest) ? earliest : undefined),
  };
}

/**
 * The slots another coordinator's holders take, as a waiting node's reason names them ("node-2 held by
 * kured's lock"): at most three, then how many more; undefined when none. Nuo's own attempts are not
 * named: they change with every admission, and each change would rewrite every waiting node's reason.
 */
export function takenElsewhere(
  disrupted: readonly string[],
  elsewhere: ReadonlyMap<string, string> | undefined,
): string | undefined {
  const named = disrupted.flatMap((n) => {
    const by = elsewhere?.get(n);
    return by === undefined ? [] : [`${n} ${by}`];
  });
  if (named.length === 0) return undefined;
  const more = named.length > 3 ? ` and ${named.length - 3} more` : '';
  return `${named.slice(0, 3).join(', ')}${more}`;
}

export function decide(snapshot: Snapshot, c: DecideConfig, now: Date): Decision {
  const t = now.getTime();
  const wake = wakeUp(t);
  const byName = new Map(snapshot.nodes.map((n) => [n.name, n]));
  // Every node of the snapshot is the pool's: which nodes a budget covers is the pool plan's business.
  const eligible = snapshot.nodes;
  const actions: Action[] = revokeForeignGrants(snapshot.nodes, snapshot.ownGrant);
  const stale = releaseStale(snapshot.ledger, byName, t, c.plans, wake.at, snapshot.admitting);
  const holders = stale.holders;
  const inFlight = new Set([...snapshot.admitting].filter((name) => !holders.has(name) && byName.has(name)));
  const promises = settlePromises(snapshot.ledger, byName, holders, inFlight, c, t);
  actions.push(...stale.actions, ...promises.actions);
  const cap = tightest(
    { slots: budgetSlots(c.maxUnavailable, eligible.length), name: 'maxUnavailable' },
    c.slotCaps ?? [],
  );
  const slots = cap.slots;
  const disrupted = unavailable(eligible, holders, inFlight, c.disruptedElsewhere);
  const excess = holders.size + disrupted.length + promises.reserved + inFlight.size - slots;
  const pass: PassState = { lastGrant: Number.NEGATIVE_INFINITY, admitted: 0, remediated: 0 };
  const gates = (node: NodeView) => firstWait(REDO_GATES, { node, config: c, now: t, pass });
  actions.push(
    ...withdrawUnstarted(
      snapshot.ledger,
      byName,
      holders,
      snapshot.admitting,
      { excess, gates, ...(c.hold ? { hold: c.hold } : {}) },
      stale.delayed,
    ),
  );

  const step = {
    config: c,
    now,
    draining: snapshot.draining,
    health: snapshot.health,
    wake: wake.at,
    slotOf: (name: string) => snapshot.ledger.slots[name],
  };
  for (const name of holders)
    if (!stale.delayed.has(name)) actions.push(...stepHolder(byName.get(name) as NodeView, step));

  const inAttempt = (name: string) => holders.has(name) || inFlight.has(name);
  const outside = outsideSlots(eligible, inAttempt, promises.promised, t, wake.at);
  actions.push(...outside.actions);
  const zones =
    c.zones &&
    new ZoneBudget(
      c.zones,
      eligible,
      new Set([...holders, ...disrupted, ...inFlight]),
      new Set([...holders, ...inFlight]),
    );
  const admission = admit({
    waiting: outside.waiting,
    ...(zones ? { zones } : {}),
    successors: promises.successors,
    slots,
    slotsBy: cap.name === 'maxUnavailable' ? `maxUnavailable ${slots}` : cap.name,
    takenElsewhere: takenElsewhere(disrupted, c.disruptedElsewhere),
    used: holders.size + disrupted.length + promises.reserved + inFlight.size,
    lastGrant: snapshot.ledger.lastGrant ? Date.parse(snapshot.ledger.lastGrant) : Number.NEGATIVE_INFINITY,
    config: c,
    t,
    wake: wake.at,
  });
  actions.push(...admission.actions);
  actions.push(...promiseEnding(holders, byName, promises.promised, admission.nextInLine, c));
  actions.push(...pendingTaints(actions, snapshot.nodes, inAttempt, c, t));

  return {
    actions,
    budget: {
      slots,
      used: admission.used,
      eligible: eligible.length,
      holders: [...holders],
      unavailable: disrupted,
      admitting: [...inFlight],
    },
    wakeAt: wake.earliest(),
  };
}
