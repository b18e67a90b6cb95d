/**
 * A slot of the ledger (read/ledger.ts holds them): a node's attempt that counts against its pool's
 * budget. A leaf, so that the ledger and the rollout's waves, which the ledger records, both name it.
 */
import type { AttemptNamed } from '../../api/attempt.ts';
import type { ForeignProtocol } from '../../api/keys.ts';
import type { AttemptReason } from '../../api/update-policy.ts';
import type { PlanSlot } from './plan-work.ts';

/** The budget a slot counts in: a pool's name; absent for the default pool (''). */
export type InPool = { pool?: string };

/**
 * How an attempt ended, as the leader that decided its end recorded it in the ledger before the node
 * write that ends it: completed (healthy after its reboot or Job), failed (aborted: a drain or hooks not
 * done in time, a Failed attempt released) or ended for another reason (the need withdrawn, the phase
 * lost, a drain held by a pod). The rollout counts completions and failures from this record, never
 * from the node, which may be deleted and registered again without its annotations.
 */
export const AttemptEnd = { completed: 'completed', failed: 'failed', ended: 'ended' } as const;
export type AttemptEnd = (typeof AttemptEnd)[keyof typeof AttemptEnd];
export const ATTEMPT_ENDS: readonly AttemptEnd[] = Object.values(AttemptEnd);

export interface Slot extends InPool, AttemptNamed {
  /** The attempt applies this Plan (absent: a reboot). */
  plan?: PlanSlot;
  /**
   * The node's agent speaks this protocol of another project (CLUO's, FLUO's), as its pool said at the
   * admission: the attempt ends in it, whatever the policy says meanwhile. Absent: nuo's.
   */
  protocol?: ForeignProtocol;
  /**
   * What the node was admitted for, as the pool's budgets for reasons judged it: an admission redone
   * for another reason is no longer the one they allowed. Absent in a ledger written before it was kept.
   */
  reason?: AttemptReason;
  /** The attempt's end was decided (its node write follows, or has landed): how it ended. */
  ended?: AttemptEnd;
}
