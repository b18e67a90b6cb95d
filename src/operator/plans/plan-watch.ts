/**
 * Everything the operator does with Plans outside decide(), in one place for the controller to wire: the
 * Plans watched and resolved (plans.ts), their Jobs watched, created and deleted (plan-jobs.ts), and their
 * statuses written after each pass (plan-status-writer.ts); with SUC's Plans adopted, whether SUC's
 * controller runs (suc-controller.ts), which keeps nuo off them.
 */
import { AppsV1Api, CoordinationV1Api, CoreV1Api, type V1Job } from '@kubernetes/client-node';
import { apiVersionOf, SUC_PLANS } from '../../api/plan-groups.ts';
import type { KubeLog } from '../../kube/backoff.ts';
import type { PooledKubeConfig } from '../../kube/pooled-kubeconfig.ts';
import { buildJob, buildPrepareJob, type JobSettings, type JobStage } from '../../plan/job.ts';
import { type CalendarClock, REAL_CLOCK } from '../../policy/calendar-clock.ts';
import type { Ledger } from '../decide/ledger-view.ts';
import type { NodeView } from '../decide/node-view.ts';
import type { PlanSlot } from '../decide/plan-work.ts';
import type { PassDecision } from '../decider.ts';
import { SucControllerWatch } from '../protocols/suc-controller.ts';
import type { DrainSettings } from '../write/drain-runner.ts';
import type { EventRecorder } from '../write/events.ts';
import { PlanJobs } from './plan-jobs.ts';
import type { PassPlan } from './plan-pass.ts';
import { type PlanEntry, passPlan, planDrainSettings } from './plan-resolve.ts';
import { PlanStatusWriter } from './plan-status-writer.ts';
import { PlanSource } from './plans.ts';
import { SucEnvWatch } from './suc-env-watch.ts';

export class PlanWatch {
  readonly source: PlanSource;
  readonly jobs: PlanJobs;
  readonly #statuses: PlanStatusWriter;
  readonly #job: JobSettings;
  readonly #suc: SucControllerWatch | undefined;
  /** SUC's own Job settings, for its Plans run in place. */
  readonly #sucEnv: SucEnvWatch | undefined;
  /** The clock Plans' windows are read on. */
  readonly #clock: CalendarClock;
  /** Called when a Plan, its Jobs, or whether SUC's controller runs changes. */
  readonly #changed: (() => void)[] = [];

  constructor(o: {
    kubeconfig: PooledKubeConfig;
    events: EventRecorder;
    intervalMs: number;
    /** The namespace whose SUC Plans nuo runs; none: SUC's Plans are not read. */
    sucNamespace?: string;
    /** How often nuo looks for SUC's controller while it runs SUC's Plans. */
    lookIntervalMs: number;
    /** The operator's settings of every Plan's Job. */
    job: JobSettings;
    log: KubeLog;
    /** The clock Plans' windows are read on; absent: the real one. */
    clock?: CalendarClock;
  }) {
    this.#job = o.job;
    this.#clock = o.clock ?? REAL_CLOCK;
    this.source = new PlanSource({
      kubeconfig: o.kubeconfig,
      intervalMs: o.intervalMs,
      ...(o.sucNamespace === undefined ? {} : { sucNamespace: o.sucNamespace }),
      log: o.log,
    });
    this.jobs = new PlanJobs({
      kubeconfig: o.kubeconfig,
      build: (plan, view, stage) => this.#build(plan, view, stage),
      log: o.log,
    });
    this.#statuses = new PlanStatusWriter({ kubeconfig: o.kubeconfig, events: o.events, log: o.log });
    if (o.sucNamespace !== undefined)
      this.#suc = new SucControllerWatch({
        coordination: o.kubeconfig.makeApiClient(CoordinationV1Api),
        core: o.kubeconfig.makeApiClient(CoreV1Api),
        apps: o.kubeconfig.makeApiClient(AppsV1Api),
        intervalMs: o.lookIntervalMs,
        onChange: () => this.#sucChanged(),
        log: o.log,
      });
    if (o.sucNamespace !== undefined)
      this.#sucEnv = new SucEnvWatch({
        core: o.kubeconfig.makeApiClient(CoreV1Api),
        namespace: o.sucNamespace,
        base: o.job,
        intervalMs: o.lookIntervalMs,
        log: o.log,
      });
  }

  #sucChanged(): void {
    for (const fn of this.#changed) fn();
  }

  /** Calls `fn` when a Plan or one of its Jobs changes, or SUC's controller comes or goes. */
  onChange(fn: () => void): void {
    this.source.onChange(fn);
    this.jobs.onChange(fn);
    this.#changed.push(fn);
  }

  start(): void {
    this.source.start();
    this.jobs.start();
    this.#suc?.start();
    this.#sucEnv?.start();
  }

  async stop(): Promise<void> {
    this.#suc?.stop();
    this.#sucEnv?.stop();
    await Promise.all([this.source.stop(), this.jobs.stop()]);
  }

  clear(): void {
    this.#statuses.clear();
  }

  /** Every Plan as a pass uses it at `now`. */
  passPlans(now: number): PassPlan[] {
    const standDown = this.#suc?.standDown();
    return this.source.entries().map((e) => passPlan(e, now, standDown, this.#clock));
  }

  /** How a Plan's attempt drains its node (the pool's settings where the Plan says nothing). */
  drain(ref: string, pool: DrainSettings): DrainSettings | undefined {
    const entry = this.#entry(ref);
    return entry && planDrainSettings(entry.plan.spec, pool);
  }

  /** Each Plan's status after a pass, written where it changed. */
  writeStatuses(decision: PassDecision, nodes: readonly NodeView[], ledger: Ledger, now: Date): void {
    const managed = new Set(decision.plan.pools.flatMap((p) => p.nodes.map((n) => n.name)));
    const jobs = this.jobs.byNode();
    this.#statuses.update(
      this.source.entries().map((entry) => ({
        entry,
        plan: passPlan(entry, now.getTime(), this.#suc?.standDown(), this.#clock),
        nodes,
        managed: (node: string) => managed.has(node),
        ledger,
        jobs,
        now,
      })),
    );
  }

  #entry(ref: string): PlanEntry | undefined {
    return this.source.entries().find((e) => e.ref === ref);
  }

  #build(p: PlanSlot, view: NodeView, stage: JobStage) {
    const entry = this.#entry(p.ref);
    if (entry?.group !== SUC_PLANS || !this.#sucEnv) return planJob(entry, p, view, stage, this.#job);
    const settings = this.#sucEnv.settings();
    if (settings instanceof Error) return new Error(`Plan ${p.ref}: ${settings.message}`);
    return planJob(entry, p, view, stage, settings);
  }
}

/**
 * A Job of a Plan on a node, from the Plan as it is now (`entry`; undefined once gone) and the attempt's
 * version and hash, or why none is built. A prepare is built only while the Plan is still at that hash:
 * its Job would run one spec under another's hash (the attempt's own Job is checked by its step).
 */
export function planJob(
  entry: PlanEntry | undefined,
  p: PlanSlot,
  view: NodeView,
  stage: JobStage,
  settings: JobSettings,
): V1Job | Error {
  if (!entry) return new Error(`Plan ${p.ref} is gone: no Job to build`);
  if (stage === 'prepare' && entry.hash !== p.hash)
    return new Error(
      `Plan ${p.ref} has a new hash since the pass that started its prepare: the next pass decides again`,
    );
  const { labels, annotations } = entry.plan.metadata;
  const os = view.labels['kubernetes.io/os'];
  return (stage === 'prepare' ? buildPrepareJob : buildJob)({
    plan: {
      apiVersion: apiVersionOf(entry.group),
      name: entry.name,
      namespace: entry.namespace,
      uid: entry.uid,
      spec: entry.plan.spec,
      ...(labels ? { labels } : {}),
      ...(annotations ? { annotations } : {}),
    },
    node: {
      name: view.name,
      hostname: view.labels['kubernetes.io/hostname'] ?? view.name,
      ...(os ? { os } : {}),
      bootId: view.bootId,
    },
    version: p.version,
    hash: p.hash,
    settings,
  });
}
