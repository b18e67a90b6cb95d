/**
 * Runs each node's step of a decision in the background, so one slow write holds up no other node and
 * no next pass: one step per node at a time, a 409 re-read and re-decided on the spot, a refused write
 * followed by a backoff for that node alone. Steps of nodes in an attempt have writers of their own, so
 * the many writes that only record why a node waits never queue ahead of a grant.
 */
import { CoreV1Api } from '@kubernetes/client-node';
import { Phase } from '../api/phases.ts';
import type { KubeLog } from '../kube/backoff.ts';
import { describeError, statusCode } from '../kube/errors.ts';
import { isFenced } from '../kube/fence.ts';
import type { PooledKubeConfig } from '../kube/pooled-kubeconfig.ts';
import { Limiter } from '../util/parallel.ts';
import type { Health } from './decide/health-gate.ts';
import type { Ledger } from './decide/ledger-view.ts';
import { outsideAttempt } from './decide/need.ts';
import type { NodeView } from './decide/node-view.ts';
import { type Decider, isLedgerChange, type NodeStep, type PassDecision } from './decider.ts';
import type { OperatorMetrics } from './metrics.ts';
import { NodeBackoff } from './write/node-backoff.ts';
import { Conflict, type NodeCache } from './write/node-writer.ts';

/**
 * Steps of nodes in an attempt in flight: enough that a first wave of admissions starts draining
 * together, well under the API server's default inflight limit of 400.
 */
const NODE_WRITERS = 64;
/**
 * Handovers in flight: writers and connections of their own, so a freed slot's next node never queues
 * behind the completions, Events and other writes that end a wave at the same moment.
 */
const HANDOVER_WRITERS = 16;
/** Writes of nodes outside an attempt (Pending, why they wait) in flight: they must not crowd out attempts. */
const REASON_WRITERS = 4;
/** Writes a node step tries (re-reading and re-deciding after each 409) before leaving it to the next pass. */
export const CONFLICT_RETRIES = 3;
/** Where a node step's writes go: at most `writers` at once, over `core`'s connections. */
export interface Lane {
  writers: Limiter;
  core: CoreV1Api;
}

/** Asks the control loop for a pass: now, after a delay, or after its rate-limited backoff. */
export interface Wake {
  now(): void;
  after(ms: number): void;
  backoff(): void;
}

/**
 * When a step redone after a conflict is decided and written: an admission whose node write did not land
 * is the same attempt, begun when it was decided (its window, budget and gates judged then), so its phase
 * is written with that time; anything else is decided anew now. Pure.
 */
export function redecidedAt(action: NodeStep, fresh: NodeView, decidedAt: Date, now: Date): Date {
  return action.type === 'admit' && outsideAttempt(fresh) ? decidedAt : now;
}

/** A refusal the same request would meet again: a 4xx other than conflict, gone, or too many requests. */
function refusal(err: unknown): boolean {
  const code = statusCode(err) ?? 0;
  return code >= 400 && code < 500 && code !== 409 && code !== 404 && code !== 429;
}

export interface NodeStepsOptions {
  kubeconfig: PooledKubeConfig;
  core: CoreV1Api;
  nodes: NodeCache;
  decider: Decider;
  /** Does a node's part of an action; true when its attempt ended and its slot is to be freed. */
  apply: (action: NodeStep, view: NodeView, now: Date, core: CoreV1Api) => Promise<boolean>;
  /** Whether a drain for the node runs in this process. */
  draining: (node: string) => boolean;
  /** Whether another write of the node is in flight (its lifecycle conditions): its step waits. */
  held: (node: string) => boolean;
  /** The ledger and health the last pass decided on: a node is re-decided on them after a conflict. */
  lastPass: () => { ledger: Ledger; health: ReadonlyMap<string, Health> } | undefined;
  acting: () => boolean;
  wake: Wake;
  log: KubeLog;
  metrics?: OperatorMetrics;
}

export class NodeSteps {
  readonly #o: NodeStepsOptions;
  /** Node steps running (one per node at most). */
  readonly #stepping = new Map<string, Promise<void>>();
  /** Nodes whose last write failed for good (holdBack): no step for them before `until`. */
  readonly #heldBack = new NodeBackoff();
  readonly #attemptLane: Lane;
  readonly #reasonLane: Lane;
  readonly handoverLane: Lane;
  /** A step ended an attempt since the last pass: the next one runs at once. */
  #slotsFreed = false;

  constructor(options: NodeStepsOptions) {
    this.#o = options;
    this.#attemptLane = { writers: new Limiter(NODE_WRITERS), core: options.core };
    this.#reasonLane = { writers: new Limiter(REASON_WRITERS), core: options.core };
    this.handoverLane = {
      writers: new Limiter(HANDOVER_WRITERS),
      core: options.kubeconfig
        .separatePool({ requestConnections: HANDOVER_WRITERS })
        .makeApiClient(CoreV1Api),
    };
  }

  /** Whether a step of the node runs now. */
  has(node: string): boolean {
    return this.#stepping.has(node);
  }

  get size(): number {
    return this.#stepping.size;
  }

  /** Marks that an attempt ended outside a step (a drain's outcome): the next pass runs at once. */
  freed(): void {
    this.#slotsFreed = true;
  }

  /** Whether an attempt ended since the last call. */
  takeFreed(): boolean {
    const freed = this.#slotsFreed;
    this.#slotsFreed = false;
    return freed;
  }

  /** Resolves once every running step has settled. */
  async settled(): Promise<void> {
    await Promise.allSettled(this.#stepping.values());
  }

  /**
   * Starts each node's step of a pass's decision. A node has one step at a time, and a decision made on
   * a version of the node that a step has changed since is skipped: the next pass decides on what that
   * step wrote.
   */
  dispatch(decision: PassDecision, byName: ReadonlyMap<string, NodeView>, now: Date): void {
    const attempts = new Set(decision.holders);
    for (const action of decision.actions) {
      if (isLedgerChange(action) || this.#stepping.has(action.node)) continue;
      if (action.type === 'drain' && this.#o.draining(action.node)) continue;
      if (this.#heldBack.holds(action.node) || this.#o.held(action.node)) continue;
      const view = byName.get(action.node);
      const cached = this.#o.nodes.get(action.node)?.metadata?.resourceVersion;
      // An admission goes even so: its slot is taken, and its write, conditional on the version decided
      // on, conflicts and is redone at once with the time it was decided (a later pass would redo it later).
      if (!view || (cached !== view.resourceVersion && action.type !== 'admit')) continue;
      const inAttempt = action.type === 'admit' || attempts.has(action.node);
      this.start(action, view, now, inAttempt ? this.#attemptLane : this.#reasonLane);
    }
  }

  start(action: NodeStep, view: NodeView, now: Date, lane: Lane): void {
    const admission =
      action.type === 'admit' || (action.type === 'transition' && action.to === Phase.beforeReboot);
    const { admitting } = this.#o.decider;
    if (admission) admitting.add(view.name);
    const running = lane.writers
      .run(() => this.#run(action, view, now, lane.core))
      .catch((err) => this.#failed(view.name, action, err))
      .finally(() => {
        this.#stepping.delete(view.name);
        if (admission) admitting.delete(view.name);
      });
    this.#stepping.set(view.name, running);
  }

  /**
   * A node whose write the API server refused (a 4xx other than a conflict: the same write would be
   * refused again), or whose drain could not be recorded, is left alone for a backoff that grows with
   * each failure in a row: never a write storm on one bad value. Its next step that lands resets it.
   */
  holdBack(name: string, err: unknown, what: string): void {
    const { failures, delayMs } = this.#heldBack.failed(name);
    if (refusal(err)) this.#o.metrics?.writesRefused.inc();
    // A node deleted meanwhile needs nothing from a person: its next pass no longer sees it.
    const gone = statusCode(err) === 404;
    this.#o.log(
      gone ? 'info' : 'error',
      `${what} failed${gone ? ': the node is gone' : ''}; retrying this node after a backoff`,
      {
        node: name,
        error: describeError(err),
        failures,
        retryInMs: delayMs,
      },
    );
    this.#o.wake.after(delayMs);
  }

  /** The node's write landed: its backoff, if any, is over. */
  landed(name: string): void {
    this.#heldBack.landed(name);
  }

  /**
   * The step, and on a 409 a re-read and a re-decision. The node is read now (the watch may lag the
   * write that beat ours by seconds on a busy API server) and the cache takes it. A node in an attempt
   * is re-decided here and moved on at once: its step depends on nothing but the node, its slot and its
   * health — right after the agent's "rebooting", the host's own status writes make every transition to
   * Rebooting conflict, and waiting for a pass would cost a second.
   */
  async #run(action: NodeStep, view: NodeView, now: Date, core: CoreV1Api): Promise<void> {
    let step: NodeStep | undefined = action;
    let on = view;
    let at = now;
    for (let attempt = 1; step && this.#o.acting(); attempt++) {
      try {
        if (await this.#o.apply(step, on, at, core)) this.#slotsFreed = true;
        this.landed(view.name);
        break;
      } catch (err) {
        if (!(err instanceof Conflict)) throw err;
        this.#o.metrics?.conflicts.inc();
        const fresh = await core.readNode({ name: on.name }).catch((e: unknown) => {
          if (statusCode(e) === 404) return undefined; // deleted: the watch removes it from the cache
          throw e;
        });
        if (!fresh) break;
        this.#o.nodes.upsertFromWrite(fresh);
        if (attempt >= CONFLICT_RETRIES) break;
        on = this.#o.decider.view(fresh);
        at = redecidedAt(action, on, now, new Date());
        step = this.#redecide(on, at);
      }
    }
    this.#o.wake.now();
  }

  /** The node's step now, on the last pass's ledger and health; undefined when it holds no slot. */
  #redecide(view: NodeView, now: Date): NodeStep | undefined {
    const last = this.#o.lastPass();
    const slot = last?.ledger.slots[view.name];
    if (!last || !slot) return undefined;
    return this.#o.decider.stepOf(view, slot, last.health, now);
  }

  #failed(name: string, action: NodeStep, err: unknown): void {
    // Not leading any more: the step ends here, as it should; the new leader decides on the node.
    if (isFenced(err)) {
      this.#o.log('info', 'node step dropped: this replica does not lead now', {
        node: name,
        action: action.type,
      });
      return;
    }
    if (refusal(err)) {
      this.holdBack(name, err, `node step ${action.type}`);
      return;
    }
    this.#o.log('error', 'node step failed; retrying', {
      node: name,
      action: action.type,
      error: describeError(err),
    });
    this.#o.wake.backoff();
  }
}
