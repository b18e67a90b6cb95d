/**
 * The drain executor: cordon, plan, evict in parallel through the Eviction API, and wait until every
 * evicted pod is really gone (same UID) — bounded by a timeout and an AbortSignal. It never uncordons:
 * after a failed drain the caller decides (the operator undoes only its own cordon). The steps live
 * beside it: plan-reads.ts, plan.ts, evictions.ts, waits.ts, waiting-report.ts.
 */
import {
  AppsV1Api,
  CoreV1Api,
  type KubeConfig,
  PolicyV1Api,
  StorageV1Api,
  type V1Pod,
} from '@kubernetes/client-node';
import { cordon } from './cordon.ts';
import { type Evictions, evictAll, type Flight } from './evictions.ts';
import { type DrainOptions, drainOptions } from './options.ts';
import { type DrainPlan, PodAction, planDrain } from './plan.ts';
import { existingDaemonSets, namespaceLabels, podsOnNode } from './plan-reads.ts';
import { type DrainEvent, type DrainProgress, PodPhase, type PodState, ProgressTracker } from './progress.ts';
import { describeAttached } from './volumes.ts';
import { type PdbReads, pdbHolds, reportWaiting, waitingReport } from './waiting-report.ts';
import { claimVolumes, waitDetached, waitForPods, waitGone } from './waits.ts';

export const DrainOutcome = {
  drained: 'drained',
  /** A pod's decision was "refuse": nothing was evicted. */
  refused: 'refused',
  /**
   * Every refusing pod asks not to be disrupted now (nuo.dev/do-not-disrupt): found when the drain
   * planned, nothing was evicted; found just before a pod's eviction, the drain stopped there.
   */
  held: 'held',
  timedOut: 'timed-out',
  /** A pod waited for under afterMaxWait Fail still ran when its wait ended: the drain failed. */
  waitExpired: 'wait-expired',
  aborted: 'aborted',
} as const;
export type DrainOutcome = (typeof DrainOutcome)[keyof typeof DrainOutcome];

export interface DrainResult {
  node: string;
  outcome: DrainOutcome;
  /** True when this drain cordoned the node (and recorded cordoned-by-nuo). */
  cordoned: boolean;
  plan: DrainPlan;
  pods: PodState[];
  /** PDBs ("namespace/name") that refused an eviction at the end, with the pods they held. */
  blockingPdbs: Record<string, string[]>;
  /** A drain that timed out: per blocking PDB, what holds it and what would unblock it (pdb-hold.ts). */
  pdbHolds: string[];
  /** The most eviction requests that were in flight at once (bounded by `concurrency`). */
  maxInFlight: number;
  elapsedMs: number;
  message: string;
}

export interface DrainRequest {
  node: string;
  options?: Partial<DrainOptions>;
  signal?: AbortSignal;
  /** Cordon, list and plan only; evict nothing. */
  dryRun?: boolean;
  /**
   * The caller made the node unschedulable in a write of its own (the operator cordons in the write that
   * starts the drain): skip the cordon's read.
   */
  cordoned?: boolean;
  /** When waits for pods (options.waitFor) began: the node's Draining phase began; default now. */
  since?: Date;
  onEvent?: (event: DrainEvent) => void;
  onProgress?: (progress: DrainProgress) => void;
}

/** Ends a drain: at its timeout (timed-out), when the caller aborts (aborted), or as the drain says. */
interface DrainStop {
  signal: AbortSignal;
  /** Starts the timeout over from `at`. */
  timeoutFrom(at: number): void;
  abort(reason: DrainOutcome): void;
  /** Clears the timer and the caller's listener, and aborts what still runs. */
  end(): void;
}

function drainStop(timeoutSeconds: number, started: number, caller: AbortSignal | undefined): DrainStop {
  const stop = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeoutFrom = (at: number) => {
    if (timeoutSeconds <= 0) return;
    clearTimeout(timer);
    const ms = Math.max(0, at + timeoutSeconds * 1000 - Date.now());
    timer = setTimeout(() => stop.abort(DrainOutcome.timedOut), ms);
  };
  timeoutFrom(started);
  const onAbort = () => stop.abort(DrainOutcome.aborted);
  caller?.addEventListener('abort', onAbort, { once: true });
  if (caller?.aborted) onAbort();
  return {
    signal: stop.signal,
    timeoutFrom,
    abort: (reason) => stop.abort(reason),
    end: () => {
      clearTimeout(timer);
      caller?.removeEventListener('abort', onAbort);
      stop.abort(DrainOutcome.aborted);
    },
  };
}

/** The pods the plan may evict (now, or after their wait): their volumes are waited for once they are gone. */
const toEvict = (pods: readonly V1Pod[], plan: DrainPlan) => {
  const evicted = new Set(
    plan.decisions
      .filter(
        (d) => d.action === PodAction.evict || d.action === PodAction.waitFor || d.action === PodAction.wait,
      )
      .map((d) => d.uid),
  );
  return pods.filter((p) => evicted.has(p.metadata?.uid ?? ''));
};

const secondsSince = (started: number) => ((Date.now() - started) / 1000).toFixed(1);

export class Drainer {
  readonly #core: CoreV1Api;
  readonly #apps: AppsV1Api;
  readonly #pdbReads: PdbReads;
  readonly #storage: StorageV1Api;
  readonly #kubeconfig: KubeConfig;

  constructor(kubeconfig: KubeConfig) {
    this.#kubeconfig = kubeconfig;
    this.#core = kubeconfig.makeApiClient(CoreV1Api);
    this.#apps = kubeconfig.makeApiClient(AppsV1Api);
    this.#pdbReads = { core: this.#core, policy: kubeconfig.makeApiClient(PolicyV1Api) };
    this.#storage = kubeconfig.makeApiClient(StorageV1Api);
  }

  async drain(request: DrainRequest): Promise<DrainResult> {
    const options = drainOptions(request.options);
    const started = Date.now();
    const emit = request.onEvent ?? (() => {});
    const { node } = request;
    const stop = drainStop(options.timeoutSeconds, started, request.signal);
    try {
      const cordoned = await this.#cordon(request, emit);
      const pods = await podsOnNode(this.#core, node, options.podSelector, options.chunkSize);
      const plan = await this.#plan(pods, options, request.since ?? new Date(started));
      // Waiting for pods does not eat into the timeout: it runs from the last wait's end at the latest.
      const lastWait = Math.max(0, ...plan.decisions.map((d) => d.wait?.until ?? 0));
      if (lastWait > started) stop.timeoutFrom(lastWait);
      const tracker = new ProgressTracker(node, plan, started, request.onProgress, emit);
      for (const d of plan.decisions) {
        if (d.action === PodAction.skip || d.action === PodAction.refuse) emit({ type: d.action, pod: d });
      }
      const flight: Flight = { now: 0, max: 0 };
      const finish = (outcome: DrainOutcome, pdbHolds: string[] = []): DrainResult => {
        const result = tracker.result();
        return {
          node,
          outcome,
          cordoned,
          plan,
          pods: result.pods,
          blockingPdbs: result.blockingPdbs,
          pdbHolds,
          maxInFlight: flight.max,
          elapsedMs: Date.now() - started,
          message: [tracker.summary(outcome), ...pdbHolds].join('; '),
        };
      };
      if (!plan.canProceed) return finish(plan.held ? DrainOutcome.held : DrainOutcome.refused);
      // Nothing to evict (most nodes of a rollout hold only DaemonSet pods): no watch, no second list.
      if (request.dryRun || tracker.left() === 0) return finish(DrainOutcome.drained);

      const volumes = await claimVolumes(this.#core, node, toEvict(pods, plan));
      const expired = await this.#evictAndWait(node, tracker, options, stop, emit, flight);
      // A pod that asked not to be disrupted, read just before its eviction: nothing more is evicted.
      if (stop.signal.reason === DrainOutcome.held) return finish(DrainOutcome.held);
      if (tracker.left() === 0) {
        const attached = await this.#evictedStillAttached(node, pods, tracker, volumes, stop.signal);
        if (attached.length === 0) return finish(DrainOutcome.drained);
        if (stop.signal.reason === DrainOutcome.aborted) return finish(DrainOutcome.aborted);
        return {
          ...finish(DrainOutcome.timedOut),
          message: `timed-out after ${secondsSince(started)}s: every pod gone, ${attached.length} volume(s) of evicted pods still attached to ${node}: ${describeAttached(attached)}`,
        };
      }
      if (stop.signal.reason === DrainOutcome.aborted) return finish(DrainOutcome.aborted);
      if (stop.signal.reason === DrainOutcome.waitExpired) {
        const still = expired.map((p) => `${p.namespace}/${p.name} (${p.wait?.rule})`).join(', ');
        return {
          ...finish(DrainOutcome.waitExpired),
          message: `wait-expired after ${secondsSince(started)}s: ${expired.length} pod(s) waited for still running when their wait ended, with afterMaxWait Fail: ${still}; they were not evicted`,
        };
      }
      const blocking = Object.keys(tracker.result().blockingPdbs);
      return finish(DrainOutcome.timedOut, await pdbHolds(this.#pdbReads, node, blocking));
    } finally {
      stop.end();
    }
  }

  /** Cordons unless the caller did; a dry run only reads the node. True when this drain cordoned it. */
  async #cordon(request: DrainRequest, emit: (e: DrainEvent) => void): Promise<boolean> {
    if (request.dryRun) {
      await this.#core.readNode({ name: request.node });
      return false;
    }
    if (request.cordoned) return false;
    const { changed } = await cordon(this.#core, request.node);
    emit({ type: 'cordoned', node: request.node, changed });
    return changed;
  }

  /** Plans from the node's pods, reading what the plan needs besides (DaemonSets, namespace labels). */
  async #plan(pods: V1Pod[], options: DrainOptions, since: Date): Promise<DrainPlan> {
    return planDrain({
      pods,
      options,
      daemonSets: await existingDaemonSets(this.#apps, pods),
      now: new Date(),
      ...(options.waitFor.length > 0
        ? {
            waitFor: {
              rules: options.waitFor,
              namespaceLabels: await namespaceLabels(this.#core, options),
              since,
            },
          }
        : {}),
    });
  }

  /**
   * Evicts the plan's pods, waits for those it waits for, and waits until every evicted pod is gone,
   * saying meanwhile what holds the drain; returns the pods whose wait ended under Fail.
   */
  async #evictAndWait(
    node: string,
    tracker: ProgressTracker,
    options: DrainOptions,
    stop: DrainStop,
    emit: (e: DrainEvent) => void,
    flight: Flight,
  ): Promise<PodState[]> {
    const evicting = new AbortController();
    stop.signal.addEventListener('abort', () => evicting.abort(), { once: true });
    const report = waitingReport(emit);
    void reportWaiting(this.#pdbReads, node, tracker, options, evicting.signal, report);
    const evictions: Evictions = {
      kubeconfig: this.#kubeconfig,
      core: this.#core,
      tracker,
      options,
      signal: stop.signal,
      emit,
      flight,
      held: () => stop.abort(DrainOutcome.held),
    };
    const expired: PodState[] = [];
    await Promise.all([
      evictAll(tracker.toEvict(), evictions),
      waitForPods(
        tracker,
        stop.signal,
        report,
        (pods) => evictAll(pods, evictions),
        (pods) => {
          expired.push(...pods);
          stop.abort(DrainOutcome.waitExpired);
        },
      ),
      waitGone(this.#kubeconfig, this.#core, node, tracker, options, stop.signal),
    ])
      .catch((err) => {
        if (!stop.signal.aborted) throw err;
      })
      .finally(() => evicting.abort());
    return expired;
  }

  /**
   * Waits for the volumes of the evicted pods to detach; returns those still attached when the drain
   * stops. Pods left terminating past skipWaitForDeleteTimeout stay on the node: their volumes are not
   * waited for.
   */
  async #evictedStillAttached(
    node: string,
    pods: V1Pod[],
    tracker: ProgressTracker,
    volumes: ReadonlyMap<string, string>,
    signal: AbortSignal,
  ) {
    const evicted = new Set(tracker.result().pods.flatMap((p) => (p.phase === PodPhase.gone ? [p.uid] : [])));
    const gone = pods.filter((p) => evicted.has(p.metadata?.uid ?? ''));
    return waitDetached(this.#core, this.#storage, node, gone, signal, volumes);
  }
}
