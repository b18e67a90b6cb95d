/**
 * The operator: the only component that decides. It watches Nodes, and while it leads it runs a
 * level-triggered control loop — read the cluster, decide() with a pure function, apply each action with
 * a conditional write (reconciler.ts, node-steps.ts, attempt-writes.ts) — that says when to look again.
 * Everything it knows is in the API (node annotations and the slot ledger): a new leader continues
 * exactly where the last one stopped. This module only wires the parts and runs the loop under the
 * leader election; it is over 400 lines because its constructor is the one place where every part (the
 * watches, readers, writers, protocol keepers and the decider) is built and connected.
 */
import {
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  KubernetesObjectApi,
  type V1Node,
} from '@kubernetes/client-node';
import { FLEETLOCK_LEADER_URL } from '../api/keys.ts';
import { Drainer } from '../drain/evict.ts';
import type { KubeLog } from '../kube/backoff.ts';
import { describeError } from '../kube/errors.ts';
import { Fence } from '../kube/fence.ts';
import { ResilientInformer } from '../kube/informer.ts';
import { LeaderElector } from '../kube/leader.ts';
import type { PooledKubeConfig } from '../kube/pooled-kubeconfig.ts';
import { WorkQueue } from '../kube/workqueue.ts';
import { Notifier } from '../notify/notifier.ts';
import { calendarClock, jobSettings, type OperatorConfig } from './config.ts';
import { slimNode } from './decide/node-view.ts';
import { OwnNode } from './decide/own-node.ts';
import { sameView } from './decide/view-change.ts';
import { Decider } from './decider.ts';
import type { OperatorMetrics } from './metrics.ts';
import { NodeSteps, type Wake } from './node-steps.ts';
import { PlanWatch } from './plans/plan-watch.ts';
import { PolicySource } from './policies/policies.ts';
import { PolicyStatusWriter } from './policies/policy-status-writer.ts';
import { informerProgress, liveness, Progress, readiness } from './probes.ts';
import { FleetLockNodes } from './protocols/fleetlock-nodes.ts';
import { KuredKeeper, withKured } from './protocols/kured-keeper.ts';
import { ProtocolOperatorWatch } from './protocols/protocol-operators.ts';
import { BlockerWatch } from './read/blocker-watch.ts';
import { DoNotDisruptReads } from './read/do-not-disrupt.ts';
import { HealthReads } from './read/health-reads.ts';
import { LedgerCache, LedgerStore } from './read/ledger.ts';
import { Reconciler } from './reconciler.ts';
import { AttemptWrites } from './write/attempt-writes.ts';
import { DrainRunner } from './write/drain-runner.ts';
import { EventRecorder } from './write/events.ts';
import { GrantSigner } from './write/grant-key.ts';
import { sameLifecycle } from './write/lifecycle-conditions.ts';
import { LifecycleWriter } from './write/lifecycle-writer.ts';
import { NodeWriter } from './write/node-writer.ts';
import { ProblemReports } from './write/problem-reports.ts';

export interface OperatorOptions {
  kubeconfig: PooledKubeConfig;
  config: OperatorConfig;
  identity: string;
  log: KubeLog;
  metrics?: OperatorMetrics;
  /** Leader election timings (defaults 15 s / 10 s / 2 s). */
  lease?: { leaseDurationMs: number; renewDeadlineMs: number; retryPeriodMs: number };
  /** The node this process runs on: it goes last, and its drain is handed over (own-node.ts). */
  nodeName?: string;
  /** Where this replica's FleetLock server answers, told to the others on the Lease while it leads. */
  fleetLockUrl?: string;
}

/**
 * Connections of the drains' own pool: evictions come in bursts (up to 50 a node, for every node
 * draining), and node writes, the ledger and the Lease renewal must not queue behind them. The Lease has
 * a connection of its own too.
 */
const DRAIN_CONNECTIONS = 64;
/** How long the leader decides on its own copy of the ledger before reading it again. */
const LEDGER_TTL_MS = 10_000;
/** The queue's one key: a pass decides for every node, so every event asks for the same pass. */
const KEY = 'cluster';

export class Operator {
  readonly #o: OperatorOptions;
  readonly #ledger: LedgerCache;
  readonly #informer: ResilientInformer<V1Node>;
  readonly #queue: WorkQueue<typeof KEY>;
  readonly #drains: DrainRunner;
  readonly #grants: GrantSigner;
  readonly #problems: ProblemReports;
  readonly #health: HealthReads;
  readonly #decider: Decider;
  readonly #policies: PolicySource;
  readonly #plans: PlanWatch;
  readonly #blockers: BlockerWatch;
  readonly #kured: KuredKeeper;
  readonly #protocolOperators: ProtocolOperatorWatch;
  readonly #optOuts: DoNotDisruptReads;
  readonly #statuses: PolicyStatusWriter;
  readonly #lifecycle: LifecycleWriter;
  readonly #notifier: Notifier;
  readonly #writes: AttemptWrites;
  readonly #steps: NodeSteps;
  readonly #reconciler: Reconciler;
  #elector: LeaderElector | undefined;
  /** The leader election loop has ended (a live process whose election ended is wedged). */
  #electionEnded = false;
  readonly #own: OwnNode;
  readonly #progress = new Progress();
  /** Drops requests that would change something while this replica does not lead (fence.ts). */
  readonly #fence = new Fence(() => (this.#acting() ? undefined : 'this replica does not lead now'));
  #leading: AbortSignal | undefined;
  #resync: ReturnType<typeof setTimeout> | undefined;
  /** How the parts ask for a pass; only a leader's requests count. */
  readonly #wake: Wake = {
    now: () => {
      if (this.#acting()) this.#queue.add(KEY);
    },
    after: (ms) => this.#queue.addAfter(KEY, ms),
    backoff: () => void this.#queue.addRateLimited(KEY),
  };

  constructor(options: OperatorOptions) {
    this.#o = options;
    this.#own = new OwnNode(options.nodeName, (node) => this.#handOver(node));
    const c = options.config;
    const { kubeconfig, log, metrics } = options;
    // Before any request: every pool is made with the fence in place (the leader election's excepted).
    kubeconfig.setFence(this.#fence);
    kubeconfig.setUserAgent(`nuo-operator (${options.identity})`);
    const core = kubeconfig.makeApiClient(CoreV1Api);
    const acting = () => this.#acting();
    this.#informer = new ResilientInformer<V1Node>({
      kubeconfig,
      path: '/api/v1/nodes',
      list: (opts) => core.listNode(opts),
      name: 'nodes',
      log,
      transform: slimNode,
    });
    this.#grants = new GrantSigner(core, c.namespace);
    this.#ledger = new LedgerCache(new LedgerStore(core, c.namespace), LEDGER_TTL_MS);
    const events = new EventRecorder(core, options.identity, log);
    this.#problems = new ProblemReports(events, log, metrics);
    this.#health = new HealthReads({
      core,
      soakMs: (node) => this.#decider.configOf(node).soakMs,
      log,
      onRead: this.#wake.now,
    });
    this.#policies = new PolicySource({ kubeconfig, log });
    const clock = calendarClock(c, Date.now());
    this.#plans = new PlanWatch({
      kubeconfig,
      events,
      intervalMs: c.planPollingIntervalMs,
      ...(c.sucPlansNamespace === '' ? {} : { sucNamespace: c.sucPlansNamespace }),
      lookIntervalMs: c.blockerIntervalMs,
      job: jobSettings(c),
      log,
      clock,
    });
    this.#optOuts = new DoNotDisruptReads({ core, log, onRead: this.#wake.now });
    this.#blockers = new BlockerWatch({
      core,
      objects: KubernetesObjectApi.makeApiClient(kubeconfig),
      intervalMs: c.blockerIntervalMs,
      onChange: this.#wake.now,
      log,
    });
    this.#kured = new KuredKeeper({
      apps: kubeconfig.makeApiClient(AppsV1Api),
      onChange: this.#wake.now,
      log,
    });
    this.#protocolOperators = new ProtocolOperatorWatch({
      coordination: kubeconfig.makeApiClient(CoordinationV1Api),
      core: kubeconfig.makeApiClient(CoreV1Api),
      apps: kubeconfig.makeApiClient(AppsV1Api),
      intervalMs: c.blockerIntervalMs,
      onChange: this.#wake.now,
      log,
    });
    this.#notifier = new Notifier({ core, namespace: c.namespace, log, ...(metrics ? { metrics } : {}) });
    const notifier = this.#notifier;
    this.#statuses = new PolicyStatusWriter({
      kubeconfig,
      events,
      notifier,
      log,
      ...(metrics ? { metrics } : {}),
    });
    this.#decider = new Decider({
      policies: () => this.#policies.state(),
      blockers: (policy) => withKured(this.#blockers.blockers(policy), this.#kured.view(policy)),
      kuredWant: (policy, want) => this.#kured.want(policy, want),
      sighting: this.#protocolOperators.sighting,
      nodeHolds: (waiting, now) => this.#optOuts.holds(waiting, now),
      evictablePods: (node) => this.#optOuts.evictablePods(node),
      paused: c.paused,
      nodes: this.#informer,
      draining: () => this.#drains.running(),
      ownGrant: this.#grants.signed,
      plans: () => this.#plans.passPlans(Date.now()),
      jobs: () => this.#plans.jobs.byNode(),
      planDrain: (ref, pool) => this.#plans.drain(ref, pool),
      ...(options.nodeName === undefined ? {} : { ownNode: options.nodeName }),
      clock,
    });
    this.#drains = new DrainRunner({
      drainer: new Drainer(kubeconfig.separatePool({ requestConnections: DRAIN_CONNECTIONS })),
      fence: this.#fence,
      config: c,
      log,
      metrics,
      leading: () => this.#leading,
      acting,
      record: async (node, result, refused) => {
        await this.#writes.recordDrain(node, result, refused);
        this.#steps.landed(node);
      },
      recordFailed: (node, err) => this.#steps.holdBack(node, err, "recording the drain's outcome"),
      waiting: (node, holds, blocked) =>
        void this.#writes.drainWaiting(node, holds, blocked).catch((err: unknown) =>
          log('warn', 'could not say on the node what its drain waits on', {
            node,
            error: describeError(err),
          }),
        ),
      ended: this.#wake.now,
      settings: (node) => this.#decider.drainOf(node),
    });
    this.#lifecycle = new LifecycleWriter({
      core,
      nodes: this.#informer,
      busy: (node) => this.#steps.has(node),
      wake: this.#wake,
      log,
      metrics,
    });
    this.#writes = new AttemptWrites({
      core,
      writer: new NodeWriter(
        this.#informer,
        acting,
        (node) => this.#decider.view(node),
        (node) => this.#decider.wrote(node),
      ),
      nodes: this.#informer,
      decider: this.#decider,
      drains: this.#drains,
      own: this.#own,
      grants: this.#grants,
      ledger: this.#ledger,
      events,
      notifier,
      lifecycle: this.#lifecycle,
      jobs: this.#plans.jobs,
      optOuts: this.#optOuts,
      steps: () => this.#steps,
      health: () => this.#reconciler.last?.health ?? new Map(),
      acting,
      log,
      metrics,
    });
    this.#steps = new NodeSteps({
      kubeconfig,
      core,
      nodes: this.#informer,
      decider: this.#decider,
      apply: this.#writes.apply,
      draining: (node) => this.#drains.has(node),
      held: (node) => this.#lifecycle.holds(node),
      lastPass: () => this.#reconciler.last,
      acting,
      wake: this.#wake,
      log,
      metrics,
    });
    this.#reconciler = new Reconciler({
      ledger: this.#ledger,
      decider: this.#decider,
      health: this.#health,
      problems: this.#problems,
      steps: this.#steps,
      lifecycle: this.#lifecycle,
      statuses: this.#statuses,
      planStatuses: (decision, nodes, ledger, now) => this.#plans.writeStatuses(decision, nodes, ledger, now),
      policies: () => this.#policies.state(),
      acting,
      log,
      metrics,
    });
    this.#queue = new WorkQueue<typeof KEY>({
      process: () => this.#reconcile(),
      name: 'reconcile',
      baseDelayMs: 100,
      maxDelayMs: 10_000,
      log,
    });
  }

  /** True while this replica may write: it leads and renewed its lease recently. */
  #acting(): boolean {
    return this.#leading !== undefined && !this.#leading.aborted && this.#elector?.isLeader() === true;
  }

  /** The operator as its FleetLock server reads and writes it (the server answers only while it leads). */
  fleetLock(): FleetLockNodes {
    return new FleetLockNodes({
      core: this.#o.kubeconfig.makeApiClient(CoreV1Api),
      nodes: this.#informer,
      view: (node) => this.#decider.view(node),
      poolOf: (node) => this.#decider.poolOf(node),
      acting: () => this.#acting(),
      leader: () => this.#elector?.advert(FLEETLOCK_LEADER_URL),
    });
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
      if (
        type === 'update' &&
        old &&
        sameView(this.#decider.view(old), this.#decider.view(node)) &&
        sameLifecycle(old, node)
      )
        return;
      this.#queue.add(KEY);
    });
    if (!(await this.#sync(signal))) return;
    this.#sayOwnNode();
    this.#policies.onChange(() => {
      if (!this.#acting()) return;
      this.#blockers.sync(this.#policies.state().policies);
      this.#kured.sync(this.#policies.state().policies);
      this.#protocolOperators.sync(this.#policies.state().policies);
      this.#wake.now();
    });
    this.#policies.start();
    this.#plans.onChange(() => this.#wake.now());
    this.#plans.start();
    this.#elector = new LeaderElector({
      kubeconfig: this.#o.kubeconfig.separatePool({ requestConnections: 1, fenced: false }),
      namespace: this.#o.config.namespace,
      name: 'nuo-operator',
      identity: this.#o.identity,
      ...this.#o.lease,
      ...(this.#o.fleetLockUrl ? { advert: { key: FLEETLOCK_LEADER_URL, value: this.#o.fleetLockUrl } } : {}),
      log,
      onStartedLeading: (leading) => this.#startedLeading(leading),
      onStoppedLeading: () => {
        log('warn', 'stopped leading: no further actions', { identity: this.#o.identity });
        this.#o.metrics?.leader.set(0);
        this.#leading = undefined;
        this.#drains.abortAll();
        this.#blockers.stop();
        this.#kured.stop();
        this.#protocolOperators.stop();
        clearTimeout(this.#resync);
      },
    });
    try {
      await this.#elector.run(signal);
    } finally {
      this.#electionEnded = true;
      clearTimeout(this.#resync);
      this.#blockers.stop();
      this.#kured.stop();
      this.#protocolOperators.stop();
      this.#drains.abortAll();
      // Notifications still queued at shutdown are dropped: the next leader tells what happens next.
      this.#notifier.stop();
      await this.#queue.shutdown();
      await this.#steps.settled();
      await Promise.all([this.#informer.stop(), this.#policies.stop(), this.#plans.stop()]);
    }
  }

  /**
   * Fills the node cache; false when shut down first. A shutdown before the cache syncs (the API server
   * unreachable, a clock TLS refuses) ends it here: the informer would otherwise retry its list for as
   * long as the process lives.
   */
  async #sync(signal: AbortSignal): Promise<boolean> {
    if (signal.aborted) return false;
    const stopInformer = () => void this.#informer.stop();
    signal.addEventListener('abort', stopInformer, { once: true });
    try {
      await this.#informer.start();
    } catch (err) {
      if (!signal.aborted) throw err;
      this.#o.log('info', 'stopped before the node cache synced');
      return false;
    } finally {
      signal.removeEventListener('abort', stopInformer);
    }
    this.#o.log('info', 'node cache synced', { nodes: this.#informer.list().length });
    return true;
  }

  /** Says whether this process knows its node, and whether the cluster has that node. */
  #sayOwnNode(): void {
    const { log, nodeName } = this.#o;
    if (nodeName === undefined) {
      log(
        'info',
        "own node unknown (--node-name, or NODE_NAME from the downward API's spec.nodeName, unset): it is not ordered last, and the leader drains it without handing over first",
      );
    } else if (!this.#informer.get(nodeName)) {
      log('warn', 'own node not in the cluster: check --node-name (or NODE_NAME); no node goes last', {
        node: nodeName,
      });
    } else log('info', 'own node known: it goes last in its pool, its drain handed over', { node: nodeName });
  }

  /**
   * Steps down before the drain of this process's own node, which would evict it: the Lease is released
   * for a standby to drain the node; without one, this replica leads again after one lease duration.
   */
  #handOver(node: string): void {
    this.#o.log('info', 'handing over the leadership: its own node is to be drained', {
      node,
      identity: this.#o.identity,
      pauseMs: this.#elector?.leaseDurationMs,
    });
    this.#elector?.handOver(`its own node ${node} is to be drained`);
  }

  /** A new leadership observes afresh: what was seen or cached before it may have changed unseen since. */
  #startedLeading(leading: AbortSignal): void {
    this.#o.log('info', 'became leader', { identity: this.#o.identity });
    this.#o.metrics?.leader.set(1);
    this.#leading = leading;
    this.#ledger.forget();
    this.#health.clear();
    this.#problems.clear();
    this.#decider.clear();
    this.#statuses.clear();
    this.#lifecycle.clear();
    this.#plans.clear();
    this.#optOuts.clear();
    this.#blockers.sync(this.#policies.state().policies);
    this.#kured.sync(this.#policies.state().policies);
    this.#protocolOperators.sync(this.#policies.state().policies);
    // Ready before the first grant: a replica that cannot read or create the key says so at once.
    this.#grants.prepare().catch((err: unknown) => this.#o.log('error', describeError(err)));
    this.#queue.add(KEY);
  }

  /** The queue's handler: a pass while this replica leads, and when to look again. */
  async #reconcile(): Promise<void> {
    if (!this.#acting()) return;
    clearTimeout(this.#resync);
    const result = await this.#reconciler.pass();
    if ('spacedMs' in result) {
      this.#queue.addAfter(KEY, result.spacedMs);
      return;
    }
    if ('backoff' in result) {
      this.#queue.addRateLimited(KEY);
      return;
    }
    this.#queue.forget(KEY);
    if (this.#acting()) this.#resync = setTimeout(() => this.#queue.add(KEY), result.requeueAfterMs);
  }
}
