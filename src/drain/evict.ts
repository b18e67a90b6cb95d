/**
 * The drain executor: cordon, plan, evict in parallel through the Eviction API, and wait until every
 * evicted pod is really gone (same UID) — bounded by a timeout and an AbortSignal. It never uncordons:
 * after a failed drain the caller decides (the operator undoes only its own cordon).
 */
import {
  AppsV1Api,
  CoreV1Api,
  type KubeConfig,
  PolicyV1Api,
  StorageV1Api,
  type V1Pod,
  type V1PodDisruptionBudget,
  Watch,
} from '@kubernetes/client-node';
import { sleep } from '../kube/backoff.ts';
import { apiStatus, describeError, statusCode } from '../kube/errors.ts';
import { selectorText } from '../kube/selector.ts';
import { cordon } from './cordon.ts';
import { DEFAULT_DRAIN_OPTIONS, type DrainOptions, drainOptions } from './options.ts';
import { pdbHold } from './pdb-hold.ts';
import {
  type DrainPlan,
  evictionTiers,
  isFinished,
  PodAction,
  pastDeleteTimeout,
  planDrain,
} from './plan.ts';
import { type DrainEvent, type DrainProgress, PodPhase, type PodState, ProgressTracker } from './progress.ts';
import { RetryQueue } from './retry-queue.ts';
import { claimsOf, describeAttached, stillAttached } from './volumes.ts';
import { describeWait, waitsDue } from './wait-for.ts';

export const DrainOutcome = {
  drained: 'drained',
  /** A pod's decision was "refuse": nothing was evicted. */
  refused: 'refused',
  /** Every refusing pod asks not to be disrupted now (nuo.dev/do-not-disrupt): nothing was evicted. */
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

const RETRY_MIN_MS = 250;
const RETRY_MAX_MS = 5000;
/** A re-list catches deletions a broken watch missed. */
const RESYNC_MS = 5000;
/** How long PDBs may refuse before the drain says what holds them, and how often it looks again. */
const WAITING_REPORT_MAX_MS = 30_000;
/** How often pods being deleted are checked against skipWaitForDeleteTimeout. */
const SKIP_WAIT_CHECK_MS = 1000;
/** How often the node's VolumeAttachments are read while evicted pods' volumes detach. */
const DETACH_POLL_MS = 1000;

/** Joins what the drain waits on (its pods waited for, the PDBs holding it) into one `waiting` event when that changes. */
interface WaitingReport {
  pods(lines: string[]): void;
  pdbs(lines: string[]): void;
}

function waitingReport(emit: (e: DrainEvent) => void): WaitingReport {
  let pods: string[] = [];
  let pdbs: string[] = [];
  let last = '';
  const say = () => {
    const holds = [...pods, ...pdbs];
    const text = holds.join('; ');
    if (text !== last && holds.length > 0) emit({ type: 'waiting', holds, blocked: pdbs.length > 0 });
    last = text;
  };
  return {
    pods: (lines) => {
      pods = lines;
      say();
    },
    pdbs: (lines) => {
      pdbs = lines;
      say();
    },
  };
}

/** Lists a node's pods with a field selector (never a cluster-wide list), page by page. */
export async function podsOnNode(
  core: CoreV1Api,
  node: string,
  labelSelector = '',
  chunkSize = DEFAULT_DRAIN_OPTIONS.chunkSize,
): Promise<V1Pod[]> {
  const pods: V1Pod[] = [];
  let _continue: string | undefined;
  do {
    const page = await core.listPodForAllNamespaces({
      fieldSelector: `spec.nodeName=${node}`,
      labelSelector: labelSelector || undefined,
      limit: chunkSize,
      _continue,
    });
    pods.push(...page.items);
    _continue = page.metadata?._continue || undefined;
  } while (_continue);
  return pods;
}

async function existingDaemonSets(apps: AppsV1Api, pods: V1Pod[]): Promise<Set<string>> {
  const wanted = new Set<string>();
  for (const pod of pods) {
    const ref = pod.metadata?.ownerReferences?.find((r) => r.controller && r.kind === 'DaemonSet');
    if (ref) wanted.add(`${pod.metadata?.namespace}/${ref.name}`);
  }
  const found = new Set<string>();
  await Promise.all(
    [...wanted].map(async (key) => {
      const [namespace, name] = key.split('/') as [string, string];
      try {
        await apps.readNamespacedDaemonSet({ namespace, name });
        found.add(key);
      } catch (err) {
        if (statusCode(err) !== 404) throw err;
      }
    }),
  );
  return found;
}

/** "The disruption budget web needs 2 healthy pods and has 2 currently" → "web". */
export function blockingPdbName(err: unknown): string | undefined {
  const status = apiStatus(err);
  for (const cause of status?.details?.causes ?? []) {
    const match =
      cause.reason === 'DisruptionBudget' ? cause.message?.match(/disruption budget (\S+)/) : null;
    if (match?.[1]) return match[1];
  }
  return undefined;
}

export class Drainer {
  readonly #core: CoreV1Api;
  readonly #apps: AppsV1Api;
  readonly #policy: PolicyV1Api;
  readonly #storage: StorageV1Api;
  readonly #kubeconfig: KubeConfig;

  constructor(kubeconfig: KubeConfig) {
    this.#kubeconfig = kubeconfig;
    this.#core = kubeconfig.makeApiClient(CoreV1Api);
    this.#apps = kubeconfig.makeApiClient(AppsV1Api);
    this.#policy = kubeconfig.makeApiClient(PolicyV1Api);
    this.#storage = kubeconfig.makeApiClient(StorageV1Api);
  }

  async drain(request: DrainRequest): Promise<DrainResult> {
    const options = drainOptions(request.options);
    const started = Date.now();
    const emit = request.onEvent ?? (() => {});
    const { node } = request;

    const stop = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = (at: number) => {
      clearTimeout(timer);
      timer = setTimeout(() => stop.abort(DrainOutcome.timedOut), Math.max(0, at - Date.now()));
    };
    if (options.timeoutSeconds > 0) deadline(started + options.timeoutSeconds * 1000);
    const onAbort = () => stop.abort(DrainOutcome.aborted);
    request.signal?.addEventListener('abort', onAbort, { once: true });
    if (request.signal?.aborted) onAbort();

    try {
      let cordoned = false;
      if (request.dryRun) {
        await this.#core.readNode({ name: node });
      } else if (!request.cordoned) {
        cordoned = (await cordon(this.#core, node)).changed;
        emit({ type: 'cordoned', node, changed: cordoned });
      }
      const pods = await podsOnNode(this.#core, node, options.podSelector, options.chunkSize);
      const plan = planDrain({
        pods,
        options,
        daemonSets: await existingDaemonSets(this.#apps, pods),
        now: new Date(),
        ...(options.waitFor.length > 0
          ? {
              waitFor: {
                rules: options.waitFor,
                namespaceLabels: await this.#namespaceLabels(options),
                since: request.since ?? new Date(started),
              },
            }
          : {}),
      });
      // Waiting for pods does not eat into the timeout: it runs from the last wait's end at the latest.
      const lastWait = Math.max(0, ...plan.decisions.map((d) => d.wait?.until ?? 0));
      if (options.timeoutSeconds > 0 && lastWait > started)
        deadline(lastWait + options.timeoutSeconds * 1000);
      const tracker = new ProgressTracker(node, plan, started, request.onProgress, emit);
      for (const d of plan.decisions) {
        if (d.action === PodAction.skip || d.action === PodAction.refuse) emit({ type: d.action, pod: d });
      }
      const flight = { now: 0, max: 0 };
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

      const evicting = new AbortController();
      stop.signal.addEventListener('abort', () => evicting.abort(), { once: true });
      const report = waitingReport(emit);
      void this.#reportWaiting(node, tracker, options, evicting.signal, report);
      const expired: PodState[] = [];
      const tiers = this.#evictAll(tracker.toEvict(), tracker, options, stop.signal, emit, flight);
      await Promise.all([
        tiers,
        this.#waitFor(tracker, options, stop.signal, emit, flight, report, (pods) => {
          expired.push(...pods);
          stop.abort(DrainOutcome.waitExpired);
        }),
        this.#waitGone(node, tracker, options, stop.signal),
      ])
        .catch((err) => {
          if (!stop.signal.aborted) throw err;
        })
        .finally(() => evicting.abort());
      if (tracker.left() === 0) {
        // Pods left terminating past skipWaitForDeleteTimeout stay on the node: their volumes are not waited for.
        const evicted = new Set(
          tracker.result().pods.flatMap((p) => (p.phase === PodPhase.gone ? [p.uid] : [])),
        );
        const attached = await this.#waitDetached(
          node,
          pods.filter((p) => evicted.has(p.metadata?.uid ?? '')),
          stop.signal,
        );
        if (attached.length === 0) return finish(DrainOutcome.drained);
        if (stop.signal.reason === DrainOutcome.aborted) return finish(DrainOutcome.aborted);
        const seconds = ((Date.now() - started) / 1000).toFixed(1);
        return {
          ...finish(DrainOutcome.timedOut),
          message: `timed-out after ${seconds}s: every pod gone, ${attached.length} volume(s) of evicted pods still attached to ${node}: ${describeAttached(attached)}`,
        };
      }
      if (stop.signal.reason === DrainOutcome.aborted) return finish(DrainOutcome.aborted);
      if (stop.signal.reason === DrainOutcome.waitExpired) {
        const seconds = ((Date.now() - started) / 1000).toFixed(1);
        const still = expired.map((p) => `${p.namespace}/${p.name} (${p.wait?.rule})`).join(', ');
        return {
          ...finish(DrainOutcome.waitExpired),
          message: `wait-expired after ${seconds}s: ${expired.length} pod(s) waited for still running when their wait ended, with afterMaxWait Fail: ${still}; they were not evicted`,
        };
      }
      const blocking = Object.keys(tracker.result().blockingPdbs);
      return finish(DrainOutcome.timedOut, await this.#pdbHolds(node, blocking));
    } finally {
      clearTimeout(timer);
      request.signal?.removeEventListener('abort', onAbort);
      stop.abort(DrainOutcome.aborted);
    }
  }

  /**
   * Waits until no VolumeAttachment holds a PersistentVolume of the evicted pods on the node; returns
   * those still attached when the signal ends the wait. A node without such volumes reads nothing.
   */
  async #waitDetached(node: string, evicted: V1Pod[], signal: AbortSignal) {
    const claims = claimsOf(evicted);
    if (claims.length === 0) return [];
    const volumes = new Set<string>();
    for (const claim of claims) {
      const [namespace, name] = claim.split('/') as [string, string];
      const pvc = await this.#core.readNamespacedPersistentVolumeClaim({ namespace, name }).catch((err) => {
        if (statusCode(err) === 404) return undefined;
        throw new Error(
          `reading PersistentVolumeClaim ${claim} of a pod evicted from ${node}: ${describeError(err)}`,
        );
      });
      if (pvc?.spec?.volumeName) volumes.add(pvc.spec.volumeName);
    }
    for (;;) {
      // resourceVersion 0: the API server's watch cache answers, not etcd (every draining node asks).
      const list = await this.#storage
        .listVolumeAttachment({ resourceVersion: '0' })
        .catch((err: unknown) => {
          throw new Error(`reading the VolumeAttachments of ${node}: ${describeError(err)}`);
        });
      const attached = stillAttached(list.items, node, volumes);
      if (attached.length === 0 || signal.aborted) return attached;
      await sleep(DETACH_POLL_MS, signal);
    }
  }

  /**
   * While PDBs keep refusing, says what holds them: first after a quarter of the timeout (at most 30 s,
   * so that a refusal a replacement soon answers goes unreported), then at that interval when it changed.
   */
  async #reportWaiting(
    node: string,
    tracker: ProgressTracker,
    options: DrainOptions,
    signal: AbortSignal,
    report: WaitingReport,
  ): Promise<void> {
    const quarter = options.timeoutSeconds > 0 ? (options.timeoutSeconds * 1000) / 4 : WAITING_REPORT_MAX_MS;
    const every = Math.min(quarter, WAITING_REPORT_MAX_MS);
    for (;;) {
      await sleep(every, signal);
      if (signal.aborted) return;
      const blocking = Object.keys(tracker.progress().blockingPdbs);
      if (blocking.length === 0) continue;
      const holds = await this.#pdbHolds(node, blocking);
      if (signal.aborted) return;
      report.pdbs(holds);
    }
  }

  /**
   * Waits for the pods the plan leaves running (waitFor): says which and until when at once and whenever
   * that changes, evicts each whose wait ended under Evict, and fails the drain (`fail`) when one's wait
   * ended under Fail. They finish or go as the pod watch (#waitGone) sees them.
   */
  async #waitFor(
    tracker: ProgressTracker,
    options: DrainOptions,
    signal: AbortSignal,
    emit: (e: DrainEvent) => void,
    flight: { now: number; max: number },
    report: WaitingReport,
    fail: (pods: PodState[]) => void,
  ): Promise<void> {
    const evictions: Promise<void>[] = [];
    try {
      while (!signal.aborted) {
        const waited = tracker.waitedFor();
        report.pods(waited.map((p) => describeWait(p, p.wait)));
        if (waited.length === 0) return;
        const due = waitsDue(waited, Date.now());
        if (due.fail.length > 0) {
          fail(waited.filter((p) => due.fail.includes(p.uid)));
          return;
        }
        const released = due.evict.flatMap((uid) => tracker.release(uid) ?? []);
        if (released.length > 0) {
          evictions.push(this.#evictAll(released, tracker, options, signal, emit, flight));
          continue;
        }
        await Promise.race([tracker.changed(), sleep((due.nextAt ?? Date.now()) - Date.now(), signal)]);
      }
    } finally {
      await Promise.all(evictions);
    }
  }

  /** Labels of every namespace, when a waitFor rule selects pods by their namespace's labels. */
  async #namespaceLabels(options: DrainOptions): Promise<Map<string, Record<string, string>>> {
    const labels = new Map<string, Record<string, string>>();
    if (!options.waitFor.some((r) => r.namespaceSelector)) return labels;
    let _continue: string | undefined;
    do {
      const page = await this.#core
        .listNamespace({ limit: options.chunkSize, _continue })
        .catch((err: unknown) => {
          throw new Error(`reading Namespaces for drain.waitFor's namespaceSelector: ${describeError(err)}`);
        });
      for (const ns of page.items) labels.set(ns.metadata?.name ?? '', ns.metadata?.labels ?? {});
      _continue = page.metadata?._continue || undefined;
    } while (_continue);
    return labels;
  }

  /** Each PDB read as it stands now, with its pods: what holds it (a read that fails says so instead). */
  async #pdbHolds(node: string, keys: string[]): Promise<string[]> {
    return Promise.all(
      keys.map(async (key) => {
        const [namespace, name] = key.split('/') as [string, string];
        try {
          const list = await this.#policy.listNamespacedPodDisruptionBudget({
            namespace,
            fieldSelector: `metadata.name=${name}`,
          });
          const pdb = list.items[0];
          if (!pdb) return `${key}: gone since it refused the eviction`;
          const selector = pdb.spec?.selector;
          const pods = selector
            ? (await this.#core.listNamespacedPod({ namespace, labelSelector: selectorText(selector) })).items
            : [];
          return pdbHold({ key, pdb, pods }, node);
        } catch (err) {
          return `${key}: could not be read to say why (${describeError(err)})`;
        }
      }),
    );
  }

  /**
   * Evicts with at most `concurrency` requests in flight. A refused pod is retried with backoff, or as
   * soon as a watch sees its PDB allow a disruption again.
   */
  async #evictAll(
    pods: PodState[],
    tracker: ProgressTracker,
    options: DrainOptions,
    signal: AbortSignal,
    emit: (e: DrainEvent) => void,
    flight: { now: number; max: number },
  ): Promise<void> {
    let queue = new RetryQueue<PodState>([], RETRY_MIN_MS);
    const pdbWatches = new Map<string, AbortController | undefined>();
    let finished = false;
    const watchPdb = (key: string) => {
      if (pdbWatches.has(key) || signal.aborted || finished) return;
      pdbWatches.set(key, undefined);
      const [namespace, name] = key.split('/') as [string, string];
      new Watch(this.#kubeconfig)
        .watch(
          `/apis/policy/v1/namespaces/${namespace}/poddisruptionbudgets`,
          { fieldSelector: `metadata.name=${name}` },
          (_type, pdb: V1PodDisruptionBudget) => {
            if ((pdb.status?.disruptionsAllowed ?? 0) > 0) queue.wake(key);
          },
          () => pdbWatches.delete(key),
        )
        .then((controller) => {
          if (signal.aborted || finished) controller.abort();
          else pdbWatches.set(key, controller);
        })
        .catch(() => pdbWatches.delete(key));
    };
    const worker = async () => {
      for (let item = await queue.take(signal); item; item = await queue.take(signal)) {
        const pod = item.value;
        if (tracker.isDone(pod.uid)) continue;
        flight.now++;
        flight.max = Math.max(flight.max, flight.now);
        try {
          await this.#evictOne(pod, options);
          tracker.evicted(pod.uid);
          emit({ type: 'evicted', pod });
        } catch (err) {
          const code = statusCode(err);
          if (code === 404 || code === 409) {
            // 404: already gone. 409: the UID precondition failed, so a new pod now has its name.
            tracker.gone(pod.uid);
            continue;
          }
          const name = code === 429 ? blockingPdbName(err) : undefined;
          const pdb = name ? `${pod.namespace}/${name}` : undefined;
          const reason =
            code === 429 ? `blocked by PodDisruptionBudget ${pdb ?? '(unnamed)'}` : describeError(err);
          tracker.blocked(pod.uid, reason, pdb);
          emit({ type: 'retry', pod, reason, refusedByPdb: code === 429, retryInMs: item.delay });
          if (pdb) watchPdb(pdb);
          queue.push({
            value: pod,
            pdb,
            notBefore: Date.now() + item.delay,
            delay: Math.min(item.delay * 2, RETRY_MAX_MS),
          });
        } finally {
          flight.now--;
        }
      }
    };
    try {
      // Lower priorities first, each tier gone before the next is evicted: the system-critical pods a
      // node's workloads lean on (DNS, storage, network agents) leave last, as kubelet shuts down.
      for (const tier of evictionTiers(pods)) {
        if (signal.aborted) return;
        queue = new RetryQueue(tier, RETRY_MIN_MS);
        await Promise.all(Array.from({ length: Math.min(options.concurrency, queue.size) }, worker));
        while (!signal.aborted && tier.some((p) => !tracker.isDone(p.uid)))
          await Promise.race([tracker.changed(), sleep(RESYNC_MS, signal)]);
      }
    } finally {
      finished = true;
      for (const controller of pdbWatches.values()) controller?.abort();
    }
  }

  async #evictOne(
    pod: { namespace: string; name: string; uid: string },
    options: DrainOptions,
  ): Promise<void> {
    const deleteOptions = {
      preconditions: { uid: pod.uid },
      ...(options.gracePeriodSeconds >= 0 ? { gracePeriodSeconds: options.gracePeriodSeconds } : {}),
    };
    if (options.disableEviction) {
      await this.#core.deleteNamespacedPod({ name: pod.name, namespace: pod.namespace, body: deleteOptions });
      return;
    }
    await this.#core.createNamespacedPodEviction({
      name: pod.name,
      namespace: pod.namespace,
      body: {
        apiVersion: 'policy/v1',
        kind: 'Eviction',
        metadata: { name: pod.name, namespace: pod.namespace },
        deleteOptions,
      },
    });
  }

  /**
   * Marks pods gone as the watch reports their deletion (or a new UID under their name); a periodic
   * re-list covers a watch that broke. Stops waiting for a pod whose deletion is older than
   * skipWaitForDeleteTimeout. Resolves when nothing is left.
   */
  async #waitGone(
    node: string,
    tracker: ProgressTracker,
    options: DrainOptions,
    signal: AbortSignal,
  ): Promise<void> {
    const watch = new Watch(this.#kubeconfig);
    let watching: AbortController | undefined;
    // When each pod's deletion began (its deletionTimestamp), as the watch and the re-lists saw it.
    const deleting = new Map<string, string | Date>();
    const seen = (pod: V1Pod) => {
      const uid = pod.metadata?.uid;
      const at = pod.metadata?.deletionTimestamp;
      if (uid && at) deleting.set(uid, at);
      if (uid && isFinished(pod)) tracker.finished(uid);
    };
    const skipPastTimeout = () => {
      const now = new Date();
      for (const uid of tracker.waitingUids()) {
        const at = deleting.get(uid);
        const reason = at && pastDeleteTimeout(at, now, options.skipWaitForDeleteTimeoutSeconds);
        if (reason) tracker.abandon(uid, reason);
      }
    };
    const resync = async () => {
      const pods = await podsOnNode(this.#core, node);
      for (const p of pods) seen(p);
      const present = new Set(pods.map((p) => p.metadata?.uid));
      for (const uid of tracker.waitingUids()) if (!present.has(uid)) tracker.gone(uid);
    };
    const startWatch = async () => {
      if (signal.aborted || tracker.left() === 0) return;
      try {
        watching = await watch.watch(
          '/api/v1/pods',
          { fieldSelector: `spec.nodeName=${node}`, allowWatchBookmarks: true },
          (type, obj: V1Pod) => {
            if (type === 'DELETED' && obj.metadata?.uid) tracker.gone(obj.metadata.uid);
            else seen(obj);
          },
          () => {
            watching = undefined;
          },
        );
      } catch {
        watching = undefined;
      }
    };
    try {
      await startWatch();
      // Deletions between the pod list and the watch's start are only visible to a list.
      await resync();
      while (!signal.aborted && tracker.left() > 0) {
        skipPastTimeout();
        if (tracker.left() === 0) break;
        // With skipWaitForDeleteTimeout, look again each second: a deletion may pass it between events.
        const every = options.skipWaitForDeleteTimeoutSeconds > 0 ? SKIP_WAIT_CHECK_MS : RESYNC_MS;
        await Promise.race([tracker.changed(), sleep(every, signal)]);
        if (signal.aborted || tracker.left() === 0) break;
        if (tracker.sinceChangeMs() >= RESYNC_MS) {
          await resync().catch(() => {});
          if (!watching) await startWatch();
        }
      }
    } finally {
      watching?.abort();
    }
  }
}
