/**
 * The Plans as one pass uses them: which Plan each node needs next, which nodes run a Plan's Job, and
 * each Plan's concurrency — counted over the whole ledger, since a Plan's nodes may sit in several pools
 * while its `concurrency` holds across all of them. Pure: the resolved Plans, the ledger and the Jobs in.
 */
import { planLabel, sucPlanLabel } from '../../api/keys.ts';
import type { PlanFailure } from '../../api/plan.ts';
import type { Ledger } from '../decide/ledger-view.ts';
import type { NodeView } from '../decide/node-view.ts';
import { preparing } from '../decide/plan-prepare.ts';
import {
  type JobView,
  type PlanCompletion,
  type PlanPass,
  type PlanPrepare,
  type PlanWork,
  planDoneLabel,
} from '../decide/plan-work.ts';
import type { Wait } from '../decide/wait.ts';

/** A Plan as a pass uses it (plans.ts resolves it from the cluster's Plan). */
export interface PassPlan {
  /** "namespace/name". */
  ref: string;
  name: string;
  /**
   * The Plan starts attempts: valid, its version resolved and its secrets read. A Plan that is not
   * still finishes the attempts it has in progress.
   */
  ready: boolean;
  selects: (labels: Record<string, string>) => boolean;
  hash: string;
  /** The hash SUC gives the Plan (plan/suc-hash.ts): its label on a node SUC applied it to. */
  sucHash?: string;
  version: string;
  prepare: PlanPrepare;
  /** The Plan has a `prepare` container, run in a Job of its own before each attempt (plan-prepare.ts). */
  runsPrepare?: boolean;
  reboot: boolean;
  concurrency: number;
  /** Why the Plan starts nothing now (its window is closed). */
  hold?: Wait;
  /** Why nuo acts on this SUC Plan not at all now (SUC's controller runs): it is not ready. */
  standDown?: string;
  completion: PlanCompletion;
  /**
   * onFailure Stop: the Plan's generation and its status's failures, so a node whose Job failed at this
   * hash and generation is not tried again. Absent: Retry.
   */
  stop?: { generation: number; failed: readonly PlanFailure[] };
}

/** How a failed attempt's reason on the node names its Plan: "Plan ns/name: ...". */
export const planFailurePrefix = (ref: string) => `Plan ${ref}: `;

/** SUC's opt-out: a node whose plan label reads "disabled" is left out of the Plan. */
export const DISABLED = 'disabled';

/**
 * The label (`key=disabled`) that keeps the node out of the Plan by this name: SUC's
 * plan.upgrade.cattle.io/<plan>, so an opt-out made for SUC holds after the Plan moves to nuo, or
 * nuo's plan.nuo.dev/<plan>. Undefined: the node is not opted out.
 */
export function optedOut(labels: Readonly<Record<string, string>>, plan: string): string | undefined {
  const key = [planLabel(plan), sucPlanLabel(plan)].find((k) => labels[k] === DISABLED);
  return key === undefined ? undefined : `${key}=${DISABLED}`;
}

/**
 * Who applied the Plan's latest hash to the node: nuo (the Plan's done label, planDoneLabel, holds the
 * hash), or system-upgrade-controller before the Plan moved to nuo (SUC's plan.upgrade.cattle.io/<plan>
 * holds SUC's hash of the same Plan), so a node SUC upgraded is not upgraded again. A Plan of SUC's group
 * records in SUC's label at SUC's hash: nuo, which runs it, is named. Undefined: the node needs it.
 */
export function appliedBy(
  labels: Readonly<Record<string, string>>,
  p: Pick<PassPlan, 'ref' | 'name' | 'hash' | 'sucHash'>,
): 'nuo' | 'suc' | undefined {
  if (labels[planDoneLabel(p.ref)] === p.hash) return 'nuo';
  if (p.sucHash !== undefined && labels[sucPlanLabel(p.name)] === p.sucHash) return 'suc';
  return undefined;
}

/**
 * Under onFailure Stop, the node's Job failed at the Plan's hash and generation (SUC's: a failed Job
 * stays until the Plan changes): as the status recorded it, or a failed Job the status does not show yet.
 */
export function stoppedOn(p: PassPlan, node: string, jobs: readonly JobView[]): boolean {
  if (!p.stop) return false;
  const recorded = p.stop.failed.find((f) => f.node === node);
  if (recorded?.hash === p.hash && recorded.generation === p.stop.generation) return true;
  return jobs.some(
    (j) =>
      j.plan === p.ref &&
      j.hash === p.hash &&
      j.state === 'failed' &&
      !(recorded?.hash === p.hash && recorded.attempt === j.attempt),
  );
}

/** The first Plan (in ref order) that selects the node, which is not opted out nor applied at its hash. */
export function workOf(
  n: NodeView,
  plans: readonly PassPlan[],
  jobs: readonly JobView[] = [],
): PlanWork | undefined {
  for (const p of plans) {
    if (!p.ready || !p.selects(n.labels)) continue;
    if (appliedBy(n.labels, p) || optedOut(n.labels, p.name)) continue;
    const stopped = stoppedOn(p, n.name, jobs)
      ? {
          reason: `waiting: Plan ${p.ref}'s Job failed on this node (onFailure Stop): edit the Plan to try again`,
        }
      : undefined;
    const hold = stopped ?? p.hold;
    return {
      ref: p.ref,
      hash: p.hash,
      version: p.version,
      prepare: p.prepare,
      reboot: p.reboot,
      ...(p.runsPrepare ? { runsPrepare: true } : {}),
      ...(hold ? { hold } : {}),
    };
  }
  return undefined;
}

/**
 * A Job of an attempt that has not finished, or is still being deleted: its pod may run on the node. A
 * prepare Job's pod disrupts nothing (SUC runs it before its cordon and drain): not counted.
 */
export const jobRunning = (j: JobView) => j.stage === 'upgrade' && (j.state === 'active' || j.deleting);

/**
 * The nodes starting each Plan, in the order its concurrency admits them: those holding a slot of its
 * attempt, anywhere in the ledger, then by name those whose prepare of it runs or succeeded for the next
 * attempt (plan-prepare.ts).
 */
export function startingNodes(
  plans: readonly PassPlan[],
  ledger: Ledger,
  jobs: ReadonlyMap<string, readonly JobView[]>,
): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const add = (ref: string, node: string) => {
    const nodes = out.get(ref) ?? [];
    if (!nodes.includes(node)) out.set(ref, [...nodes, node]);
  };
  for (const [node, slot] of Object.entries(ledger.slots)) if (slot.plan) add(slot.plan.ref, node);
  for (const p of plans) {
    if (!p.ready || !p.runsPrepare) continue;
    const prepared = [...jobs].filter(([, js]) => preparing(js, p.ref, p.hash)).map(([node]) => node);
    for (const node of prepared.sort()) add(p.ref, node);
  }
  return out;
}

export interface PlansOfPass {
  pass: PlanPass;
  /** The node as decide() sees it this pass: the Plan it needs, and whether a Plan's Job runs on it. */
  view(n: NodeView): NodeView;
}

export function plansOfPass(
  plans: readonly PassPlan[],
  ledger: Ledger,
  jobs: ReadonlyMap<string, readonly JobView[]>,
): PlansOfPass {
  const sorted = [...plans].sort((a, b) => (a.ref < b.ref ? -1 : a.ref > b.ref ? 1 : 0));
  const byRef = new Map(sorted.map((p) => [p.ref, p]));
  const starting = startingNodes(sorted, ledger, jobs);
  const pass: PlanPass = {
    completion: (ref) => byRef.get(ref)?.completion,
    hashOf: (ref) => {
      const p = byRef.get(ref);
      return p?.ready ? p.hash : undefined;
    },
    wait: (work, node) => {
      const p = byRef.get(work.ref);
      const nodes = starting.get(work.ref) ?? [];
      // A node counted already goes if it is among the first `concurrency` (more were counted when two
      // passes both started a prepare): the rest wait behind it, so an over-count never stalls the Plan.
      const at = nodes.indexOf(node);
      const n = at >= 0 ? at : nodes.length;
      if (!p || n < p.concurrency) return undefined;
      if (p.concurrency === 0)
        return { reason: `waiting: Plan ${p.ref} has concurrency 0: it starts on no node` };
      return { reason: `waiting: Plan ${p.ref} runs on ${n} node(s), its concurrency` };
    },
    take: (work, node) => {
      const nodes = starting.get(work.ref) ?? [];
      if (!nodes.includes(node)) starting.set(work.ref, [...nodes, node]);
    },
    jobs: (node) => jobs.get(node) ?? [],
  };
  return {
    pass,
    view: (n) => {
      const work = workOf(n, sorted, jobs.get(n.name) ?? []);
      const planJob = (jobs.get(n.name) ?? []).some(jobRunning);
      if (!work && !planJob && !n.work && !n.planJob) return n;
      const { work: _w, planJob: _j, ...rest } = n;
      return { ...rest, ...(work ? { work } : {}), ...(planJob ? { planJob } : {}) };
    },
  };
}
