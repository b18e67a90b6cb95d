/**
 * Runs the drain engine for nodes in Draining, one drain per node, each aborted when this replica stops
 * leading; reports each outcome to the operator, which records it (a grant, or an abort).
 */
import type { Drainer, DrainResult } from '../../drain/evict.ts';
import { DrainOutcome } from '../../drain/evict.ts';
import type { WaitFor } from '../../drain/wait-for.ts';
import type { KubeLog } from '../../kube/backoff.ts';
import type { Fence } from '../../kube/fence.ts';
import type { OperatorConfig } from '../config.ts';
import type { OperatorMetrics } from '../metrics.ts';

export interface DrainRunnerOptions {
  drainer: Drainer;
  /** Every request of a drain is dropped once the drain is aborted, even one already queued. */
  fence: Fence;
  config: OperatorConfig;
  log: KubeLog;
  metrics?: OperatorMetrics;
  /** The current leadership's signal: a drain started under it ends with it. */
  leading: () => AbortSignal | undefined;
  acting: () => boolean;
  /** Records a drain's outcome (not called for an aborted drain, nor once leadership is lost). */
  record: (node: string, result: DrainResult, refusedByPdb: number) => Promise<void>;
  /** Recording failed: the node stays Draining and a later pass drains it again (nothing left to evict). */
  recordFailed: (node: string, err: unknown) => void;
  /** The drain settings of the node's pool. */
  settings: (node: string) => DrainSettings;
  /**
   * The drain waits on pods it waits for, or PodDisruptionBudgets keep it waiting (`blocked`): which pods
   * until when, what holds each PDB (said again when it changes).
   */
  waiting: (node: string, holds: string[], blocked: boolean) => void;
  /** A drain ended, however: a pass may have something to do. */
  ended: (node: string) => void;
}

/** How a pool's nodes are drained (an UpdatePolicy's `drain`). */
export interface DrainSettings {
  timeoutMs: number;
  gracePeriodSeconds: number;
  deleteEmptyDirData: boolean;
  force: boolean;
  podSelector: string;
  /** Leave DaemonSet pods in place (default); false refuses them, as kubectl drain without the flag. */
  ignoreDaemonSets?: boolean;
  /** Pods whose deletion began longer ago than this are not waited for (0, the default: all are). */
  skipWaitForDeleteTimeoutSeconds?: number;
  /** Pods waited for instead of evicted, from when the node began draining (drain.waitFor). */
  waitFor?: WaitFor[];
  /** Retry (the default) or Skip the node after `afterAttempts` failed drains in a row. */
  onFailure?: { action: 'Retry' | 'Skip'; afterAttempts: number };
}

export class DrainRunner {
  readonly #o: DrainRunnerOptions;
  readonly #running = new Map<string, AbortController>();

  constructor(options: DrainRunnerOptions) {
    this.#o = options;
  }

  /** Nodes with a drain running here. */
  running(): ReadonlySet<string> {
    return new Set(this.#running.keys());
  }

  has(node: string): boolean {
    return this.#running.has(node);
  }

  /** Ends the node's drain, if one runs here (its attempt ended). */
  abort(node: string): void {
    this.#running.get(node)?.abort();
  }

  /** Ends every drain in flight (leadership lost, or shutdown). */
  abortAll(): void {
    for (const controller of this.#running.values()) controller.abort();
  }

  /** The drain engine's options for the node: its pool's settings, this process's concurrency. */
  #options(node: string) {
    const c = this.#o.config;
    const s = this.#o.settings(node);
    return {
      force: s.force,
      ignoreDaemonSets: s.ignoreDaemonSets !== false,
      skipWaitForDeleteTimeoutSeconds: s.skipWaitForDeleteTimeoutSeconds ?? 0,
      deleteEmptyDirData: s.deleteEmptyDirData,
      gracePeriodSeconds: s.gracePeriodSeconds,
      timeoutSeconds: Math.ceil(s.timeoutMs / 1000),
      concurrency: c.drainConcurrency,
      podSelector: s.podSelector,
      waitFor: s.waitFor ?? [],
    };
  }

  /**
   * `cordoned`: the write that started it made the node unschedulable (or found it so). `since`: when the
   * node entered Draining, from which its waits for pods count (a drain started again keeps them).
   */
  start(node: string, { cordoned = false, since }: { cordoned?: boolean; since?: Date } = {}): void {
    const controller = new AbortController();
    this.#o.leading()?.addEventListener('abort', () => controller.abort(), { once: true });
    this.#running.set(node, controller);
    this.#o.log('info', 'draining', { node });
    // Evictions a PDB refused: where a slow drain's time went (logged with the grant, and a metric).
    let refused = 0;
    this.#o.fence
      .run(controller.signal, () =>
        this.#o.drainer.drain({
          node,
          cordoned,
          ...(since ? { since } : {}),
          signal: controller.signal,
          onEvent: (e) => {
            if (e.type === 'retry' && e.refusedByPdb) refused++;
            if (e.type === 'waiting') this.#o.waiting(node, e.holds, e.blocked);
          },
          options: this.#options(node),
        }),
      )
      .then(async (result) => {
        const m = this.#o.metrics;
        m?.drainSeconds.observe({ outcome: result.outcome }, result.elapsedMs / 1000);
        m?.evictions.inc(result.pods.filter((p) => p.phase === 'gone').length);
        m?.evictionsRefused.inc(refused);
        if (!this.#o.acting() || result.outcome === DrainOutcome.aborted) return;
        await this.#o.record(node, result, refused);
      })
      .catch((err) => this.#o.recordFailed(node, err))
      .finally(() => {
        this.#running.delete(node);
        this.#o.ended(node);
      });
  }
}
