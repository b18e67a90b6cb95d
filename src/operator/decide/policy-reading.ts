/**
 * What a pool's policy asks of a node on its own: policy-need.ts reads it, a node's view carries it. A
 * leaf, so that the view does not import the reading's rules, which read the view.
 */
export const PolicyNeedKind = { remediation: 'remediation', refresh: 'refresh' } as const;
export type PolicyNeedKind = (typeof PolicyNeedKind)[keyof typeof PolicyNeedKind];

export interface PolicyNeed {
  kind: PolicyNeedKind;
  /** Why, for the node's reason and Events; stable while the need holds (no running clock in it). */
  reason: string;
}

/** What a policy asks of a node at one moment. */
export interface PolicyReading {
  need?: PolicyNeed;
  /** When a need not due yet comes due (a condition held not long enough, a boot not old enough). */
  dueAt?: number;
  /**
   * A remediation condition holds its status now, for however long: a remediation reboot that leaves
   * it so did not help (it counts towards a reboot loop).
   */
  faulty?: boolean;
}
