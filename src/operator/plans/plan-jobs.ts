/**
 * The Plans' Jobs as the operator sees and changes them: a watch on every Job carrying JobLabels.plan (in
 * every namespace: a Plan's Jobs run in its own), read as JobViews per node for decide(), and the
 * writes a Plan makes — create its prepare Job before an attempt, create the attempt's Job (built by the
 * Plan's pure builder, marked with the attempt), delete one. The Job's completion is the Job
 * controller's: nuo only reads its conditions.
 */
import { BatchV1Api, type V1Job } from '@kubernetes/client-node';
import { attemptId } from '../../api/attempt.ts';
import { PLAN } from '../../api/crd.ts';
import { JobAnnotations, JobLabels, PREPARE_STAGE, SucJobLabels } from '../../api/keys.ts';
import { planGroupOf, planRefOf } from '../../api/plan-groups.ts';
import type { KubeLog } from '../../kube/backoff.ts';
import { statusCode } from '../../kube/errors.ts';
import { ResilientInformer } from '../../kube/informer.ts';
import type { PooledKubeConfig } from '../../kube/pooled-kubeconfig.ts';
import type { JobStage } from '../../plan/job.ts';
import type { NodeView } from '../decide/node-view.ts';
import type { JobView, PlanSlot } from '../decide/plan-work.ts';
import type { Slot } from '../decide/slot.ts';

/** Creates and deletes the Plans' Jobs (attempt-writes.ts). */
export interface PlanJobWriter {
  /** Creates the Job of the node's Plan attempt; one already there under its name is left as it is. */
  create(view: NodeView, slot: Slot | undefined): Promise<void>;
  /** Creates the Job of the Plan's prepare on the node, before its attempt; one already there is left. */
  prepare(view: NodeView, plan: PlanSlot): Promise<void>;
  delete(job: { name: string; namespace: string }, reason: string): Promise<void>;
}

/**
 * Builds a Job of a Plan on a node, at the Plan's hash and version given, or says why it cannot (the
 * Plan is gone, invalid, or no longer at that hash).
 */
export type JobBuilder = (plan: PlanSlot, view: NodeView, stage: JobStage) => V1Job | Error;

/** Longest message of a failed Job kept for the node's reason and the Plan's status. */
const MESSAGE_MAX = 300;

/** A time of the Job's object (a Date once deserialised, a string as sent) in ms; undefined if none. */
const millis = (t: Date | string | undefined): number | undefined => {
  const ms = t === undefined ? Number.NaN : new Date(t).getTime();
  return Number.isNaN(ms) ? undefined : ms;
};

/** What decide() reads of a Job: its Plan, node, stage, attempt, state and times. Pure. */
export function jobView(job: V1Job): JobView | undefined {
  const labels = job.metadata?.labels ?? {};
  const annotations = job.metadata?.annotations ?? {};
  const plan = annotations[JobAnnotations.plan] ?? labels[JobLabels.plan];
  const namespace = job.metadata?.namespace ?? '';
  if (!plan || !labels[JobLabels.node]) return undefined;
  const conditions = job.status?.conditions ?? [];
  const holds = (type: string) => conditions.find((c) => c.type === type && c.status === 'True');
  const failed = holds('Failed');
  const complete = holds('Complete');
  const state = complete ? 'succeeded' : failed ? 'failed' : 'active';
  const message = failed && `${failed.reason ?? 'Failed'}: ${failed.message ?? ''}`.slice(0, MESSAGE_MAX);
  // The owner's group tells a SUC Plan's Job from nuo's Plan's of the same name.
  const owner = job.metadata?.ownerReferences?.find((o) => o.kind === PLAN.kind && o.controller);
  const createdAt = millis(job.metadata?.creationTimestamp);
  const finishedAt = millis((complete ?? failed)?.lastTransitionTime);
  return {
    name: job.metadata?.name ?? '',
    namespace,
    stage: labels[JobLabels.stage] === PREPARE_STAGE ? 'prepare' : 'upgrade',
    ...(createdAt === undefined ? {} : { createdAt }),
    ...(finishedAt === undefined ? {} : { finishedAt }),
    plan: planRefOf(planGroupOf(owner?.apiVersion), namespace, plan),
    hash: labels[JobLabels.hash] ?? '',
    ...(annotations[JobAnnotations.attempt] ? { attempt: annotations[JobAnnotations.attempt] } : {}),
    ...(annotations[JobAnnotations.bootId] ? { bootId: annotations[JobAnnotations.bootId] } : {}),
    state,
    ...(message ? { message } : {}),
    deleting: Boolean(job.metadata?.deletionTimestamp),
  };
}

/**
 * Why a Job found under the name of the one nuo creates is not nuo's, so nuo's never appears: SUC's Job
 * of the same Plan, hash and node (SUC names its Jobs alike), made before SUC was stopped. Undefined: it
 * is nuo's. Pure.
 */
export function foreignJob(job: V1Job): string | undefined {
  if (job.metadata?.labels?.[JobLabels.plan]) return undefined;
  const controller = job.metadata?.labels?.[SucJobLabels.controller];
  const by = controller ? `${controller} (its label ${SucJobLabels.controller})` : 'another controller';
  return `Job ${job.metadata?.namespace}/${job.metadata?.name} exists, made by ${by}, under the name of this attempt's Job: nuo's starts once it is gone (its ttlSecondsAfterFinished, ${job.spec?.ttlSecondsAfterFinished ?? 'none'} s, or delete it)`;
}

export class PlanJobs implements PlanJobWriter {
  readonly #informer: ResilientInformer<V1Job>;
  readonly #batch: BatchV1Api;
  readonly #build: JobBuilder;
  readonly #log: KubeLog;

  constructor(o: { kubeconfig: PooledKubeConfig; build: JobBuilder; log: KubeLog }) {
    this.#batch = o.kubeconfig.makeApiClient(BatchV1Api);
    this.#build = o.build;
    this.#log = o.log;
    this.#informer = new ResilientInformer<V1Job>({
      kubeconfig: o.kubeconfig,
      path: '/apis/batch/v1/jobs',
      labelSelector: JobLabels.plan,
      list: (opts) =>
        this.#batch.listJobForAllNamespaces({ ...opts, labelSelector: JobLabels.plan }) as Promise<{
          items: V1Job[];
        }>,
      objectType: 'V1Job',
      name: 'plan-jobs',
      log: o.log,
    });
  }

  /** Calls `fn` when a Plan's Job appears, changes or goes. */
  onChange(fn: () => void): void {
    this.#informer.onEvent(() => fn());
  }

  start(): void {
    this.#informer.start().catch(() => {});
  }

  stop(): Promise<void> {
    return this.#informer.stop();
  }

  get synced(): boolean {
    return this.#informer.stats().synced;
  }

  /** Every Plan's Job by node, as seen now. */
  byNode(): Map<string, JobView[]> {
    const out = new Map<string, JobView[]>();
    for (const job of this.#informer.list()) {
      const node = job.metadata?.labels?.[JobLabels.node];
      const view = jobView(job);
      if (node && view) out.set(node, [...(out.get(node) ?? []), view]);
    }
    return out;
  }

  async create(view: NodeView, slot: Slot | undefined): Promise<void> {
    if (!slot?.plan) throw new Error(`node ${view.name} holds no slot of a Plan: no Job to create`);
    const job = this.#build(slot.plan, view, 'upgrade');
    if (job instanceof Error) throw job;
    job.metadata = {
      ...job.metadata,
      annotations: { ...job.metadata?.annotations, [JobAnnotations.attempt]: attemptId(slot) },
    };
    await this.#create(view, job);
  }

  async prepare(view: NodeView, plan: PlanSlot): Promise<void> {
    const job = this.#build(plan, view, 'prepare');
    if (job instanceof Error) throw job;
    await this.#create(view, job);
  }

  async #create(view: NodeView, job: V1Job): Promise<void> {
    const namespace = job.metadata?.namespace ?? '';
    try {
      await this.#batch.createNamespacedJob({ namespace, body: job });
      this.#log('info', 'Job created', { node: view.name, job: `${namespace}/${job.metadata?.name}` });
    } catch (err) {
      // Deterministic names: the Job is there already (this attempt's, or an earlier one the step waits out).
      if (statusCode(err) !== 409) throw err;
      const there = await this.#batch.readNamespacedJob({ name: job.metadata?.name ?? '', namespace });
      const foreign = foreignJob(there);
      if (foreign) throw new Error(foreign);
    }
  }

  async delete(job: { name: string; namespace: string }, reason: string): Promise<void> {
    try {
      await this.#batch.deleteNamespacedJob({ ...job, propagationPolicy: 'Foreground' });
      this.#log('info', 'Job deleted', { job: `${job.namespace}/${job.name}`, reason });
    } catch (err) {
      if (statusCode(err) !== 404) throw err;
    }
  }
}
