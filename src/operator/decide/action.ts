/**
 * What decide() asks of the shell: one write or run per action, applied by the controller. A leaf of
 * types, so that decide() and its steps both name actions without importing each other.
 */
import type { ForeignProtocol } from '../../api/keys.ts';
import type { Phase } from '../../api/phases.ts';
import type { AttemptReason } from '../../api/update-policy.ts';
import type { PlanSlot } from './plan-work.ts';

export type Action =
  /**
   * Reserve a slot in the ledger, then start the attempt on the node: a reboot's (BeforeReboot or
   * Draining), or a Plan's (Draining, or Upgrading when the Plan does not drain).
   */
  | {
      type: 'admit';
      node: string;
      reason: string;
      /** What it is admitted for (spec.budgets judged it for that), recorded in its slot. */
      for: AttemptReason;
      plan?: PlanSlot;
      protocol?: ForeignProtocol;
      /** Admitted for its policy's remediation: the write records when (nuo.dev/remediated-at). */
      remediation?: true;
      /**
       * The attempt the ledger handed out for it (slot.ts attemptId), which its node write names: set by
       * the shell from the ledger written, never by decide() (the number is the ledger write's).
       */
      attempt?: string;
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
      /** The attempt of an admission whose node write is redone (its slot's), which the write names. */
      attempt?: string;
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
  /**
   * Ledger only: a promised node already in an attempt (handed over at once) holds its slot since `since`,
   * in the attempt the promise named (absent in a promise an older operator wrote). A remediation is never
   * handed over (its rate limit counts in the ledger write that admits it), so a claim records none.
   */
  | { type: 'claim'; node: string; since: string; attempt?: number; protocol?: ForeignProtocol };
