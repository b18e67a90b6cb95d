/**
 * A slot of the ledger (read/ledger.ts holds them): a node's attempt that counts against its pool's
 * budget. A leaf, so that the ledger and the rollout's waves, which the ledger records, both name it.
 */
import type { ForeignProtocol } from '../../api/keys.ts';
import type { AttemptReason } from '../../api/update-policy.ts';
import type { PlanSlot } from './plan-work.ts';

/** The budget a slot counts in: a pool's name; absent for the default pool (''). */
export type InPool = { pool?: string };

export interface Slot extends InPool {
  /** When the node was admitted (RFC 3339). */
  since: string;
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
}
