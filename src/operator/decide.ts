/**
 * The operator's decisions: cluster snapshot + configuration + now → actions. Pure and synchronous so
 * every rule can be unit-tested exhaustively; the controller applies the actions with conditional writes.
 * decide() only runs its steps in order, each a pure function of its own module: foreign grants removed,
 * ledger entries with nothing behind them released, promises settled, each slot holder stepped through
 * its phases, the nodes outside a slot admitted or told why they wait (admission gates), slots about to
 * be freed promised ahead, and the reboot-pending taint kept true.
 *
 * The slot ledger (one object, written conditionally) is the authority on who holds a slot: admitting a
 * node is a write to the ledger, so two deciders — a new leader and a stale one — can never both spend the
 * last slot. Node phases are the per-node protocol and the human-readable mirror.
 */
import type { ForeignProtocol } from '../api/keys.ts';
import type { Phase } from '../api/phases.ts';
import { admit, outsideSlots } from './admission.ts';
import { budgetSlots, type MaxUnavailable } from './budget.ts';
import { revokeForeignGrants } from './foreign-grants.ts';
import type { Wait } from './gates.ts';
import type { ChecksReading, Health } from './health-gate.ts';
import type { Ledger } from './ledger.ts';
import type { NodeView } from './node-view.ts';
import { stepHolder } from './phase-steps.ts';
import type { PlanPass, PlanSlot } from './plan-work.ts';
import type { RemediationRate } from './policy-need.ts';
import type { ActiveBudget } from './reason-budgets.ts';
import { promiseEnding, releaseStale, settlePromises, unavailable, withdrawUnstarted } from './slots.ts';
import { pendingTaints } from './taints.ts';
import type { SlotCap } from './waves.ts';
import { ZoneBudget, type ZonePolicy } from './zones.ts';

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
  /** Nodes of the pool another coordinator disrupts (kured's lock names them): they use slots. */
  disruptedElsewhere?: ReadonlySet<string>;
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

export type Action =
  /**
   * Reserve a slot in the ledger, then start the attempt on the node: a reboot's (BeforeReboot or
   * Draining), or a Plan's (Draining, or Upgrading when the Plan does not drain).
   */
  | {
      type: 'admit';
      node: string;
      reason: string;
      plan?: PlanSlot;
      protocol?: ForeignProtocol;
      /** Admitted for its policy's remediation: the write records when (nuo.dev/remediated-at). */
      remediation?: true;
    }
  /** Change the node's phase (and reason), with the protocol keys that go with it. */
  | {
      type: 'transition';
      node: string;
      to: Phase;
      reason: string;
      clearGrant?: boolean;
      failed?: boolean;
      /** The reboot-pending taints the node carries after the same write (0: none). */
      taint?: number;
      /** The Plan of an attempt whose admission's node write is redone (to BeforeReboot). */
      plan?: PlanSlot;
      /** A remediation's admission whose node write is redone: it records the time too. */
      remediation?: true;
    }
  /** Create the Job of the node's Plan attempt (deterministic name: an existing one is this one). */
  | { type: 'job'; node: string }
  /** Create the Job that runs the Plan's prepare on the node, before its attempt (plan-prepare.ts). */
  | { type: 'prepareJob'; node: string; plan: PlanSlot }
  /** Delete a Plan's Job on the node (its Plan is gone, or it belongs to an earlier attempt). */
  | { type: 'deleteJob'; node: string; job: { name: string; namespace: string }; reason: string }
  /** The Plan's Job succeeded and the Plan asks for a reboot: sign and write the grant. */
  | { type: 'grantReboot'; node: string; reason: string }
  /** Update only the reason of a waiting node (written only when it changed). */
  | { type: 'explain'; node: string; reason: string; taint?: number }
  /** Set how many reboot-pending taints a node outside an attempt carries (0: none), nothing else. */
  | { type: 'taint'; node: string; count: number }
  /** Run the drain engine for a node in Draining. */
  | { type: 'drain'; node: string }
  /** Release the slot of a node whose attempt was aborted (hook timeout), uncordon nuo's cordon, Pending. */
  | {
      type: 'abort';
      node: string;
      reason: string;
      /** The attempt failed at its drain: one more in the node's count of drains failed in a row. */
      drainFailed?: boolean;
      /** The drain failed once too often under onFailure Skip: label the node skipped. */
      skip?: boolean;
    }
  /**
   * Finished: uncordon nuo's cordon, clear the protocol keys, Idle, release the slot. `needSurvived`:
   * the agent reports the need again after the boot (it counts towards a reboot loop).
   */
  | {
      type: 'complete';
      node: string;
      reason: string;
      needSurvived?: boolean;
      /**
       * A Plan's attempt: the node's label `label` (plan-work.ts planDoneLabel) = `hash`, and the Plan's
       * own labels; `rebooted`: the node rebooted in it (else a reboot requested is still to come).
       */
      plan?: { label: string; hash: string; labels: Record<string, string>; rebooted: boolean };
    }
  /**
   * An attempt that has no slot behind it (or lost track of its phase) ends: Pending while the node still
   * needs a reboot, else Idle, in one write with the grant withdrawn and nuo's cordon undone.
   */
  | { type: 'end'; node: string; reason: string; to: typeof Phase.idle | typeof Phase.pending }
  /** A ledger entry without a live attempt behind it (deleted node, or a node already Idle). */
  | { type: 'release'; node: string; reason: string }
  /** Remove a `nuo.dev/reboot-ok` nuo did not give (written by another client, or left behind). */
  | { type: 'revoke'; node: string; reason: string }
  /** A freshly needing node enters Pending. */
  | { type: 'pending'; node: string; reason: string; taint?: number }
  /** Ledger only: the node takes `after`'s slot once that attempt has ended. */
  | { type: 'promise'; node: string; after: string }
  /** Ledger only: withdraw the node's promise. */
  | { type: 'unpromise'; node: string; reason: string }
  /** Ledger only: a promised node already in an attempt (handed over at once) holds its slot since `since`. */
  | { type: 'claim'; node: string; since: string; protocol?: ForeignProtocol };

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

export function decide(snapshot: Snapshot, c: DecideConfig, now: Date): Decision {
  const t = now.getTime();
  const wake = wakeUp(t);
  const byName = new Map(snapshot.nodes.map((n) => [n.name, n]));
  // Every node of the snapshot is the pool's: which nodes a budget covers is the pool plan's business.
  const eligible = snapshot.nodes;
  const actions: Action[] = revokeForeignGrants(snapshot.nodes, snapshot.ownGrant);
  const stale = releaseStale(snapshot.ledger, byName, t, c.plans, wake.at);
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
  actions.push(
    ...withdrawUnstarted(snapshot.ledger, byName, holders, snapshot.admitting, excess, stale.delayed),
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
