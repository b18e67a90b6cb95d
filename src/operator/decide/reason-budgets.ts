/**
 * spec.budgets, Karpenter-style: a budget limits the admissions for its reasons (a reboot, a Plan, a
 * remediation, a refresh) while its windows are open, counting every disrupted node of the pool as
 * maxUnavailable does; the tightest budget that applies to a node's next attempt, and maxUnavailable,
 * hold it. Pure.
 */
import type { AttemptReason } from '../../api/update-policy.ts';
import { type CalendarClock, REAL_CLOCK, windowStateOn } from '../../policy/calendar-clock.ts';
import type { ResolvedBudget } from '../../policy/resolve.ts';
import { budgetSlots } from './budget.ts';
import { nextPlan } from './need.ts';
import type { NodeView } from './node-view.ts';
import type { SlotCap } from './waves.ts';

/** A budget of spec.budgets that applies now, sized for the pool. */
export interface ActiveBudget {
  name: string;
  slots: number;
  /** The reasons it limits; absent: every reason. */
  reasons?: ReadonlySet<AttemptReason>;
}

/** Why the node's next attempt disrupts it: its Plan, its own need or a request, or its policy's ask. */
export function attemptReason(n: NodeView, t: number): AttemptReason {
  if (nextPlan(n, t)) return 'Plan';
  const own = n.rebootNeeded || (n.rebootRequested !== undefined && n.rebootRequested.getTime() <= t);
  if (own) return 'Reboot';
  if (n.policyAsks?.need?.kind === 'remediation') return 'Remediation';
  if (n.policyAsks?.need?.kind === 'refresh') return 'Refresh';
  return 'Reboot';
}

/** The budgets whose windows are open at `now` (read on `clock`), sized for a pool of `poolSize`, and when that changes. */
export function activeBudgets(
  budgets: readonly ResolvedBudget[],
  poolSize: number,
  now: Date,
  clock: CalendarClock = REAL_CLOCK,
): { active: ActiveBudget[]; changesAt?: number } {
  let changesAt = Number.POSITIVE_INFINITY;
  const active: ActiveBudget[] = [];
  for (const b of budgets) {
    const state = windowStateOn(clock, b.windows, now);
    if (state.changesAt) changesAt = Math.min(changesAt, state.changesAt.getTime());
    if (!state.open) continue;
    active.push({
      name: b.name,
      slots: budgetSlots(b.nodes, poolSize),
      ...(b.reasons ? { reasons: b.reasons } : {}),
    });
  }
  return { active, ...(Number.isFinite(changesAt) ? { changesAt } : {}) };
}

/** The slots the node's next attempt may use: the pool's cap, or a tighter budget for its reason. */
export function reasonLimit(
  n: NodeView,
  t: number,
  budgets: readonly ActiveBudget[] | undefined,
  pool: SlotCap,
): SlotCap {
  if (!budgets?.length) return pool;
  const reason = attemptReason(n, t);
  return budgets
    .filter((b) => !b.reasons || b.reasons.has(reason))
    .reduce<SlotCap>(
      (min, b) =>
        b.slots < min.slots ? { slots: b.slots, name: `budget ${b.name}: ${b.slots} for ${reason}` } : min,
      pool,
    );
}
