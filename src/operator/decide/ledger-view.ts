/**
 * The slot ledger as decide() reads it: who holds a slot, who is promised one, when each pool last
 * admitted a node and where its rollout stands. read/ledger.ts keeps it in its ConfigMap; a leaf here,
 * so that the decisions read it without loading what reads and writes the ConfigMap.
 */
import type { AttemptNamed } from '../../api/attempt.ts';
import type { InPool, Slot } from './slot.ts';
import type { RolloutRecord } from './waves.ts';

/** A remediation the pool admitted: its node and when (RFC 3339). */
export interface RemediationRecord {
  node: string;
  at: string;
}

/** A node promised the slot of a holder whose attempt is about to end (see Ledger.next). */
/**
 * A promise names the attempt the node starts when it takes the slot (`attempt`, handed out with the
 * promise), so a handover's node write can name it with no ledger write in between.
 */
export interface Succession extends InPool, AttemptNamed {
  /** The slot holder whose slot this node takes. */
  after: string;
}

export interface Ledger {
  slots: Record<string, Slot>;
  /** The last attempt number handed out (every pool's): the next admission or promise takes one more. */
  attempts?: number;
  /**
   * Successors: node → the holder whose slot it takes once that holder's attempt has ended. Promised while
   * the holder soaks, so that the write that ends the holder's attempt can be followed at once by the
   * successor's admission, with no pass and no ledger write between the two (the grant-latency path).
   * A promised node holds no slot and counts against no budget until its predecessor's attempt has
   * ended; a slot promised to a node is never given to another in the same pass.
   */
  next?: Record<string, Succession>;
  /** When the default pool last admitted a node (for the minimum spacing between grants). */
  lastGrant?: string;
  /** When each named pool last admitted a node. */
  poolGrants?: Record<string, string>;
  /** The default pool's rollout in waves (waves.ts). */
  rollout?: RolloutRecord;
  /** Each named pool's rollout in progress, for a policy with spec.rollout. */
  rollouts?: Record<string, RolloutRecord>;
  /**
   * Each named pool's remediation admissions within the last hour, for its rate limit: kept here as well
   * as on the node, since a node deleted and registered again comes back without its annotations.
   */
  remediations?: Record<string, RemediationRecord[]>;
}
