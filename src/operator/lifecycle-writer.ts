/**
 * Writes each node's lifecycle conditions (lifecycle-conditions.ts decides them) after a pass, through
 * the status subresource, only where they differ from what the node carries: one strategic merge patch
 * of nuo's own conditions, conditional on the resourceVersion they were compared on, a few in flight, one
 * per node. A 409 is left to the next pass, which compares again; a refused write holds that node back
 * with a growing backoff. Never a write storm: nothing is written while nothing changes.
 */
import type { CoreV1Api, V1Node } from '@kubernetes/client-node';
import type { Phase } from '../api/phases.ts';
import { backoffDelay, type KubeLog } from '../kube/backoff.ts';
import { describeError, statusCode } from '../kube/errors.ts';
import { strategicMergePatch } from '../kube/patch.ts';
import { Limiter } from '../util/parallel.ts';
import type { PassDecision } from './decider.ts';
import type { Ledger, Slot } from './ledger.ts';
import { type ConditionPatch, lifecyclePatch, wantedConditions } from './lifecycle-conditions.ts';
import type { OperatorMetrics } from './metrics.ts';
import type { NodeView } from './node-view.ts';
import type { NodeCache } from './node-writer.ts';

/** Condition writes in flight: few, behind the writes that move attempts on. */
const WRITERS = 4;
const HOLD_BACK = { initialMs: 1000, maxMs: 300_000 } as const;

export interface LifecycleWriterOptions {
  core: CoreV1Api;
  nodes: NodeCache;
  /** A step of the node runs: the pass after its write compares the node again. */
  busy: (node: string) => boolean;
  /** Asks for a pass (a node step held back for a condition write may go now). */
  wake: () => void;
  log: KubeLog;
  metrics?: OperatorMetrics;
}

export class LifecycleWriter {
  readonly #o: LifecycleWriterOptions;
  readonly #writers = new Limiter(WRITERS);
  readonly #writing = new Set<string>();
  /** Nodes whose step waited for a condition write: a pass follows when it lands. */
  readonly #deferred = new Set<string>();
  readonly #heldBack = new Map<string, { failures: number; until: number }>();
  /** Nodes whose conditions were announced ahead of the write of their phase, until that write is done. */
  readonly #ahead = new Set<string>();

  constructor(options: LifecycleWriterOptions) {
    this.#o = options;
  }

  /**
   * Whether a condition write of the node is in flight: its node step waits for the next pass, so that
   * the two writes, each conditional on the version it read, do not make each other conflict.
   */
  holds(node: string): boolean {
    if (!this.#writing.has(node)) return false;
    this.#deferred.add(node);
    return true;
  }

  /**
   * After a pass: each node's conditions as its phase, its slot in `ledger` and its pool say, written in
   * the background where they changed. Busy nodes are left to the pass after their step or drain.
   */
  update(decision: PassDecision, ledger: Ledger, now: Date): void {
    const busy = (node: string) => this.#ahead.has(node) || this.#o.busy(node);
    for (const n of decision.plan.pools.flatMap((p) => p.nodes)) {
      if (busy(n.name)) continue;
      this.#sync(n.name, n.resourceVersion, (node) =>
        lifecyclePatch(node.status?.conditions, wantedConditions(n, ledger.slots[n.name], true, now), now),
      );
    }
    // Nodes no policy selects carry none of nuo's conditions (nor anything else of nuo's).
    for (const name of [...decision.plan.unmatched, ...decision.plan.conflicts.keys()]) {
      if (busy(name)) continue;
      this.#sync(name, undefined, (node) => lifecyclePatch(node.status?.conditions, [], now));
    }
  }

  /**
   * Publishes, before a step that starts the maintenance itself (the grant, a Plan's Job), the conditions
   * of the phase that step leads to, so other controllers see MaintenanceInProgress before the node goes
   * down rather than a pass later. Returns the node as written (the step's own write is conditional on
   * its version), or undefined when nothing had to change or the write failed: the step goes on (its own
   * conditional write meets any conflict), and the next pass publishes them.
   */
  async announce(
    view: NodeView,
    phase: Phase,
    slot: Slot | undefined,
    core: CoreV1Api,
  ): Promise<V1Node | undefined> {
    const node = this.#o.nodes.get(view.name);
    const rv = view.resourceVersion;
    if (node?.metadata?.resourceVersion !== rv) return undefined;
    const now = new Date();
    const wanted = wantedConditions({ ...view, state: phase }, slot, true, now);
    const conditions = lifecyclePatch(node.status?.conditions, wanted, now);
    if (conditions.length === 0) return undefined;
    this.#writing.add(view.name);
    try {
      const written = await core.patchNodeStatus(
        { name: view.name, body: { metadata: { resourceVersion: rv }, status: { conditions } } },
        strategicMergePatch,
      );
      this.#landed(view.name, written);
      return written;
    } catch (err) {
      this.#failed(view.name, err);
      return undefined;
    } finally {
      this.#writing.delete(view.name);
    }
  }

  /**
   * Runs a step that announces the conditions of the phase it then writes: meanwhile no pass writes the
   * conditions of the phase the node still shows, which would undo the announcement.
   */
  async ahead<T>(node: string, step: () => Promise<T>): Promise<T> {
    this.#ahead.add(node);
    try {
      return await step();
    } finally {
      this.#ahead.delete(node);
    }
  }

  /** A new leadership compares with what it reads, and forgives the last one's refusals. */
  clear(): void {
    this.#heldBack.clear();
  }

  /** Compares the cached node (at the version decided on, if given) and writes the difference. */
  #sync(name: string, decidedOn: string | undefined, patchOf: (node: V1Node) => ConditionPatch[]): void {
    if (this.#writing.has(name)) return;
    const held = this.#heldBack.get(name);
    if (held && performance.now() < held.until) return;
    const node = this.#o.nodes.get(name);
    const rv = node?.metadata?.resourceVersion;
    if (!node || rv === undefined || (decidedOn !== undefined && rv !== decidedOn)) return;
    const conditions = patchOf(node);
    if (conditions.length === 0) return;
    this.#writing.add(name);
    void this.#writers
      .run(() =>
        this.#o.core.patchNodeStatus(
          { name, body: { metadata: { resourceVersion: rv }, status: { conditions } } },
          strategicMergePatch,
        ),
      )
      .then((written) => this.#landed(name, written))
      .catch((err: unknown) => this.#failed(name, err))
      .finally(() => {
        this.#writing.delete(name);
        if (this.#deferred.delete(name)) this.#o.wake();
      });
  }

  #landed(name: string, written: V1Node): void {
    this.#o.nodes.upsertFromWrite(written);
    this.#heldBack.delete(name);
    this.#o.metrics?.nodeConditionWrites.inc();
  }

  /** Changed or gone meanwhile: the next pass compares again. Anything else: that node backs off. */
  #failed(name: string, err: unknown): void {
    const code = statusCode(err);
    if (code === 409 || code === 404) return;
    const failures = (this.#heldBack.get(name)?.failures ?? 0) + 1;
    const delayMs = Math.round(backoffDelay(failures, HOLD_BACK));
    this.#heldBack.set(name, { failures, until: performance.now() + delayMs });
    this.#o.log(
      'warn',
      "writing the node's lifecycle conditions failed; retrying this node after a backoff",
      {
        node: name,
        error: describeError(err),
        failures,
        retryInMs: delayMs,
      },
    );
  }
}
