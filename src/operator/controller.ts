/**
 * The operator: the only component that decides. It watches Nodes, and while it leads it reconciles
 * level-triggered — read the cluster, decide() with a pure function, apply each action with a conditional
 * write — requeueing on conflicts with backoff. Everything it knows is in the API (node annotations and
 * the slot ledger): a new leader continues exactly where the last one stopped.
 */
import { CoreV1Api, type V1Node } from '@kubernetes/client-node';
import { Phase } from '../api/phases.ts';
import { Drainer, DrainOutcome, type DrainResult } from '../drain/evict.ts';
import { backoffDelay, type KubeLog } from '../kube/backoff.ts';
import { describeError, statusCode } from '../kube/errors.ts';
import { Fence } from '../kube/fence.ts';
import { ResilientInformer } from '../kube/informer.ts';
import { LeaderElector } from '../kube/leader.ts';
import type { PooledKubeConfig } from '../kube/pooled-kubeconfig.ts';
import { parseSelector } from '../kube/selector.ts';
import { WorkQueue } from '../kube/workqueue.ts';
import { Limiter } from '../util/parallel.ts';
import { parseMaxUnavailable } from './budget.ts';
import type { OperatorConfig } from './config.ts';
import { type Action, type DecideConfig, decide } from './decide.ts';
import { DrainRunner } from './drain-runner.ts';
import { EventRecorder } from './events.ts';
import { GrantSigner } from './grant-key.ts';
import type { Health } from './health-gate.ts';
import { HealthReads } from './health-reads.ts';
import { type Ledger, LedgerCache, type LedgerChange, LedgerConflict, LedgerStore } from './ledger.ts';
import type { OperatorMetrics } from './metrics.ts';
import { type NodeView, sameView, slimNode, viewNode } from './node-view.ts';
import { Conflict, NodeWriter } from './node-writer.ts';
import { type NodeWrite, patchFor, type WriteAction } from './node-writes.ts';
import { UNCORDONED_DURING_DRAIN } from './phase-steps.ts';
import { informerProgress, liveness, Progress, readiness } from './probes.ts';
import { ProblemReports } from './problem-reports.ts';
import { SoakClock } from './soak-clock.ts';

export interface OperatorOptions {
  kubeconfig: PooledKubeConfig;
  config: OperatorConfig;
  identity: string;
  log: KubeLog;
  metrics?: OperatorMetrics;
  /** Leader election timings (defaults 15 s / 10 s / 2 s). */
  lease?: { leaseDurationMs: number; renewDeadlineMs: number; retryPeriodMs: number };
}

/** Actions that change only the ledger: the pass's own conditional write. */
type LedgerOnly = Extract<LedgerChange, { type: 'release' | 'promise' | 'unpromise' | 'claim' }>;
const LEDGER_ONLY: ReadonlySet<Action['type']> = new Set(['release', 'promise', 'unpromise', 'claim']);
const isLedgerChange = (a: Action): a is LedgerOnly => LEDGER_ONLY.has(a.type);
/** What a node step does: every action but those that only change the ledger. */
type NodeStep = Exclude<Action, LedgerOnly>;

const RESYNC_ACTIVE_MS = 1000;
const RESYNC_IDLE_MS = 30_000;
const MIN_RESYNC_MS = 20;
/** A pass waits this many times the last one's cost after it (capped), see #reconcile. */
const PASS_SPACING = 5;
const MAX_PASS_SPACING_MS = 250;
/**
 * Steps of nodes in an attempt in flight: enough that a first wave of admissions starts draining
 * together, well under the API server's default inflight limit of 400.
 */
const NODE_WRITERS = 64;
/**
 * Handovers in flight (#handOver): writers and connections of their own, so a freed slot's next node
 * never queues behind the completions, Events and other writes that end a wave at the same moment.
 */
const HANDOVER_WRITERS = 16;
/** Writes of nodes outside an attempt (Pending, why they wait) in flight: they must not crowd out attempts. */
const REASON_WRITERS = 4;
/**
 * Connections of the drains' own pool: evictions come in bursts (up to 50 a node, for every node
 * draining), and node writes, the ledger and the Lease renewal must not queue behind them. The Lease has
 * a connection of its own too.
 */
const DRAIN_CONNECTIONS = 64;
/** Writes a node step tries (re-reading and re-deciding after each 409) before leaving it to the next pass. */
const CONFLICT_RETRIES = 3;
/** How long the leader decides on its own copy of the ledger before reading it again. */
const LEDGER_TTL_MS = 10_000;
const KEY = 'cluster';
/** The backoff of a node whose write was refused (#holdBack). */
const HOLD_BACK = { initialMs: 1000, maxMs: 300_000 } as const;

/** A refusal the same request would meet again: a 4xx other than conflict, gone, or too many requests. */
function refusal(err: unknown): boolean {
  const code = statusCode(err) ?? 0;
  return code >= 400 && code < 500 && code !== 409 && code !== 404 && code !== 429;
}

export class Operator {
  readonly #o: OperatorOptions;
  readonly #core: CoreV1Api;
  readonly #ledger: LedgerCache;
  readonly #events: EventRecorder;
  readonly #decideConfig: DecideConfig;
  readonly #informer: ResilientInformer<V1Node>;
  readonly #queue: WorkQueue<typeof KEY>;
  readonly #drains: DrainRunner;
  /** Admissions decided here and not yet landed (Snapshot.admitting): marked before any await. */
  readonly #admitting = new Set<string>();
  /** Nodes whose last write failed for good (#holdBack): no step for them before `until`. */
  readonly #heldBack = new Map<string, { failures: number; until: number }>();
  /** When this leader first saw each node at the health gate Ready (the soak counts from then). */
  readonly #soak = new SoakClock();
  readonly #grants: GrantSigner;
  readonly #problems: ProblemReports;
  /** The ledger and health the last pass decided on, for re-deciding a node after a conflict. */
  #lastPass: { ledger: Ledger; health: ReadonlyMap<string, Health> } | undefined;
  /** Node steps running (one per node at most), and the bounds on them: for attempts, and for the rest. */
  readonly #stepping = new Map<string, Promise<void>>();
  /** Where a node step's writes go: how many at once, over which connections. */
  readonly #attemptLane: Lane;
  readonly #reasonLane: Lane;
  readonly #handoverLane: Lane;
  readonly #health: HealthReads;
  readonly #writer: NodeWriter;
  readonly #views = new Map<string, NodeView>();
  /** Milliseconds the last pass spent reading the cache and deciding, and when it ended. */
  #passCostMs = 0;
  #passEnd = 0;
  /** The last pass freed slots: the next one runs at once. */
  #slotsFreed = false;
  #elector: LeaderElector | undefined;
  /** The leader election loop has ended (a live process whose election ended is wedged). */
  #electionEnded = false;
  readonly #progress = new Progress();
  /** Drops requests that would change something while this replica does not lead (fence.ts). */
  readonly #fence = new Fence(() => (this.#acting() ? undefined : 'this replica does not lead now'));
  #leading: AbortSignal | undefined;
  #resync: ReturnType<typeof setTimeout> | undefined;

  constructor(options: OperatorOptions) {
    this.#o = options;
    const c = options.config;
    // Before any request: every pool is made with the fence in place (the leader election's excepted).
    options.kubeconfig.setFence(this.#fence);
    options.kubeconfig.setUserAgent(`nuo-operator (${options.identity})`);
    this.#core = options.kubeconfig.makeApiClient(CoreV1Api);
    this.#attemptLane = { writers: new Limiter(NODE_WRITERS), core: this.#core };
    this.#reasonLane = { writers: new Limiter(REASON_WRITERS), core: this.#core };
    this.#handoverLane = {
      writers: new Limiter(HANDOVER_WRITERS),
      core: options.kubeconfig
        .separatePool({ requestConnections: HANDOVER_WRITERS })
        .makeApiClient(CoreV1Api),
    };
    this.#drains = new DrainRunner({
      drainer: new Drainer(options.kubeconfig.separatePool({ requestConnections: DRAIN_CONNECTIONS })),
      fence: this.#fence,
      config: c,
      log: options.log,
      metrics: options.metrics,
      leading: () => this.#leading,
      acting: () => this.#acting(),
      record: async (node, result, refused) => {
        await this.#recordDrain(node, result, refused);
        this.#heldBack.delete(node);
      },
      recordFailed: (node, err) => this.#holdBack(node, err, "recording the drain's outcome"),
      ended: () => {
        if (this.#acting()) this.#queue.add(KEY);
      },
    });
    this.#grants = new GrantSigner(this.#core, c.namespace);
    this.#ledger = new LedgerCache(new LedgerStore(this.#core, c.namespace), LEDGER_TTL_MS);
    this.#events = new EventRecorder(this.#core, options.identity, options.log);
    this.#problems = new ProblemReports(this.#events, options.log, options.metrics);
    this.#health = new HealthReads({
      core: this.#core,
      soakMs: c.soakMs,
      log: options.log,
      onRead: () => {
        if (this.#acting()) this.#queue.add(KEY);
      },
    });
    this.#decideConfig = {
      ...c,
      maxUnavailable: parseMaxUnavailable(c.maxUnavailable),
      eligible: parseSelector(c.nodeSelector),
    };
    this.#informer = new ResilientInformer<V1Node>({
      kubeconfig: options.kubeconfig,
      path: '/api/v1/nodes',
      list: (opts) => this.#core.listNode(opts),
      name: 'nodes',
      log: options.log,
      transform: slimNode,
    });
    this.#writer = new NodeWriter(this.#informer, () => this.#acting());
    this.#queue = new WorkQueue<typeof KEY>({
      process: () => this.#reconcile(),
      name: 'reconcile',
      baseDelayMs: 100,
      maxDelayMs: 10_000,
      log: options.log,
    });
  }

  /** The view of a cached node, computed once per resourceVersion (a pass reads every node). */
  #view(node: V1Node): NodeView {
    const name = node.metadata?.name ?? '';
    const rv = node.metadata?.resourceVersion ?? '';
    const cached = this.#views.get(name);
    if (cached?.resourceVersion === rv) return cached;
    const view = viewNode(node);
    this.#views.set(name, view);
    return view;
  }

  /** Forgets the views of deleted nodes. */
  #pruneViews(nodes: NodeView[]): void {
    const live = new Set(nodes.map((n) => n.name));
    this.#soak.prune(live);
    for (const name of this.#views.keys()) if (!live.has(name)) this.#views.delete(name);
  }

  /** True while this replica may write: it leads and renewed its lease recently. */
  #acting(): boolean {
    return this.#leading !== undefined && !this.#leading.aborted && this.#elector?.isLeader() === true;
  }

  /** What /healthz and /readyz answer (probes.ts): the problems, none when live / ready. */
  probes(now = Date.now()): { live: string[]; ready: string[] } {
    const informer = this.#informer.stats();
    const input = {
      now,
      informer,
      watchdogMs: this.#informer.watchdogMs,
      electionEnded: this.#electionEnded,
    };
    return {
      live: liveness(input, this.#progress.observe(informerProgress(informer), now)),
      ready: readiness(input),
    };
  }

  async run(signal: AbortSignal): Promise<void> {
    const { log } = this.#o;
    this.#informer.onEvent((type, node, old) => {
      if (!this.#acting()) return;
      if (type === 'update' && old && sameView(this.#view(old), this.#view(node))) return;
      this.#queue.add(KEY);
    });
    if (signal.aborted) return;
    // A shutdown before the cache syncs (the API server unreachable, a clock TLS refuses) ends it here:
    // the informer would otherwise retry its list for as long as the process lives.
    const stopInformer = () => void this.#informer.stop();
    signal.addEventListener('abort', stopInformer, { once: true });
    try {
      await this.#informer.start();
    } catch (err) {
      if (!signal.aborted) throw err;
      log('info', 'stopped before the node cache synced');
      return;
    } finally {
      signal.removeEventListener('abort', stopInformer);
    }
    log('info', 'node cache synced', { nodes: this.#informer.list().length });
    this.#elector = new LeaderElector({
      kubeconfig: this.#o.kubeconfig.separatePool({ requestConnections: 1, fenced: false }),
      namespace: this.#o.config.namespace,
      name: 'nuo-operator',
      identity: this.#o.identity,
      ...this.#o.lease,
      log,
      onStartedLeading: (leading) => {
        log('info', 'became leader', { identity: this.#o.identity });
        this.#o.metrics?.leader.set(1);
        this.#leading = leading;
        this.#ledger.forget();
        this.#health.clear();
        this.#problems.clear();
        this.#soak.clear();
        // Ready before the first grant: a replica that cannot read or create the key says so at once.
        this.#grants.prepare().catch((err: unknown) => log('error', describeError(err)));
        this.#queue.add(KEY);
      },
      onStoppedLeading: () => {
        log('warn', 'stopped leading: no further actions', { identity: this.#o.identity });
        this.#o.metrics?.leader.set(0);
        this.#leading = undefined;
        this.#drains.abortAll();
        clearTimeout(this.#resync);
      },
    });
    try {
      await this.#elector.run(signal);
    } finally {
      this.#electionEnded = true;
      clearTimeout(this.#resync);
      this.#drains.abortAll();
      await this.#queue.shutdown();
      await Promise.allSettled(this.#stepping.values());
      await this.#informer.stop();
    }
  }

  async #reconcile(): Promise<void> {
    if (!this.#acting()) return;
    // A pass reads every node, and on a large cluster events arrive all the time: passes are spaced by
    // PASS_SPACING times the cost of the last one's reading and deciding, so back-to-back passes do not
    // spend the process on reading the same cache (nothing on small clusters).
    const spacing =
      Math.min(MAX_PASS_SPACING_MS, this.#passCostMs * PASS_SPACING) - (performance.now() - this.#passEnd);
    // Except right after slots were freed: nodes wait for them, and grant latency is a goal (p99 < 1 s).
    if (spacing > 1 && !this.#slotsFreed) {
      this.#queue.addAfter(KEY, spacing);
      return;
    }
    clearTimeout(this.#resync);
    this.#slotsFreed = false;
    const started = performance.now();
    const ledger = await this.#ledger.read();
    const now = new Date();
    const costStart = performance.now();
    const nodes = this.#informer.list().map((n) => this.#soak.view(this.#view(n), now.getTime()));
    if (this.#views.size > nodes.length * 2) this.#pruneViews(nodes);
    let cost = performance.now() - costStart;
    const health = this.#health.current(nodes, ledger.ledger, now);
    this.#problems.report(nodes);
    const decideStart = performance.now();
    const decision = decide(
      {
        nodes,
        ledger: ledger.ledger,
        draining: this.#drains.running(),
        admitting: this.#admitting,
        ownGrant: this.#grants.signed,
        health,
      },
      this.#decideConfig,
      now,
    );
    // This pass's admissions count for a handover that decides while their ledger write is in flight.
    const admits = decision.actions.filter((a) => a.type === 'admit').map((a) => a.node);
    const unmark = admits.filter((name) => !this.#admitting.has(name));
    for (const name of unmark) this.#admitting.add(name);
    cost += performance.now() - decideStart;
    this.#passCostMs = cost;
    const byName = new Map(nodes.map((n) => [n.name, n]));
    this.#lastPass = { ledger: ledger.ledger, health };
    let current = ledger;
    try {
      // 1. The budget: one conditional ledger write takes every slot this pass admits and frees every
      //    slot with nothing behind it — exactly what decide() counted on, or nothing (409: re-decide).
      //    Slots of attempts that just ended are freed here too: their nodes are written back (Idle or
      //    Pending since after admission), so decide() releases them, in the same write that refills them.
      //    Promises of slots about to be freed (Ledger.next) ride on the same write.
      //    A promise is not withdrawn while its node's step runs: that may be the handover (#handOver),
      //    and the slot stays held for it until the node is seen again.
      const slotChanges = decision.actions.filter(
        (a): a is LedgerChange =>
          a.type === 'admit' ||
          (isLedgerChange(a) && !(a.type === 'unpromise' && this.#stepping.has(a.node))),
      );
      if (slotChanges.length > 0) {
        if (!this.#acting()) return;
        current = await this.#ledger.write(ledger, slotChanges, now.toISOString());
        for (const a of slotChanges) {
          if (a.type === 'release') this.#o.log('info', 'slot released', { node: a.node, reason: a.reason });
        }
      }
    } catch (err) {
      if (err instanceof LedgerConflict) {
        this.#o.metrics?.conflicts.inc();
        this.#queue.addRateLimited(KEY);
        return;
      }
      throw err;
    } finally {
      // Landed, the admissions are in the ledger copy a handover decides on; else they did not happen.
      for (const name of unmark) this.#admitting.delete(name);
      this.#passEnd = performance.now();
      this.#o.metrics?.observe(decision, nodes, this.#passEnd - started);
      this.#o.log('debug', 'pass', {
        ms: Math.round(this.#passEnd - started),
        actions: decision.actions.length,
        stepping: this.#stepping.size,
      });
    }
    // 2. Each node's own step, in the background, so one slow write holds up no other node and no next
    //    pass. A node has one step at a time, and a decision made on a version of the node that a step
    //    has changed since is skipped: the next pass decides on what that step wrote. Nodes in an attempt
    //    have their own writers, so the many writes that only record why a node waits never queue ahead
    //    of a grant.
    const attempts = new Set(decision.budget.holders);
    for (const action of decision.actions) {
      if (isLedgerChange(action) || this.#stepping.has(action.node)) continue;
      if (action.type === 'drain' && this.#drains.has(action.node)) continue;
      if (this.#isHeldBack(action.node)) continue;
      const view = byName.get(action.node);
      const cached = this.#informer.get(action.node)?.metadata?.resourceVersion;
      if (!view || cached !== view.resourceVersion) continue;
      const inAttempt = action.type === 'admit' || attempts.has(action.node);
      this.#startStep(action, view, now, inAttempt ? this.#attemptLane : this.#reasonLane);
    }
    this.#queue.forget(KEY);
    // Look again exactly when a soak, timeout or backoff ends; meanwhile poll what has no node event
    // (DaemonSet pods at the health gate) while slots are held, and rarely when idle.
    const active =
      Object.keys(current.ledger.slots).length > 0 || nodes.some((n) => n.state === Phase.pending);
    const wait = Math.min(
      active ? RESYNC_ACTIVE_MS : RESYNC_IDLE_MS,
      Math.max(MIN_RESYNC_MS, (decision.wakeAt ?? Number.POSITIVE_INFINITY) - Date.now()),
    );
    if (this.#acting()) this.#resync = setTimeout(() => this.#queue.add(KEY), wait);
  }

  /**
   * A node whose write the API server refused (a 4xx other than a conflict: the same write would be
   * refused again), or whose drain could not be recorded, is left alone for a backoff that grows with
   * each failure in a row: never a write storm on one bad value. Its next step that lands resets it.
   */
  #holdBack(name: string, err: unknown, what: string): void {
    const failures = (this.#heldBack.get(name)?.failures ?? 0) + 1;
    const delayMs = Math.round(backoffDelay(failures, HOLD_BACK));
    this.#heldBack.set(name, { failures, until: performance.now() + delayMs });
    if (refusal(err)) this.#o.metrics?.writesRefused.inc();
    this.#o.log('error', `${what} failed; retrying this node after a backoff`, {
      node: name,
      error: describeError(err),
      failures,
      retryInMs: delayMs,
    });
    this.#queue.addAfter(KEY, delayMs);
  }

  /** Whether a node's steps wait out a backoff (#holdBack). */
  #isHeldBack(name: string): boolean {
    const held = this.#heldBack.get(name);
    return held !== undefined && performance.now() < held.until;
  }

  #startStep(action: NodeStep, view: NodeView, now: Date, { writers, core }: Lane): void {
    const admission =
      action.type === 'admit' || (action.type === 'transition' && action.to === Phase.beforeReboot);
    if (admission) this.#admitting.add(view.name);
    const running = writers
      .run(async () => {
        let step: NodeStep | undefined = action;
        let on = view;
        let at = now;
        for (let attempt = 1; step && this.#acting(); attempt++) {
          try {
            // An attempt that ended here frees its slot in the next pass, at once.
            if (await this.#step(step, on, at, core)) this.#slotsFreed = true;
            this.#heldBack.delete(view.name);
            break;
          } catch (err) {
            if (!(err instanceof Conflict)) throw err;
            // 409: re-read and re-decide. The node is read now (the watch may lag the write that beat
            // ours by seconds on a busy API server) and the cache takes it. A node in an attempt is
            // re-decided here and moved on at once: its step depends on nothing but the node, its
            // slot and its health — and right after the agent's "rebooting", the host's own status
            // writes made every transition to Rebooting conflict and wait a pass or two (~1 s).
            this.#o.metrics?.conflicts.inc();
            const fresh = await core.readNode({ name: on.name }).catch((e: unknown) => {
              if (statusCode(e) === 404) return undefined; // deleted: the watch removes it from the cache
              throw e;
            });
            if (!fresh) break;
            this.#informer.upsertFromWrite(fresh);
            if (attempt >= CONFLICT_RETRIES) break;
            on = this.#view(fresh);
            at = new Date();
            step = this.#redecide(on, at);
          }
        }
        this.#queue.add(KEY);
      })
      .catch((err) => {
        if (refusal(err)) {
          this.#holdBack(view.name, err, `node step ${action.type}`);
          return;
        }
        this.#o.log('error', 'node step failed; retrying', {
          node: view.name,
          action: action.type,
          error: describeError(err),
        });
        this.#queue.addRateLimited(KEY);
      })
      .finally(() => {
        this.#stepping.delete(view.name);
        if (admission) this.#admitting.delete(view.name);
      });
    this.#stepping.set(view.name, running);
  }

  /**
   * decide() for one node in an attempt, on the last pass's ledger and health: the step it would take
   * now, or undefined when it holds no slot or has nothing to do (admissions are never re-decided
   * here: they need the whole budget).
   */
  #redecide(view: NodeView, now: Date): NodeStep | undefined {
    const slot = this.#lastPass?.ledger.slots[view.name];
    if (!slot || !this.#lastPass) return undefined;
    const { actions } = decide(
      {
        nodes: [this.#soak.view(view, now.getTime())],
        ledger: { slots: { [view.name]: slot } },
        draining: this.#drains.running(),
        admitting: new Set(),
        ownGrant: this.#grants.signed,
        health: this.#lastPass.health,
      },
      this.#decideConfig,
      now,
    );
    return actions.find(
      (a): a is NodeStep =>
        a.node === view.name && !isLedgerChange(a) && a.type !== 'admit' && a.type !== 'pending',
    );
  }

  /**
   * The slot of a node whose attempt just ended goes at once to the node promised it (Ledger.next), with
   * no pass and no ledger write in between: from a slot freed to the next node draining is one write.
   * decide() runs on the whole cache (the ended attempt in it, as written) and the ledger as this leader
   * last wrote it, so the budget is counted exactly as a pass would; and no pass gives a promised slot to
   * anyone else (decide() holds it back while the promise is withdrawn), so this needs no lock. The next
   * pass records the handover in the ledger (the successor claims the slot).
   */
  #handOver(ended: string): void {
    const ledger = this.#ledger.last;
    const successor = Object.entries(ledger?.next ?? {}).find(([, s]) => s.after === ended)?.[0];
    if (!ledger || !successor || this.#stepping.has(successor) || !this.#acting()) return;
    const node = this.#informer.get(successor);
    if (!node) return;
    const now = new Date();
    const { actions } = decide(
      {
        nodes: this.#informer.list().map((n) => this.#soak.view(this.#view(n), now.getTime())),
        ledger,
        draining: this.#drains.running(),
        admitting: this.#admitting,
        ownGrant: this.#grants.signed,
        health: this.#lastPass?.health ?? new Map(),
      },
      this.#decideConfig,
      now,
    );
    const admit = actions.find((a) => a.type === 'admit' && a.node === successor);
    if (admit?.type !== 'admit') return;
    this.#o.log('info', 'slot handed over', { from: ended, to: successor });
    this.#startStep(admit, this.#view(node), now, this.#handoverLane);
  }

  /**
   * One node's part of an action (its slot was already taken in the ledger, for an admission). Returns
   * true when the node's attempt ended and its slot is to be freed.
   */
  async #step(action: NodeStep, view: NodeView, now: Date, core: CoreV1Api): Promise<boolean> {
    const { log } = this.#o;
    switch (action.type) {
      case 'drain':
        this.#drains.start(view.name);
        return false;
      case 'admit':
        await this.#enterAttempt(view, action, now, core);
        return false;
      case 'abort':
        await this.#abortNode(view, action.reason, core);
        return true;
      case 'complete':
        await this.#writer.endAttempt(view, core, (fresh) => this.#write(action, fresh, now));
        this.#o.metrics?.completions.inc();
        this.#events.normal(view.name, 'Rebooted', 'rebooted and healthy; slot freed');
        log('info', 'completed', { node: view.name, ...(action.needSurvived ? { needSurvived: true } : {}) });
        this.#handOver(view.name);
        return true;
      case 'end':
        await this.#writer.endAttempt(view, core, (fresh) => this.#write(action, fresh, now));
        log('warn', 'attempt without a slot ended; cordon undone', {
          node: view.name,
          reason: action.reason,
        });
        return false;
      case 'transition':
        if (action.to === Phase.beforeReboot) {
          await this.#enterAttempt(view, action, now, core);
          return false;
        }
        await this.#writer.patch(view, this.#write(action, view, now), core);
        if (action.to === Phase.draining) this.#drains.start(view.name, { cordoned: true });
        if (action.failed) {
          this.#o.metrics?.failures.inc();
          this.#events.warning(view.name, 'RebootFailed', action.reason);
          log('error', 'node failed; its slot stays held', { node: view.name, reason: action.reason });
        } else {
          log('info', 'phase', { node: view.name, to: action.to, reason: action.reason });
        }
        return false;
      case 'revoke':
        await this.#writer.patch(view, this.#write(action, view, now), core);
        this.#o.metrics?.grantsRevoked.inc();
        this.#events.warning(view.name, 'ForeignGrant', action.reason);
        log('warn', 'removed a reboot grant nuo did not give', { node: view.name, reason: action.reason });
        return false;
      default:
        await this.#writer.patch(view, this.#write(action, view, now), core);
        return false;
    }
  }

  /** The node's write for a step (node-writes.ts). */
  #write(action: WriteAction, view: NodeView, now: Date): NodeWrite {
    return patchFor(action, view, this.#o.config, now);
  }

  /**
   * The node write that starts an admitted attempt: an admission's, or the same write redone for a node
   * the ledger gave a slot while its own write did not land (a 409 after a handover, a crash). Either way
   * this is where the node is admitted, so it is logged, counted and reported here, once per attempt:
   * the write is conditional, so only one of the two lands.
   */
  async #enterAttempt(view: NodeView, action: WriteAction & { reason: string }, now: Date, core: CoreV1Api) {
    const write = this.#write(action, view, now);
    await this.#writer.patch(view, write, core);
    // Without before-reboot hooks the attempt starts in Draining, cordoned in the same write: drain now.
    if (write.cordon && this.#acting()) this.#drains.start(view.name, { cordoned: true });
    this.#o.metrics?.admissions.inc();
    this.#events.normal(view.name, 'Admitted', `admitted for reboot: ${action.reason}`);
    this.#o.log('info', 'admitted', { node: view.name, reason: action.reason });
  }

  /** Ends an attempt that did not reach the reboot: own cordon undone, Pending (the caller frees the slot). */
  async #abortNode(
    decidedOn: Pick<NodeView, 'name' | 'state'>,
    reason: string,
    core = this.#core,
  ): Promise<void> {
    const { name } = decidedOn;
    const abort = { type: 'abort', node: name, reason } as const;
    await this.#writer.endAttempt(decidedOn, core, (fresh) => this.#write(abort, fresh, new Date()));
    this.#o.metrics?.failures.inc();
    this.#events.warning(name, 'AttemptAborted', reason);
    this.#o.log('warn', 'attempt aborted; slot released', { node: name, reason });
  }

  /**
   * Grants the reboot of a drained node, or ends the attempt of a drain that failed, on the node as it
   * is now. Another writer (the agent, the node-lifecycle controller) may change the node between the
   * read and the conditional write: that 409 is read again and retried here rather than sending the node
   * through a second drain. The first try writes on the cached node (the write is conditional, so a
   * stale cache costs a 409 and a read, and a fresh one saves a round trip per grant).
   */
  async #recordDrain(name: string, result: DrainResult, refused: number): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const cached = attempt === 1 ? this.#informer.get(name) : undefined;
      const fresh = viewNode(cached ?? (await this.#core.readNode({ name })));
      if (fresh.state !== Phase.draining) return;
      // Paused while draining: "leave this node alone" — keep it cordoned in its slot, grant nothing.
      // After resume, reconcile drains again (nothing left to evict) and grants then.
      if (fresh.paused) {
        this.#o.log('info', 'drained, but paused: no grant until resumed', { node: name });
        return;
      }
      try {
        if (result.outcome === DrainOutcome.drained && !fresh.unschedulable) {
          // Someone uncordoned it during the drain: pods may have landed since the drain's list.
          const reason = UNCORDONED_DURING_DRAIN;
          await this.#writer.patch(
            fresh,
            this.#write({ type: 'transition', node: name, to: Phase.draining, reason }, fresh, new Date()),
            this.#core,
          );
          this.#events.warning(name, 'UncordonedMidAttempt', reason);
          this.#o.log('warn', 'uncordoned during its drain: cordoned and drained again', { node: name });
        } else if (result.outcome === DrainOutcome.drained && !fresh.bootId) {
          // Without a boot ID a grant cannot name the boot it is for, nor a reboot be confirmed.
          await this.#abortNode(fresh, 'the node reports no boot ID (status.nodeInfo.bootID)');
          this.#slotsFreed = true;
        } else if (result.outcome === DrainOutcome.drained) {
          const grant = {
            type: 'grant',
            node: name,
            message: result.message,
            grant: await this.#grants.grant(fresh, (await this.#ledger.read()).ledger),
          } as const;
          await this.#writer.patch(fresh, this.#write(grant, fresh, new Date()), this.#core);
          this.#events.normal(name, 'RebootGranted', result.message);
          this.#o.log('info', 'reboot granted', { node: name, drain: result.message, refused });
        } else {
          await this.#abortNode(fresh, `drain ${result.message}`);
          this.#slotsFreed = true;
        }
        return;
      } catch (err) {
        if (!(err instanceof Conflict) || attempt >= CONFLICT_RETRIES || !this.#acting()) throw err;
      }
    }
  }
}

/** Where a node step's writes go: at most `writers` at once, over `core`'s connections. */
interface Lane {
  writers: Limiter;
  core: CoreV1Api;
}
