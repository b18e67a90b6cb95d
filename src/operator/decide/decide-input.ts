/**
 * What decide() reads: a pool's settings and the cluster's snapshot. A leaf of types, so that decide()
 * and its steps both name them without importing each other.
 */

import type { MaxUnavailable } from './budget.ts';
import type { ChecksReading, Health } from './health-gate.ts';
import type { Ledger } from './ledger-view.ts';
import type { NodeView } from './node-view.ts';
import type { PlanPass } from './plan-work.ts';
import type { RemediationRate } from './policy-need.ts';
import type { ActiveBudget } from './reason-budgets.ts';
import type { Wait } from './wait.ts';
import type { SlotCap } from './waves.ts';
import type { ZonePolicy } from './zones.ts';

/** A pool's settings as decide() reads them (its UpdatePolicy's, parsed; pool-plan.ts policyConfig). */
export interface DecideConfig {
  /** Nodes of the pool disrupted at once: a count or a percentage of the pool. */
  maxUnavailable: MaxUnavailable;
  minGrantSpacingMs: number;
  drainTimeoutMs: number;
  /** From the grant until the boot ID changes. */
  rebootTimeoutMs: number;
  /** From the boot ID change until the node is Ready. */
  returnTimeoutMs: number;
  /** How long a returned node must stay Ready before its slot is freed. */
  soakMs: number;
  /** Node annotations that must read "true" before draining (CLUO before-reboot hooks). */
  beforeRebootAnnotations: string[];
  /** Node annotations that must read "true" before the slot is freed (after-reboot hooks). */
  afterRebootAnnotations: string[];
  /** Base of the exponential backoff after a failed attempt (doubles per consecutive failure). */
  retryBackoffMs: number;
  retryBackoffMaxMs: number;
  /** Reboots in a row that leave the need in place before nuo stops rebooting the node (a loop). */
  maxIneffectiveReboots: number;
  /** The operator's cluster-wide pause: nothing new is admitted. */
  paused: boolean;
  /** Taint nodes that wait for a reboot PreferNoSchedule, so evicted pods prefer nodes already done. */
  pendingTaint: boolean;
  /**
   * The most PreferNoSchedule taints other than nuo's that any node of the cluster carries (taints.ts);
   * absent: none does.
   */
  softTaintsMost?: number;
  /** A Failed node's attempt ends after this long (the policy's reboot.failedSlotTTL); absent: never. */
  failedSlotTtlMs?: number;
  /**
   * Why the pool admits nothing now, and until when (a closed window, a blocker, an invalid policy):
   * evaluated once per pass by the caller, it is the first gate after the pauses.
   */
  hold?: Wait;
  /** The pool's per-zone budget and order, when it has one. */
  zones?: ZonePolicy;
  /** Nodes a node-scoped pod blocker holds: a matching pod runs on each (pool-plan.ts nodeBlocks). */
  podBlocked?: ReadonlyMap<string, Wait>;
  /** Why a node may not be disrupted now for a reason of its own pods (do-not-disrupt.ts). */
  nodeHold?: (node: string) => Wait | undefined;
  /**
   * Set only while no node of the cluster can take evicted pods for good (taints.ts landingExists): how
   * many pods a drain of each waiting node would evict (undefined: not read yet), so that the nodes
   * holding the fewest go first and the fewest pods move twice.
   */
  firstWavePods?: (node: string) => number | undefined;
  /** The Plans as this pass sees them (every pool's the same); absent: no Plan is known. */
  plans?: PlanPass;
  /** The pool's health checks as last read: a finished node keeps its slot until they pass. */
  healthChecks?: ChecksReading;
  /**
   * Nodes of the pool another coordinator disrupts (kured's lock names them), each with who holds it, as a
   * waiting node's reason names it: they use slots.
   */
  disruptedElsewhere?: ReadonlyMap<string, string>;
  /** The node the operator's leader runs on, when known: it goes last in its pool (own-node.ts). */
  ownNode?: string;
  /** The pool's remediations within the hour and their limit, when its policy asks for remediations. */
  remediationRate?: RemediationRate;
  /** Caps on the pool's slots beside its budget (its rollout's wave): the tightest one counts. */
  slotCaps?: readonly SlotCap[];
  /** spec.budgets that apply now, each for its reasons (reason-budgets.ts); and when that changes. */
  reasonBudgets?: readonly ActiveBudget[];
  reasonBudgetsChangeAt?: number;
}

export interface Snapshot {
  nodes: NodeView[];
  ledger: Ledger;
  /**
   * Whether the node's `nuo.dev/reboot-ok` is a grant nuo signed for it (checked with the operator's
   * key); absent, every grant shown in a grant phase is taken as nuo's.
   */
  ownGrant?: (n: NodeView) => boolean;
  /** Nodes with a drain running in this process. */
  draining: ReadonlySet<string>;
  /**
   * Nodes whose admission this process has decided and not yet seen land (its ledger or node write is
   * in flight). They count against the budget: two handovers, or a handover and a pass, that each
   * decided without the other's admission gave one slot twice.
   */
  admitting: ReadonlySet<string>;
  /** Health of nodes in AfterReboot (gathered by the controller for those nodes only). */
  health: ReadonlyMap<string, Health>;
}
