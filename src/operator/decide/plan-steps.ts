/**
 * The steps of a Plan's attempt (the rest of it is a reboot's: Draining before, the reboot and the health
 * gate after): Upgrading, where the Plan's Job runs, and the end of an attempt whose Plan was deleted.
 * Each Job is this attempt's only when it carries the attempt's `since`: a Job left by an earlier attempt
 * of the same Plan and hash (a failed one being deleted) has the same name, and is waited out.
 */
import { attemptId } from '../../api/attempt.ts';
import { Phase } from '../../api/phases.ts';
import type { Action } from './action.ts';
import type { NodeView } from './node-view.ts';
import type { JobView, PlanSlot } from './plan-work.ts';
import { endAttempt, explain, type StepContext } from './step-context.ts';

/** The Job rebooted the node: its boot ID differs from the one the Job was created on. */
export const rebootedBy = (job: JobView, n: NodeView) =>
  Boolean(job.bootId && n.bootId && job.bootId !== n.bootId);

const deleteJob = (n: NodeView, job: JobView, reason: string): Action => ({
  type: 'deleteJob',
  node: n.name,
  job: { name: job.name, namespace: job.namespace },
  reason,
});

/**
 * The attempt of a Plan that was deleted ends cleanly: its Jobs on the node deleted and waited out (the
 * node counts as disrupted while one runs), then nuo's cordon undone and the slot freed, no failure
 * counted. A need left (a reboot) waits in Pending.
 */
export function planFinished(n: NodeView, ctx: StepContext, ref: string): Action[] {
  const jobs = ctx.config.plans?.jobs(n.name).filter((j) => j.plan === ref) ?? [];
  const live = jobs.find((j) => !j.deleting);
  if (live) return [deleteJob(n, live, `Plan ${ref} was deleted`)];
  if (jobs.length > 0)
    return explain(n, `Plan ${ref} was deleted: waiting for its Job ${jobs[0]?.name} to be gone`);
  return [endAttempt(n, ctx, `Plan ${ref} was deleted: its attempt ended`)];
}

/**
 * The attempt's Job is created from the Plan as it is now, so only while the Plan still applies the hash
 * the attempt was admitted at: a Plan edited (or its channel moved on, or a secret changed) before its Job
 * started ends the attempt, no failure counted, and the node is admitted again at the new hash.
 */
function jobToStart(n: NodeView, ctx: StepContext, p: PlanSlot): Action[] {
  const now = ctx.config.plans?.hashOf(p.ref);
  if (now === p.hash) return [{ type: 'job', node: n.name }];
  const why =
    now === undefined
      ? 'starts nothing now (invalid, not resolved, or held while system-upgrade-controller runs)'
      : 'has a new hash';
  return [endAttempt(n, ctx, `Plan ${p.ref} ${why} since this attempt began: attempt ended before its Job`)];
}

/** Upgrading: the attempt's Job is created, runs, and decides what comes next. */
export function upgrading(n: NodeView, ctx: StepContext): Action[] {
  const slot = ctx.slotOf(n.name);
  const p = slot?.plan;
  // A phase of a Plan's attempt on a slot that names no Plan: nothing says what to run; the attempt ends.
  if (!slot || !p) return [endAttempt(n, ctx, 'Upgrading, but its slot names no Plan: attempt ended')];
  if (!ctx.config.plans?.completion(p.ref)) return planFinished(n, ctx, p.ref);
  // The attempt's Jobs: its prepare ran in a Job of its own before the admission (plan-prepare.ts).
  const jobs = ctx.config.plans
    .jobs(n.name)
    .filter((j) => j.stage === 'upgrade' && j.plan === p.ref && j.hash === p.hash);
  const job = jobs.find((j) => j.attempt === attemptId(slot));
  if (!job) {
    const earlier = jobs[0];
    if (!earlier) return jobToStart(n, ctx, p);
    if (!earlier.deleting) return [deleteJob(n, earlier, 'a Job of an earlier attempt')];
    return explain(n, `Plan ${p.ref}: waiting for Job ${earlier.name} of an earlier attempt to be gone`);
  }
  const label = `Plan ${p.ref}: Job ${job.namespace}/${job.name}`;
  // A Job that reboots the node (SUC's kernel example) is recognised by the new boot, not as a failure.
  if (rebootedBy(job, n))
    return [
      {
        type: 'transition',
        node: n.name,
        to: Phase.afterReboot,
        reason: `${label} rebooted the node (boot ID changed); health gate`,
      },
    ];
  if (job.state === 'active') return explain(n, `${label} is running`);
  // A Job failed while its node is down may have rebooted it (its pod lost with the boot): the new boot
  // or the node's return decides, and the node keeps its slot meanwhile (fail closed).
  if (job.state === 'failed' && !n.ready)
    return explain(n, `${label} failed while the node is NotReady: waiting for it to return`);
  if (job.state === 'failed')
    return [{ type: 'abort', node: n.name, reason: `${label} failed: ${job.message ?? 'no reason given'}` }];
  if (p.reboot) return [{ type: 'grantReboot', node: n.name, reason: `${label} succeeded` }];
  return [
    { type: 'transition', node: n.name, to: Phase.afterReboot, reason: `${label} succeeded; health gate` },
  ];
}
