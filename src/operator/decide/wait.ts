/**
 * Why a node, or a pool, waits: the reason every gate, hold and blocker gives. A leaf, so that the
 * gates, the types decide() reads and the modules that name a hold do not import each other.
 */
export interface Wait {
  /** Why the node waits, for its state-reason. */
  reason: string;
  /**
   * What was read, for the policy's status and `nuo policy explain`; never in a node's reason, so a
   * reading that changes every round does not rewrite every waiting node.
   */
  detail?: string;
  /** When this may change (ms since the epoch); absent when only an event can change it. */
  until?: number;
  /**
   * The node waits for something about to be known (its pods being read): nodes after it in the
   * admission order wait this pass too, so none is admitted ahead of it because its read landed first.
   */
  holdsLine?: true;
}
