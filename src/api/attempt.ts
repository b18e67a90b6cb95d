/**
 * What names an attempt in the slot ledger, and the identity the node, the grant and a Plan's Job carry:
 * the number the ledger handed out with the slot (or the promise), or, in a slot an older operator wrote,
 * its time. Shared by the operator and the agent, which checks a grant's attempt against the ledger.
 */

export interface AttemptNamed {
  /** When the slot was taken or promised (RFC 3339), on the admitting leader's clock: for people. */
  since: string;
  /** The attempt's number, handed out by the ledger write that took the slot or promised it. */
  attempt?: number;
}

/** The attempt's identity: compared for equality only, never ordered. */
export const attemptId = (e: AttemptNamed): string => (e.attempt === undefined ? e.since : String(e.attempt));
