/**
 * What decide() knows of Plans: the Plan a node needs next (its work), the part of a Plan's attempt the
 * ledger records, the node's Job as last seen, and the pass's view of every Plan (its concurrency left,
 * what its completion writes). The Plans themselves are read and resolved elsewhere (plans.ts); decide()
 * sees only these values, so every rule stays a pure, table-tested function.
 */
import { planLabel, sucPlanLabel } from '../../api/keys.ts';
import { groupOfRef, SUC_PLANS } from '../../api/plan-groups.ts';
import type { Wait } from './wait.ts';

/** How a Plan's attempt prepares the node before its Job: cordoned and drained, cordoned, or neither. */
export type PlanPrepare = 'drain' | 'cordon' | 'none';

/**
 * A Plan's attempt as the ledger records it with the node's slot: which Plan, at which hash and version,
 * and how it runs. The attempt runs as admitted whatever the Plan becomes meanwhile (an edit changes the
 * hash: the node is applied again after this attempt).
 */
export interface PlanSlot {
  /** The Plan, "namespace/name" (plan-groups.ts planRefOf). */
  ref: string;
  hash: string;
  version: string;
  prepare: PlanPrepare;
  /** nuo's agent reboots the node after the Job succeeds, within the same attempt. */
  reboot: boolean;
}

/** A Plan a node needs (its label differs from the Plan's hash): the attempt to admit, and its gates. */
export interface PlanWork extends PlanSlot {
  /** Why the Plan starts no attempt now (outside its window, invalid): the node waits. */
  hold?: Wait;
  /** The Plan has a `prepare` container: it runs in a Job of its own before the attempt is admitted. */
  runsPrepare?: boolean;
}

/** A Plan's Job for a node, as the operator last saw it. */
export interface JobView {
  name: string;
  namespace: string;
  /** Runs the Plan's `prepare` alone, before the attempt (plan-prepare.ts), or the attempt's upgrade. */
  stage: 'prepare' | 'upgrade';
  /** When it was created and when it finished (ms since the epoch), as its object says. */
  createdAt?: number;
  finishedAt?: number;
  /** Its Plan, "namespace/name", and the hash it applies. */
  plan: string;
  hash: string;
  /** The attempt it belongs to (JobAnnotations.attempt): the slot's attemptId. */
  attempt?: string;
  /** The node's boot ID when it was created. */
  bootId?: string;
  state: 'active' | 'succeeded' | 'failed';
  /** Why it failed (its condition's message, or its pod's). */
  message?: string;
  /** Being deleted. */
  deleting: boolean;
}

/** What completing a Plan's attempt writes, and how long the slot is kept after it. */
export interface PlanCompletion {
  /** The Plan's postCompleteLabels, expanded. */
  labels: Record<string, string>;
  postCompleteDelayMs: number;
}

/** The Plans as one pass sees them (shared by every pool's decide()). */
export interface PlanPass {
  /** What completing the Plan writes; undefined once the Plan is gone. */
  completion(ref: string): PlanCompletion | undefined;
  /** The hash the Plan applies now; undefined while it starts nothing (invalid, not resolved) or is gone. */
  hashOf(ref: string): string | undefined;
  /**
   * Why one more node may not start the Plan now (its concurrency is taken by its attempts and by the
   * nodes running its prepare, `node` itself not counted), if so.
   */
  wait(work: PlanWork, node: string): Wait | undefined;
  /** The node started the Plan in this pass: its attempt admitted, or its prepare started. */
  take(work: PlanWork, node: string): void;
  /** The Plans' Jobs on the node that the operator sees. */
  jobs(node: string): readonly JobView[];
}

/** The Plan's name from its ref ("namespace/name", after the group of SUC's: plan-groups.ts). */
export const planName = (ref: string) => ref.slice(ref.indexOf('/') + 1);

/**
 * The node label whose value, the Plan's hash, records that the Plan was applied: nuo's
 * plan.nuo.dev/<plan> for nuo's Plans, SUC's plan.upgrade.cattle.io/<plan> (at SUC's hash) for SUC's.
 */
export const planDoneLabel = (ref: string) =>
  groupOfRef(ref) === SUC_PLANS ? sucPlanLabel(planName(ref)) : planLabel(planName(ref));

/** A Plan's attempt for the ledger: the work without its gates. */
export const planSlot = (w: PlanWork): PlanSlot => ({
  ref: w.ref,
  hash: w.hash,
  version: w.version,
  prepare: w.prepare,
  reboot: w.reboot,
});
