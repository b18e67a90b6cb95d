/**
 * Writes each node's lifecycle conditions (lifecycle-conditions.ts decides them) after a pass, through
 * the status subresource, only where they differ from what the node carries: one strategic merge patch
 * of nuo's own conditions, conditional on the resourceVersion they were compared on, a few in flight, one
 * per node. A 409 is left to the next pass, which compares again; a refused write holds that node back
 * with a growing backoff. Never a write storm: nothing is written while nothing changes.
 */
import type { CoreV1Api, V1Node } from '@kubernetes/client-node';
import { Annotations } from '../../api/keys.ts';
import type { Phase } from '../../api/phases.ts';
import type { KubeLog } from '../../kube/backoff.ts';
import { describeError, statusCode } from '../../kube/errors.ts';
import { strategicMergePatch } from '../../kube/patch.ts';
import { Limiter } from '../../util/parallel.ts';
import type { Ledger } from '../decide/ledger-view.ts';
import type { NodeView } from '../decide/node-view.ts';
import type { Slot } from '../decide/slot.ts';
import type { PassDecision } from '../decider.ts';
import type { OperatorMetrics } from '../metrics.ts';
import type { Wake } from '../node-steps.ts';
import { lifecyclePatch, type WantedCondition, wantedConditions } from './lifecycle-conditions.ts';
import { NodeBackoff } from './node-backoff.ts';
import type { NodeCache } from './node-writer.ts';

/** Condition writes in flight: few, behind the writes that move attempts on. */
const WRITERS = 4;
/** Tries of an announcement that meets a 409 (each after reading the node again). */
const ANNOUNCE_TRIES = 3;

export interface LifecycleWriterOptions {
  core: CoreV1Api;
  nodes: NodeCache;
  /** A step of the node runs: the pass after its write compares the node again. */
  busy: (node: string) => boolean;
  /** Asks for a pass: now (a node step held back for a condition write may go), or after a backoff. */
  wake: Pick<Wake, 'now' | 'after'>;
  log: KubeLog;
  metrics?: OperatorMetrics;
}

export class LifecycleWriter {
  readonly #o: LifecycleWriterOptions;
  readonly #writers = new Limiter(WRITERS);
  readonly #writing = new Set<string>();
  /** Nodes whose step waited for a condition write: a pass follows when it lands. */
  readonly #deferred = new Set<string>();
  readonly #heldBack = new NodeBackoff();
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
   * the background where they changed. A node whose step runs, or whose conditions were announced ahead
   * of its phase, is left to a later pass. Returns whether a node's conditions are still to be written
   * (left for later, or in flight): the control loop then looks again soon, even in an idle cluster.
   */
  update(decision: PassDecision, ledger: Ledger, now: Date): boolean {
    let pending = false;
    for (const n of decision.plan.pools.flatMap((p) => p.nodes)) {
      const wanted = wantedConditions(n, ledger.slots[n.name], true, now);
      if (this.#sync(n.name, n.resourceVersion, wanted, now)) pending = true;
    }
    // Nodes no policy selects carry none of nuo's conditions (nor anything else of nuo's).
    for (const name of [...decision.plan.unmatched, ...decision.plan.conflicts.keys()]) {
      if (this.#sync(name, undefined, [], now)) pending = true;
    }
    return pending;
  }

  /**
   * Publishes, before a step that starts something (a drain, the grant, a Plan's Job), the conditions of
   * the phase that step is in or leads to, so other controllers see DrainInProgress before the first
   * eviction and MaintenanceInProgress before the node goes down, rather than a pass later. A 409 (the
   * agent's own writes, say) is read again and retried while the node still shows the step's phase.
   * Returns the node as written on the step's own version of it (the step's write is conditional on the
   * version it decided on, now this one), else undefined: nothing to write, a newer version of the node
   * (the step's write then conflicts and the step reads and checks it again), or a failure (the step
   * goes on; a later pass publishes them).
   */
  async announce(
    view: NodeView,
    phase: Phase,
    slot: Slot | undefined,
    core: CoreV1Api,
  ): Promise<V1Node | undefined> {
    const { name } = view;
    const now = new Date();
    const wanted = wantedConditions({ ...view, state: phase }, slot, true, now);
    let node = this.#o.nodes.get(name);
    this.#writing.add(name);
    try {
      for (let tries = 1; node && node.metadata?.annotations?.[Annotations.state] === view.state; tries++) {
        const conditions = lifecyclePatch(node.status?.conditions, wanted, now);
        if (conditions.length === 0) return undefined;
        const resourceVersion = node.metadata?.resourceVersion;
        try {
          const written = await core.patchNodeStatus(
            { name, body: { metadata: { resourceVersion }, status: { conditions } } },
            strategicMergePatch,
          );
          this.#landed(name, written);
          // Only on the version the step decided on: a newer one is for the step to read and check.
          return resourceVersion === view.resourceVersion ? written : undefined;
        } catch (err) {
          if (statusCode(err) !== 409 || tries >= ANNOUNCE_TRIES) throw err;
        }
        node = await core.readNode({ name });
        this.#o.nodes.upsertFromWrite(node);
      }
      return undefined;
    } catch (err) {
      this.#failed(name, err);
      return undefined;
    } finally {
      this.#done(name);
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

  /**
   * Compares the cached node (at the version decided on, if given) with `wanted` and writes the
   * difference. Returns whether one is left to write: skipped now (busy, a newer version cached) or in
   * flight. A node held back after a failed write is not: its backoff asks for the pass that retries it.
   */
  #sync(name: string, decidedOn: string | undefined, wanted: readonly WantedCondition[], now: Date): boolean {
    if (this.#heldBack.holds(name)) return false;
    const node = this.#o.nodes.get(name);
    const rv = node?.metadata?.resourceVersion;
    if (!node || rv === undefined) return false;
    const conditions = lifecyclePatch(node.status?.conditions, wanted, now);
    if (conditions.length === 0) return false;
    const busy = this.#writing.has(name) || this.#ahead.has(name) || this.#o.busy(name);
    if (busy || (decidedOn !== undefined && rv !== decidedOn)) return true;
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
      .finally(() => this.#done(name));
    return true;
  }

  /** A write of the node ended: a step it held back may go now. */
  #done(name: string): void {
    this.#writing.delete(name);
    if (this.#deferred.delete(name)) this.#o.wake.now();
  }

  #landed(name: string, written: V1Node): void {
    this.#o.nodes.upsertFromWrite(written);
    this.#heldBack.landed(name);
    this.#o.metrics?.nodeConditionWrites.inc();
  }

  /** Changed or gone meanwhile: the next pass compares again. Anything else: that node backs off. */
  #failed(name: string, err: unknown): void {
    const code = statusCode(err);
    if (code === 409 || code === 404) return;
    const { failures, delayMs } = this.#heldBack.failed(name);
    this.#o.wake.after(delayMs);
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
