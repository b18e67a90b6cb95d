/**
 * A Plan's `prepare` before its attempt, where SUC runs it: before the cordon and the drain. It runs in a
 * Job of its own on the node (job.ts buildPrepareJob) while the node holds no slot: a prepare neither
 * cordons nor drains, and may wait long for other nodes (k3s agents wait for the servers' Plan), so it
 * must not keep a slot of the budget from the nodes it waits for. The node is admitted only once its
 * prepare succeeded at the Plan's hash; an attempt that used it and failed has it run again first. Pure.
 */
import type { Action } from './action.ts';
import type { NodeView } from './node-view.ts';
import { type JobView, type PlanWork, planSlot } from './plan-work.ts';
import type { Wait } from './wait.ts';

/** The node's prepare Job of the Plan at `hash`, if any (its name is deterministic: one at a time). */
const prepareOf = (jobs: readonly JobView[], ref: string, hash: string) =>
  jobs.find((j) => j.stage === 'prepare' && j.plan === ref && j.hash === hash);

/**
 * An attempt used the prepare: a Job of an attempt at the same hash was created in the prepare's second
 * or after it (creation times are whole seconds; a prepare is only ever made before its attempt's Job).
 */
export function spent(prepare: JobView, jobs: readonly JobView[]): boolean {
  const at = prepare.createdAt;
  if (at === undefined) return false;
  return jobs.some(
    (j) =>
      j.stage === 'upgrade' &&
      j.plan === prepare.plan &&
      j.hash === prepare.hash &&
      j.createdAt !== undefined &&
      j.createdAt >= at,
  );
}

/**
 * The node's prepare of the Plan at `hash` runs, or succeeded for its next attempt: the node is starting
 * the Plan, and counts towards its concurrency and in its status's `applying`, as under SUC.
 */
export function preparing(jobs: readonly JobView[], ref: string, hash: string): boolean {
  const j = prepareOf(jobs, ref, hash);
  if (!j || j.deleting) return false;
  return j.state === 'active' || (j.state === 'succeeded' && !spent(j, jobs));
}

/** Why a node waits for its prepare, and the Job write that moves it on, if one does. */
export interface PrepareWait {
  wait: Wait;
  action?: Extract<Action, { type: 'prepareJob' | 'deleteJob' }>;
}

const deleteJob = (n: NodeView, job: JobView, reason: string): PrepareWait['action'] => ({
  type: 'deleteJob',
  node: n.name,
  job: { name: job.name, namespace: job.namespace },
  reason,
});

/**
 * What the node's prepare for `work` still needs before the node may be admitted, or undefined when it
 * needs none (the Plan has no prepare, or it succeeded and no attempt used it yet). A failed prepare runs
 * again `retryBackoffMs` after it failed (under onFailure Stop the Plan's hold stops the node first).
 */
export function prepareWait(
  n: NodeView,
  work: PlanWork,
  jobs: readonly JobView[],
  retryBackoffMs: number,
  t: number,
): PrepareWait | undefined {
  if (!work.runsPrepare) return undefined;
  const what = `Plan ${work.ref}'s prepare`;
  const earlier = jobs.find(
    (j) =>
      j.stage === 'prepare' &&
      j.plan === work.ref &&
      j.hash !== work.hash &&
      j.state === 'active' &&
      !j.deleting,
  );
  if (earlier)
    return {
      wait: { reason: `waiting: ${what} at an earlier hash is stopped first (Job ${earlier.name})` },
      action: deleteJob(n, earlier, `Plan ${work.ref} has a new hash`),
    };
  const job = prepareOf(jobs, work.ref, work.hash);
  if (!job)
    return {
      wait: { reason: `waiting: ${what} starts; the node takes a slot once it has succeeded` },
      action: { type: 'prepareJob', node: n.name, plan: planSlot(work) },
    };
  const named = `${what} (Job ${job.namespace}/${job.name})`;
  if (job.deleting) return { wait: { reason: `waiting: ${named} of an earlier try to be gone` } };
  if (job.state === 'active')
    return { wait: { reason: `waiting: ${named} runs; the node takes a slot once it has succeeded` } };
  if (job.state === 'failed') {
    const until = (job.finishedAt ?? 0) + retryBackoffMs;
    const why = `${named} failed: ${job.message ?? 'no reason given'}`;
    if (t < until)
      return {
        wait: { reason: `waiting: ${why}; it runs again after ${new Date(until).toISOString()}`, until },
      };
    return {
      wait: { reason: `waiting: ${why}; it runs again` },
      action: deleteJob(n, job, `${what} failed; it runs again`),
    };
  }
  if (spent(job, jobs))
    return {
      wait: { reason: `waiting: ${named} was used by an attempt that failed; it runs again` },
      action: deleteJob(n, job, `${what} was used by an earlier attempt; it runs again`),
    };
  return undefined;
}
