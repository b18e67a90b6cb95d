/**
 * Every snapshot decide() sees is built here, the same way for each of its three callers (a pass, a node
 * re-decided after a conflict, a handover): the cached nodes as views (computed once per
 * resourceVersion, every time a wait counts from on this leader's own clock: observed-clock.ts), the
 * drains and admissions in flight in this process, and the check of nuo's own grants.
 */
import type { V1Node } from '@kubernetes/client-node';
import { AgentProtocol, type CoreosProtocol, type ForeignProtocol } from '../api/keys.ts';
import type { CalendarClock } from '../policy/calendar-clock.ts';
import type { ResolvedPolicy } from '../policy/resolve.ts';
import type { Action } from './decide/action.ts';
import { admissionOrder } from './decide/admission.ts';
import { speaking } from './decide/agent-protocol.ts';
import { BootWitness } from './decide/boot-witness.ts';
import { type Decision, decide } from './decide/decide.ts';
import type { DecideConfig } from './decide/decide-input.ts';
import type { Health } from './decide/health-gate.ts';
import type { Ledger } from './decide/ledger-view.ts';
import { needsWork, outsideAttempt } from './decide/need.ts';
import { type NodeView, viewNode } from './decide/node-view.ts';
import { ObservedClock, type PassClock } from './decide/observed-clock.ts';
import type { JobView } from './decide/plan-work.ts';
import type { Slot } from './decide/slot.ts';
import { landingExists, softTaintsMost } from './decide/taints.ts';
import { unmanagedWrites } from './decide/unmanaged.ts';
import type { Wait } from './decide/wait.ts';
import { type PassPlan, type PlansOfPass, plansOfPass } from './plans/plan-pass.ts';
import type { PolicyState } from './policies/policies.ts';
import { type OperatorSighting, type PolicyBlockers, STAND_DOWN } from './policies/pool-holds.ts';
import {
  DEFAULT_POOL,
  POLICY_DEFAULTS,
  type Pool,
  type PoolPlan,
  planPools,
  policyConfig,
} from './policies/pool-plan.ts';
import { wantsLock } from './protocols/kured-lock.ts';
import { inPool, type LedgerChange } from './read/ledger.ts';
import type { DrainSettings } from './write/drain-runner.ts';

/** Actions that change only the ledger: the pass's own conditional write. */
export type LedgerOnly = Extract<LedgerChange, { type: 'release' | 'promise' | 'unpromise' | 'claim' }>;
const LEDGER_ONLY: ReadonlySet<Action['type']> = new Set(['release', 'promise', 'unpromise', 'claim']);
export const isLedgerChange = (a: Action): a is LedgerOnly => LEDGER_ONLY.has(a.type);
/** What a node step does: every action but those that only change the ledger. */
export type NodeStep = Exclude<Action, LedgerOnly>;

export interface DeciderOptions {
  /** The operator's cluster-wide pause. */
  paused: boolean;
  /** The cluster's UpdatePolicies now. */
  policies: () => PolicyState;
  /** What each policy's blockers answered last. */
  blockers: (policy: string) => PolicyBlockers | undefined;
  /** What was last seen of CLUO's and FLUO's own update-operator; undefined: not looked yet. */
  sighting: (protocol: CoreosProtocol) => OperatorSighting | undefined;
  /** The holds of waiting nodes' own pods (`nuo.dev/do-not-disrupt`), longest-waiting first. */
  nodeHolds: (waiting: readonly string[], now: number) => ReadonlyMap<string, Wait>;
  /** How many pods a drain of a waiting node would evict, as its pods were last read (do-not-disrupt.ts). */
  evictablePods?: (node: string) => number | undefined;
  nodes: { list(): V1Node[] };
  /** Nodes with a drain running in this process. */
  draining: () => ReadonlySet<string>;
  /** Whether a node's grant is one nuo signed for it. */
  ownGrant: (n: NodeView) => boolean;
  /** The cluster's Plans now, resolved. */
  plans: () => readonly PassPlan[];
  /** The Plans' Jobs by node. */
  jobs: () => ReadonlyMap<string, readonly JobView[]>;
  /** How a Plan's attempt drains its node (`pool`: its pool's settings), or undefined when the Plan is gone. */
  planDrain: (ref: string, pool: DrainSettings) => DrainSettings | undefined;
  /** Told after each pass whether a pool beside kured wants to hold kured's lock (kured-keeper.ts). */
  kuredWant?: (policy: string, want: boolean) => void;
  /** The node this process runs on, when known: it goes last in its pool (own-node.ts). */
  ownNode?: string;
  /** The clock windows and scheduled budgets are read on; absent: the real one. */
  clock?: CalendarClock;
  /** The monotonic clock waits count on (ms); absent: performance.now(). */
  monotonic?: () => number;
}

/** One pool's decision in a pass. */
export interface PoolDecision {
  pool: Pool;
  decision: Decision;
}

/** A pass's decisions, every pool's. */
export interface PassDecision {
  plan: PoolPlan;
  pools: PoolDecision[];
  actions: Action[];
  /** Slot holders, every pool's. */
  holders: string[];
  wakeAt?: number;
}

/**
 * The nodes a pass may admit, longest-waiting first: outside an attempt, needing a reboot, in a pool that
 * admits (their pods are worth reading). A node whose attempt just ended may still hold its slot: the
 * pass releases it and may admit the node again, so it counts as waiting too.
 */
function waitingNodes(plan: PoolPlan, now: Date): string[] {
  const waiting = plan.pools
    .filter((p) => !p.hold)
    .flatMap((p) => p.nodes)
    .filter((n) => outsideAttempt(n) && needsWork(n, now.getTime()) !== undefined);
  return admissionOrder(waiting, new Set()).map((n) => n.name);
}

/**
 * The step a slot holder decided on its own takes: none when the decision frees its slot. The release is
 * a ledger write only a pass makes; the node's write that follows it (Idle, or Pending) landing alone
 * would show an attempt ended since its admission, which the rollout counts as completed.
 */
export function holderStep(actions: readonly Action[], node: string): NodeStep | undefined {
  if (actions.some((a) => a.type === 'release' && a.node === node)) return undefined;
  return actions.find(
    (a): a is NodeStep => a.node === node && !isLedgerChange(a) && a.type !== 'admit' && a.type !== 'pending',
  );
}

export class Decider {
  readonly #o: DeciderOptions;
  /** Admissions decided here and not yet landed (Snapshot.admitting): marked before any await. */
  readonly admitting = new Set<string>();
  readonly #views = new Map<string, NodeView>();
  /** When this leader first saw each state a wait counts from (a phase, Ready at the gate, a grant). */
  readonly #seen = new ObservedClock();
  /** Whether each node's kubelet confirmed its boot after its agent withdrew its need (boot-witness.ts). */
  readonly #witness = new BootWitness();
  /** Each pool's settings as the last pass planned them, and each node's pool. */
  #configs = new Map<string, DecideConfig>();
  #poolOfNode = new Map<string, string>();
  /** Each node whose agent is another project's, and its protocol, as the last pass planned the pools. */
  #protocolOfNode = new Map<string, ForeignProtocol>();
  #plan: PoolPlan | undefined;
  #plans: PlansOfPass | undefined;
  /** Each slot holder's Plan (its slot's), as the last pass read the ledger. */
  #planOfNode = new Map<string, string>();

  constructor(options: DeciderOptions) {
    this.#o = options;
  }

  /** The view of a cached node through the protocol its agent speaks (as the last pass planned the pools). */
  view(node: V1Node): NodeView {
    return this.spoken(this.#view(node));
  }

  /** A view by nuo's keys read through the protocol its agent speaks (as the last pass planned the pools). */
  spoken(view: NodeView): NodeView {
    return speaking(view, this.#protocolOfNode.get(view.name) ?? AgentProtocol.nuo);
  }

  /** The view of a cached node by nuo's keys, computed once per resourceVersion (a pass reads every node). */
  #view(node: V1Node): NodeView {
    const name = node.metadata?.name ?? '';
    const rv = node.metadata?.resourceVersion ?? '';
    const cached = this.#views.get(name);
    if (cached?.resourceVersion === rv) return cached;
    const view = viewNode(node);
    this.#views.set(name, view);
    return view;
  }

  /** The pass's clocks at `now`. */
  #clock(now: Date): PassClock {
    return { now: now.getTime(), mono: (this.#o.monotonic ?? performance.now.bind(performance))() };
  }

  /**
   * A view as this leader decides on it: its times on its own clock, its kubelet's word on its boot (a
   * withdrawal read in its agent's protocol, as the last pass planned the pools: nuo's keys alone never
   * show another project's agent withdrawing).
   */
  #local(view: NodeView, clock: PassClock): NodeView {
    const seen = this.#seen.view(view, clock);
    return this.#witness.view(seen, this.spoken(seen));
  }

  /**
   * A node this process just wrote: the phase it wrote is seen now, at its write, rather than at the next
   * pass's look (a wait on it counts from the write, as it would for any leader that saw it then).
   */
  wrote(node: V1Node): void {
    this.#seen.view(this.#view(node), this.#clock(new Date()));
  }

  /** Every cached node as decide() sees it at `now`; views of deleted nodes are forgotten now and then. */
  nodes(now: Date): NodeView[] {
    const clock = this.#clock(now);
    const nodes = this.#o.nodes.list().map((n) => this.#local(this.#view(n), clock));
    if (this.#views.size > nodes.length * 2) this.#prune(nodes);
    return nodes;
  }

  /** Plans the pools and decides for each, on its part of the ledger. */
  decide(all: NodeView[], ledger: Ledger, health: ReadonlyMap<string, Health>, now: Date): PassDecision {
    const plans = plansOfPass(this.#o.plans(), ledger, this.#o.jobs());
    this.#plans = plans;
    this.#planOfNode = new Map(
      Object.entries(ledger.slots).flatMap(([node, s]) => (s.plan ? [[node, s.plan.ref] as const] : [])),
    );
    const nodes = all.map(plans.view);
    const clock = this.#clock(now);
    const plan = planPools({
      state: this.#o.policies(),
      paused: this.#o.paused,
      nodes,
      ledger,
      now,
      blockers: this.#o.blockers,
      sighting: this.#o.sighting,
      observed: this.#seen.observed(clock),
      ...(this.#o.clock ? { clock: this.#o.clock } : {}),
    });
    this.#plan = plan;
    const holds = this.#o.nodeHolds(waitingNodes(plan, now), now.getTime());
    const nodeHold = (name: string) => holds.get(name);
    const own = this.#o.ownNode === undefined ? {} : { ownNode: this.#o.ownNode };
    const softTaints = softTaintsMost(nodes);
    const pods = this.#o.evictablePods;
    const firstWave = pods && !landingExists(nodes, now.getTime()) ? { firstWavePods: pods } : {};
    for (const pool of plan.pools)
      pool.config = {
        ...pool.config,
        nodeHold,
        plans: plans.pass,
        softTaintsMost: softTaints,
        ...firstWave,
        ...own,
      };
    this.#configs = new Map(plan.pools.map((p) => [p.name, p.config]));
    this.#poolOfNode = new Map(plan.pools.flatMap((p) => p.nodes.map((n) => [n.name, p.name] as const)));
    this.#protocolOfNode = new Map(
      plan.pools.flatMap((p) => p.nodes.flatMap((n) => (n.protocol ? [[n.name, n.protocol] as const] : []))),
    );
    const pools = plan.pools.map((pool) => {
      const snapshot = {
        nodes: pool.nodes,
        ledger: this.#lastGrantSeen(inPool(ledger, pool.name), pool.name, clock),
        draining: this.#o.draining(),
        admitting: this.admitting,
        ownGrant: this.#o.ownGrant,
        health,
      };
      const decision = decide(snapshot, pool.config, now);
      // A pool nuo stands down from: its budget is still reported, but nothing is done to its nodes.
      return {
        pool,
        decision: pool.hold && STAND_DOWN.has(pool.hold.code) ? { ...decision, actions: [] } : decision,
      };
    });
    for (const { pool, decision } of pools) this.#kuredWant(pool, decision, now);
    this.#seen.sweep();
    const wakes = pools.flatMap((p) => (p.decision.wakeAt === undefined ? [] : [p.decision.wakeAt]));
    return {
      plan,
      pools,
      actions: [...pools.flatMap((p) => p.decision.actions), ...unmanagedWrites(nodes, plan)],
      holders: pools.flatMap((p) => p.decision.budget.holders),
      ...(wakes.length > 0 ? { wakeAt: Math.min(...wakes) } : {}),
    };
  }

  /**
   * A pool's part of the ledger with its last grant at when this leader first saw it: the minimum spacing
   * between grants counts on this leader's clock, whoever granted last.
   */
  #lastGrantSeen(part: Ledger, pool: string, clock: PassClock): Ledger {
    if (part.lastGrant === undefined) return part;
    const seen = this.#seen.since(`grant/${pool}`, part.lastGrant, clock);
    return { ...part, lastGrant: new Date(seen).toISOString() };
  }

  #kuredWant(pool: Pool, decision: Decision, now: Date): void {
    const policy = pool.policy?.current.ok ? pool.policy.current.policy : pool.policy?.lastValid;
    if (!policy?.kured?.holdLock || !this.#o.kuredWant) return;
    const attempts = decision.budget.holders.length + decision.budget.admitting.length;
    const waiting = pool.nodes.filter((n) => outsideAttempt(n) && needsWork(n, now.getTime()) !== undefined);
    this.#o.kuredWant(pool.name, wantsLock(attempts, waiting.length, pool.hold));
  }

  /** The node's pool as the last pass planned the pools; undefined before the first pass or outside any. */
  poolOf(node: string): string | undefined {
    return this.#poolOfNode.get(node);
  }

  /** Whether the node's pool, as last planned, is one nuo stands down from (nothing is done to its nodes). */
  standsDown(node: string): boolean {
    const pool = this.#poolOfNode.get(node);
    const hold = this.#plan?.pools.find((p) => p.name === pool)?.hold;
    return hold !== undefined && STAND_DOWN.has(hold.code);
  }

  /** The policy of the node's pool as last planned (its last valid generation), if it has one. */
  policyOf(node: string): ResolvedPolicy | undefined {
    const pool = this.#poolOfNode.get(node);
    const policy = this.#plan?.pools.find((p) => p.name === pool)?.policy;
    return policy?.current.ok ? policy.current.policy : policy?.lastValid;
  }

  /**
   * How a node is drained: as its Plan says for a Plan's attempt (the pool's timeout where the Plan sets
   * none), else its pool's policy's settings, else a policy's defaults.
   */
  drainOf(node: string): DrainSettings {
    const pool = (this.policyOf(node) ?? POLICY_DEFAULTS).drain;
    const plan = this.#planOfNode.get(node);
    return (plan === undefined ? undefined : this.#o.planDrain(plan, pool)) ?? pool;
  }

  /** The settings a node is stepped under: its pool's as last planned, else a policy's defaults. */
  configOf(node: string): DecideConfig {
    const pool = this.#poolOfNode.get(node);
    return (pool === undefined ? undefined : this.#configs.get(pool)) ?? this.#defaults();
  }

  #defaults(): DecideConfig {
    return policyConfig(POLICY_DEFAULTS, this.#o.paused);
  }

  /**
   * The step one node holding `slot` would take now, on its own (admissions are never decided here:
   * they need the whole budget); undefined when it has nothing to do.
   */
  stepOf(view: NodeView, slot: Slot, health: ReadonlyMap<string, Health>, now: Date): NodeStep | undefined {
    const seen = this.#plans?.view(view) ?? view;
    const snapshot = {
      nodes: [this.#local(seen, this.#clock(now))],
      ledger: { slots: { [view.name]: slot } },
      draining: this.#o.draining(),
      admitting: new Set<string>(),
      ownGrant: this.#o.ownGrant,
      health,
    };
    const pool = this.#plan?.pools.find((p) => p.name === (slot.pool ?? DEFAULT_POOL));
    if (pool?.hold && STAND_DOWN.has(pool.hold.code)) return undefined;
    const config = pool?.config ?? this.#defaults();
    return holderStep(decide(snapshot, config, now).actions, view.name);
  }

  /** A new leadership observes afresh: what was seen before it may have changed unseen since. */
  clear(): void {
    this.#seen.clear();
    this.#witness.clear();
  }

  #prune(nodes: NodeView[]): void {
    const live = new Set(nodes.map((n) => n.name));
    this.#witness.prune(live);
    for (const name of this.#views.keys()) if (!live.has(name)) this.#views.delete(name);
  }
}
