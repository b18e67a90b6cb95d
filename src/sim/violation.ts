/** A breach of a safety rule the checker (checker.ts) and its rule modules report: a leaf, so both import it. */
export interface Violation {
  rule:
    | 'budget'
    | 'reboot-without-grant'
    | 'reboot-not-drained'
    | 'double-reboot'
    | 'admin-cordon-removed'
    | 'cordon-left'
    | 'cordon-outside-attempt'
    | 'plan-concurrency'
    | 'conditions-left'
    | 'protection-left'
    | 'health-check'
    | 'halted'
    | 'reason-budget'
    | 'remediation-rate'
    | 'gate-bypassed'
    | 'ended-before-boot'
    | 'refresh-not-counted'
    | 'pod-blocker'
    | 'circuit-breaker'
    | 'do-not-disrupt'
    | 'not-finished';
  at: Date;
  detail: string;
}
