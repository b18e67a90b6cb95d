/**
 * One reconcile pass, level-triggered: read the ledger and the node cache, decide(), take and free slots
 * in one conditional ledger write, start each node's step, and say when to look again. The control loop
 * (controller.ts) runs passes one at a time, only while this replica leads.
 */
import { Phase } from '../api/phases.ts';
import type { KubeLog } from '../kube/backoff.ts';
import type { Action } from './decide/action.ts';
import type { Health } from './decide/health-gate.ts';
import type { Ledger } from './decide/ledger-view.ts';
import type { NodeView } from './decide/node-view.ts';
import { type Decider, isLedgerChange, type PassDecision } from './decider.ts';
import type { OperatorMetrics } from './metrics.ts';
import type { NodeSteps } from './node-steps.ts';
import type { PolicyState } from './policies/policies.ts';
import type { PolicyStatusWriter } from './policies/policy-status-writer.ts';
import type { Pool } from './policies/pool-plan.ts';
import type { HealthReads } from './read/health-reads.ts';
import {
  endOf,
  type LedgerCache,
  type LedgerChange,
  LedgerConflict,
  type LedgerVersion,
} from './read/ledger.ts';
import type { LifecycleWriter } from './write/lifecycle-writer.ts';
import type { ProblemReports } from './write/problem-reports.ts';

const RESYNC_ACTIVE_MS = 1000;
const RESYNC_IDLE_MS = 30_000;
const MIN_RESYNC_MS = 20;
/** A pass waits this many times the last one's cost after it (capped), see spacing(). */
const PASS_SPACING = 5;
const MAX_PASS_SPACING_MS = 250;

/**
 * What a pass asks of the control loop: done, look again after `requeueAfterMs`; not run yet, too soon
 * after the last one (`spacedMs`); or lost a race for the ledger, try again after the rate-limited backoff.
 */
export type PassResult = { requeueAfterMs: number } | { spacedMs: number } | { backoff: true };

export interface ReconcilerOptions {
  ledger: LedgerCache;
  decider: Decider;
  health: HealthReads;
  problems: ProblemReports;
  steps: NodeSteps;
  /** The nodes' lifecycle conditions, written after each pass where they changed. */
  lifecycle: LifecycleWriter;
  /** The policies' statuses, written after each pass where they changed. */
  statuses: PolicyStatusWriter;
  /** The Plans' statuses, written after each pass where they changed. */
  planStatuses: (decision: PassDecision, nodes: readonly NodeView[], ledger: Ledger, now: Date) => void;
  policies: () => PolicyState;
  acting: () => boolean;
  log: KubeLog;
  metrics?: OperatorMetrics;
}

export class Reconciler {
  readonly #o: ReconcilerOptions;
  /** Milliseconds the last pass spent reading the cache and deciding, and when it ended. */
  #passCostMs = 0;
  #passEnd = 0;
  /** The ledger and health the last pass decided on, for re-deciding a node after a conflict. */
  #last: { ledger: Ledger; health: ReadonlyMap<string, Health> } | undefined;

  constructor(options: ReconcilerOptions) {
    this.#o = options;
  }

  get last(): { ledger: Ledger; health: ReadonlyMap<string, Health> } | undefined {
    return this.#last;
  }

  /**
   * How long to wait before a pass. A pass reads every node, and on a large cluster events arrive all
   * the time: passes are spaced by PASS_SPACING times the cost of the last one's reading and deciding,
   * so back-to-back passes do not spend the process on reading the same cache (nothing on small
   * clusters). Not right after slots were freed: nodes wait for them, and grant latency is a goal.
   */
  #spacing(): number {
    if (this.#o.steps.takeFreed()) return 0;
    const spacing =
      Math.min(MAX_PASS_SPACING_MS, this.#passCostMs * PASS_SPACING) - (performance.now() - this.#passEnd);
    return spacing > 1 ? spacing : 0;
  }

  async pass(): Promise<PassResult> {
    const spacing = this.#spacing();
    if (spacing > 0) return { spacedMs: spacing };
    const started = performance.now();
    const ledger = await this.#o.ledger.read();
    const now = new Date();
    const costStart = performance.now();
    const nodes = this.#o.decider.nodes(now);
    const health = this.#o.health.current(nodes, ledger.ledger, now);
    this.#o.problems.report(nodes);
    const decision = this.#o.decider.decide(nodes, ledger.ledger, health, now);
    this.#passCostMs = performance.now() - costStart;
    this.#last = { ledger: ledger.ledger, health };
    let current: LedgerVersion;
    try {
      current = await this.#writeSlots(ledger, decision, now);
    } catch (err) {
      if (!(err instanceof LedgerConflict)) throw err;
      this.#o.metrics?.conflicts.inc();
      return { backoff: true };
    } finally {
      this.#passEnd = performance.now();
      this.#o.metrics?.observe(decision, nodes, this.#passEnd - started);
      this.#o.log('debug', 'pass', {
        ms: Math.round(this.#passEnd - started),
        actions: decision.actions.length,
        stepping: this.#o.steps.size,
      });
    }
    if (!this.#o.acting()) return { requeueAfterMs: RESYNC_IDLE_MS };
    // Each step writes in the keys of the protocol its node's agent speaks, as the pass read the node.
    const spoken = nodes.map((n) => this.#o.decider.spoken(n));
    this.#o.steps.dispatch(decision, new Map(spoken.map((n) => [n.name, n])), now);
    const conditionsPending = this.#o.lifecycle.update(decision, current.ledger, now);
    this.#o.statuses.update(decision, this.#o.policies().policies, now);
    this.#o.planStatuses(decision, nodes, current.ledger, now);
    return { requeueAfterMs: this.#resyncAfter(current, nodes, decision, conditionsPending) };
  }

  /**
   * The budget: one conditional ledger write takes every slot this pass admits and frees every slot with
   * nothing behind it — exactly what decide() counted on, or nothing (409: re-decide). Slots of attempts
   * that just ended are freed here too, in the same write that refills them; promises of slots about to
   * be freed (Ledger.next) ride on it. A promise is not withdrawn while its node's step runs: that may be
   * the handover, and the slot stays held for it until the node is seen again. The pass's admissions
   * count for a handover that decides while this write is in flight; landed, they are in the ledger copy
   * it decides on, else they did not happen.
   */
  async #writeSlots(ledger: LedgerVersion, decision: PassDecision, now: Date): Promise<LedgerVersion> {
    const { admitting } = this.#o.decider;
    const admits = decision.actions.filter((a) => a.type === 'admit').map((a) => a.node);
    const unmark = admits.filter((name) => !admitting.has(name));
    for (const name of unmark) admitting.add(name);
    try {
      const isChange = (a: Action): a is Extract<LedgerChange, Action> =>
        a.type === 'admit' || (isLedgerChange(a) && !(a.type === 'unpromise' && this.#o.steps.has(a.node)));
      // The ends this pass decided are recorded before their node writes (Slot.ended): the rollout counts
      // them from the ledger, whatever becomes of the node.
      const changesOf = (actions: readonly Action[]): LedgerChange[] =>
        actions.flatMap((a): LedgerChange[] => {
          const end = endOf(a);
          const slot = end && ledger.ledger.slots[end.node];
          if (end) return slot && slot.ended !== end.outcome ? [end] : [];
          return isChange(a) ? [a] : [];
        });
      // A pool's rollout record rides on the same write: it counts the attempts whose slots it frees.
      const rollout = (pool: Pool): LedgerChange[] => [
        ...(pool.rollout?.changed
          ? [{ type: 'rollout', ...(pool.rollout.record ? { record: pool.rollout.record } : {}) } as const]
          : []),
        ...(pool.expiredRemediations
          ? [{ type: 'remediations', forget: pool.expiredRemediations } as const]
          : []),
      ];
      const changes = new Map<string, readonly LedgerChange[]>(
        decision.pools
          .map(({ pool, decision: d }) => [pool.name, [...changesOf(d.actions), ...rollout(pool)]] as const)
          .filter(([, list]) => list.length > 0),
      );
      for (const pool of this.#gonePools(ledger.ledger, decision))
        changes.set(pool, [{ type: 'rollout' }, { type: 'remediations', forget: 'all' }]);
      if (changes.size === 0 || !this.#o.acting()) return ledger;
      const written = await this.#o.ledger.write(ledger, changes, now.toISOString());
      for (const a of [...changes.values()].flat()) {
        if (a.type === 'release') this.#o.log('info', 'slot released', { node: a.node, reason: a.reason });
      }
      return written;
    } finally {
      for (const name of unmark) admitting.delete(name);
    }
  }

  /**
   * Pools the ledger keeps a rollout or remediations for that no longer exist (their policy deleted,
   * nothing held): ended, so a policy made again under the name starts afresh. Only once the policies are
   * read: before, no pool is known to exist.
   */
  #gonePools(ledger: Ledger, decision: PassDecision): string[] {
    if (!this.#o.policies().known) return [];
    const pools = new Set(decision.pools.map(({ pool }) => pool.name));
    const kept = new Set([...Object.keys(ledger.rollouts ?? {}), ...Object.keys(ledger.remediations ?? {})]);
    return [...kept].filter((name) => !pools.has(name));
  }

  /**
   * Look again exactly when a soak, timeout or backoff ends; meanwhile poll what has no node event
   * (DaemonSet pods at the health gate) while slots are held or lifecycle conditions are still to be
   * written, and rarely when idle.
   */
  #resyncAfter(
    current: LedgerVersion,
    nodes: NodeView[],
    decision: PassDecision,
    conditionsPending: boolean,
  ): number {
    const active =
      conditionsPending ||
      Object.keys(current.ledger.slots).length > 0 ||
      nodes.some((n) => n.state === Phase.pending);
    return Math.min(
      active ? RESYNC_ACTIVE_MS : RESYNC_IDLE_MS,
      Math.max(MIN_RESYNC_MS, (decision.wakeAt ?? Number.POSITIVE_INFINITY) - Date.now()),
    );
  }
}
