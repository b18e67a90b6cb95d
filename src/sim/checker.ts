/**
 * The independent safety checker: watches every Node on its own (sharing nothing with the operator) and
 * records each violation of the safety rules it can see — more nodes disrupted than the budget, a reboot
 * without a grant nuo gave or of a node left schedulable (so never drained), a node rebooted twice for
 * one need, an admin's cordon removed, nuo's cordon on a node outside an attempt or left behind after
 * the rollout, more nodes in a Plan's attempts at once than its concurrency, and nuo's node lifecycle
 * conditions or the autoscalers' protection it set left behind after an attempt ended.
 *
 * A node whose pool's agents speak CLUO's or FLUO's protocol (its Budget says so) has no signed grant: its
 * reboot is nuo's when the protocol's `reboot-ok` is "true" in a grant phase for the boot it rebooted from
 * (checker-protocols.ts), and of a node cordoned before its agent acted: a cordon the agent made itself
 * (it cordons a node it finds schedulable) means nuo never drained it.
 *
 * Plans' attempts count as nuo's: a node in Upgrading, or running a pod of a Plan's Job (labelled
 * nuo.dev/plan; it watches those pods too), is in an attempt. A reboot of such a node is the Plan's own:
 * the Plan decides whether its node is drained, and its Job may reboot the node itself, so neither a grant
 * nor a cordon is asked of it, and it is not counted against the node's staged updates.
 *
 * The budget, checked two ways: nuo's attempts alone never exceed it; and no attempt starts while the
 * nodes already disrupted (NotReady, cordoned by anyone, or in an attempt) leave no room. A disruption
 * that began less than RACE_MS before an attempt started is not held against it: no client can see
 * another's write before it is made, and an admin who cordons a node as nuo admits another one is a
 * coincidence the next admission accounts for.
 *
 * A policy's gates (options.gates) are judged by checker-gates.ts, which it tells of each admission and
 * each attempt that ends: no admission while a health check fails or the pool is Halted, reason budgets
 * and the remediation rate limit.
 *
 * Over 400 lines on purpose: the rules that share what the watches saw (attempts, disruptions, cordons,
 * reboots) stay in one class, fed in the order the API server delivered each object; what a rule decides
 * from that state alone is a pure function in checker-*.ts.
 */
import type { KeyObject } from 'node:crypto';
import {
  AppsV1Api,
  CoreV1Api,
  type KubeConfig,
  type V1DaemonSet,
  type V1Node,
  type V1Pod,
} from '@kubernetes/client-node';
import { GRANT_KEY_NAME, GrantCheck, PUBLIC_KEY_FIELD, publicKeyFromPem, verifyGrant } from '../api/grant.ts';
import {
  AgentProtocol,
  Annotations,
  DEFAULT_NAMESPACE,
  isCoreosProtocol,
  JobLabels,
  protocolKeys,
  SCALE_DOWN_PROTECTION,
} from '../api/keys.ts';
import { isPhase, Phase } from '../api/phases.ts';
import { statusCode } from '../kube/errors.ts';
import { compareResourceVersions, ResilientInformer } from '../kube/informer.ts';
import { pollUntil } from '../util/poll.ts';
import { GateChecker, type GateSettings } from './checker-gates.ts';
import { settledDisruptions } from './checker-gates-rules.ts';
import { type KuredLockRef, kuredHolders } from './checker-kured.ts';
import {
  endedBeforeNewBoot,
  gatesPassedBy,
  type NodeGateMemory,
  type NodeGateSettings,
  refreshNotCounted,
  remember,
  writtenAt,
} from './checker-node-gates.ts';
import { CORDONED_PHASES, inAttemptPhase, lifecycleLeft, protectionLeft } from './checker-phases.ts';
import {
  isPlanReboot,
  nodeOfPlanPod,
  type PlanBudget,
  planAttemptOf,
  planConcurrencyBreaches,
  planNodes,
} from './checker-plans.ts';
import { protocolGrantMissing, rebootMarkOf } from './checker-protocols.ts';
import { type Budget, disruptedNow, inAttempt, labelsOf, podNodes, scopes } from './checker-scopes.ts';
import { rolloutOver, WaveTally } from './checker-waves.ts';
import type { Violation } from './violation.ts';

/** How long the checker asks for the grant key while the API server does not answer. */
const KEY_READ_MS = 60_000;

export type { PlanBudget } from './checker-plans.ts';
export type { Violation } from './violation.ts';

/** How long nuo may take to remove the lifecycle conditions of an attempt that ended. */
export const LIFECYCLE_GRACE_MS = 15_000;

/** How long before an attempt starts a disruption must have begun to count against it. */
export const RACE_MS = 2000;

export type { Budget } from './checker-scopes.ts';

export interface CheckerOptions {
  /** The operator's namespace, where it publishes the key its grants are verified with. */
  namespace?: string;
  /** Plans held to a concurrency of their own ('plan-concurrency'), besides their pools' budgets. */
  plans?: PlanBudget[];
  /**
   * kured runs beside nuo, its lock where this says: a node its lock names is in an attempt (kured's),
   * counted in every budget, and its reboot is kured's own (no grant asked; drained still).
   */
  kured?: KuredLockRef;
  /** One policy's gates held to their rules (checker-gates.ts): health check, halt, reason budgets. */
  gates?: GateSettings;
  /** The pools' retry backoff and loop limit, held to at each admission (checker-node-gates.ts). */
  nodeGates?: NodeGateSettings;
}

/**
 * Whether an update lifts an admin's cordon shown since resourceVersion `since` ('' for any version):
 * it goes from a version that showed the cordon to one without it. An uncordon from before the cordon,
 * delivered late by a watch, does not.
 */
export function undoesAdminCordon(since: string | undefined, node: V1Node, old: V1Node | undefined): boolean {
  if (since === undefined || !old?.spec?.unschedulable || node.spec?.unschedulable) return false;
  return since === '' || (compareResourceVersions(old.metadata?.resourceVersion, since) ?? 0) >= 0;
}

export class SafetyChecker {
  readonly violations: Violation[] = [];
  maxDisrupted = 0;
  /** The most nodes in each held Plan's attempts at once ("namespace/name" → count), as the watches saw. */
  readonly maxOfPlan = new Map<string, number>();
  readonly #budgets: Budget[];
  readonly #namespace: string;
  readonly #informer: ResilientInformer<V1Node>;
  /** Pods of Plans' Jobs (labelled nuo.dev/plan), in every namespace. */
  readonly #planPods: ResilientInformer<V1Pod>;
  readonly #plans: PlanBudget[];
  /** kured's DaemonSet, whose annotation is its lock, when kured runs beside nuo. */
  readonly #kured: { ref: KuredLockRef; informer: ResilientInformer<V1DaemonSet> } | undefined;
  /** The gates' view, when a policy's gates are held to their rules. */
  readonly gates: GateChecker | undefined;
  /** Reboots that were kured's, per node. */
  readonly #kuredReboots = new Map<string, number>();
  /** Reboots that were a Plan's own, per node. */
  readonly #planReboots = new Map<string, number>();
  /** Plan attempts ("node attempt") that asked nuo for their reboot and had it: one each. */
  readonly #planAttemptsRebooted = new Set<string>();
  /**
   * Nodes an admin cordoned → the resourceVersion of the object that first showed that cordon ('' when
   * told before the write): only an update from that version on can undo it, not one the watch delivers
   * late from before it.
   */
  readonly #adminCordoned = new Map<string, string>();
  /** What the checker counts of each waved budget's rollout. */
  readonly #waves = new WaveTally();
  /** performance.now() since when each disrupted node has been disrupted, as this watch saw it. */
  readonly #disruptedSince = new Map<string, number>();
  /** The autoscalers' protection annotations each node carried when first seen: someone else's. */
  readonly #protectionBefore = new Map<string, Set<string>>();
  #grantKey: KeyObject | undefined;
  readonly #reboots = new Map<string, number>();
  readonly #allowedReboots = new Map<string, number>();
  /** What each node showed of its own gates (checker-node-gates.ts). */
  readonly #gateMemory = new Map<string, NodeGateMemory>();
  readonly #nodeGates: NodeGateSettings | undefined;
  /** Nodes whose host rebooted out of the boot ID they still show, and their boot time then. */
  readonly #rebootedFrom = new Map<string, { bootId: string; bootTime: string | undefined }>();
  /** Each node's boot time as it was at its last reboot (a refresh after it must see it advance). */
  readonly #bootTimeAtReboot = new Map<string, string>();
  readonly #core: CoreV1Api;
  /** Confirmations still in flight; awaited by settle(). */
  readonly #pending: Promise<void>[] = [];

  /** `budget`: one budget over every node, or each pool's. */
  constructor(kubeconfig: KubeConfig, budget: number | Budget[], options: CheckerOptions = {}) {
    this.#budgets = typeof budget === 'number' ? [{ name: '', selects: () => true, max: budget }] : budget;
    this.#nodeGates = options.nodeGates;
    this.#namespace = options.namespace ?? DEFAULT_NAMESPACE;
    this.#plans = options.plans ?? [];
    const core = kubeconfig.makeApiClient(CoreV1Api);
    this.#core = core;
    this.#informer = new ResilientInformer<V1Node>({
      kubeconfig,
      path: '/api/v1/nodes',
      list: (opts) => core.listNode(opts),
      name: 'checker',
    });
    this.#informer.onEvent((type, node, old) => this.#observe(type, node, old));
    this.#planPods = new ResilientInformer<V1Pod>({
      kubeconfig,
      path: '/api/v1/pods',
      list: (opts) => core.listPodForAllNamespaces(opts),
      labelSelector: JobLabels.plan,
      name: 'checker-plan-pods',
    });
    this.#planPods.onEvent((type, pod, old) => this.#observePlanPod(type, pod, old));
    if (options.kured) {
      const ref = options.kured;
      const apps = kubeconfig.makeApiClient(AppsV1Api);
      const informer = new ResilientInformer<V1DaemonSet>({
        kubeconfig,
        path: `/apis/apps/v1/namespaces/${ref.namespace}/daemonsets`,
        list: (opts) => apps.listNamespacedDaemonSet({ ...opts, namespace: ref.namespace }),
        name: 'checker-kured',
      });
      informer.onEvent(() => this.#observeKured());
      this.#kured = { ref, informer };
    }
    this.gates = options.gates && new GateChecker(kubeconfig, options.gates);
  }

  /** The nodes kured's lock names now, as this watch saw it. */
  #kuredHeld(): Set<string> {
    if (!this.#kured) return new Set();
    const { ref, informer } = this.#kured;
    const ds = informer.list().find((d) => d.metadata?.name === ref.name);
    return kuredHolders(ds?.metadata?.annotations?.[ref.annotation], Date.now());
  }

  /** The nodes in an attempt by something else than their keys: a Plan Job's pod, or kured's lock. */
  #planPodNodes(): Set<string> {
    return new Set([...podNodes(this.#planPods.list()), ...this.#kuredHeld()]);
  }

  /** kured's lock changed: a node it holds now is in kured's attempt (its admission checked). */
  #observeKured(): void {
    const held = this.#planPodNodes();
    for (const name of this.#kuredHeld()) {
      const node = this.#informer.get(name);
      if (!node) continue;
      const wasDisrupted = this.#disruptedSince.has(name);
      this.#track(node, held);
      if (!wasDisrupted && !inAttempt(node, podNodes(this.#planPods.list()))) this.#checkAdmission(name);
    }
    this.#count();
  }

  async start(): Promise<void> {
    this.#grantKey = await this.#readGrantKey();
    await Promise.all([
      this.#informer.start(),
      this.#planPods.start(),
      this.#kured?.informer.start(),
      this.gates?.start(),
    ]);
    const planPodNodes = this.#planPodNodes();
    for (const n of this.#informer.list()) {
      this.#firstSeen(n);
      // Disrupted before the checker looked: long enough for any admission to have seen it.
      if (disruptedNow(n, planPodNodes))
        this.#disruptedSince.set(n.metadata?.name ?? '', Number.NEGATIVE_INFINITY);
      if (n.spec?.unschedulable && n.metadata?.annotations?.[Annotations.cordonedByNuo] !== 'true') {
        this.#adminCordoned.set(n.metadata?.name ?? '', n.metadata?.resourceVersion ?? '');
      }
    }
    this.#count();
  }

  /** Records the autoscalers' protection a node carries when the checker first sees it. */
  #firstSeen(n: V1Node): void {
    const name = n.metadata?.name ?? '';
    if (this.#protectionBefore.has(name)) return;
    const a = n.metadata?.annotations ?? {};
    this.#protectionBefore.set(name, new Set(SCALE_DOWN_PROTECTION.filter((k) => a[k] !== undefined)));
  }

  /**
   * An admin cordoned `node` (a test's or the chaos runner's own write, told before it is sent, or after
   * it landed with the resourceVersion it wrote, `since`): its cordon must outlast nuo's attempts.
   */
  adminCordon(node: string, since = ''): void {
    this.#adminCordoned.set(node, since);
  }

  /** The admin lifts their cordon (told before the uncordon is sent): from now on nuo may too. */
  adminUncordon(node: string): void {
    this.#adminCordoned.delete(node);
  }

  /** Each node may reboot `times` more times (once per staged update). */
  allowReboots(node: string, times = 1): void {
    this.#allowedReboots.set(node, (this.#allowedReboots.get(node) ?? 0) + times);
  }

  /**
   * Called by the simulated host at the moment it reboots, from boot `bootId`. The node must carry a
   * grant signed with the operator's published key for this node and boot, and be cordoned (a drained
   * node is unschedulable until its attempt ends). The checker's own watch may lag the agent's by a few
   * milliseconds, so a miss is confirmed with a read before it counts (the grant is withdrawn and the
   * cordon undone only after the boot ID changes, later than this read).
   */
  onReboot(node: string, bootId: string): void {
    const at = new Date();
    const cached = this.#informer.get(node);
    const bootTime = cached?.metadata?.annotations?.[Annotations.bootTime];
    this.#rebootedFrom.set(node, { bootId, bootTime });
    if (bootTime !== undefined) this.#bootTimeAtReboot.set(node, bootTime);
    else this.#bootTimeAtReboot.delete(node);
    if (this.#kuredHeld().has(node)) this.#kuredReboot(node, cached);
    else if (isPlanReboot(node, cached, this.#planPods.list(), at)) this.#planReboot(node);
    else if (!this.#granted(cached, bootId) || !this.#cordonedForReboot(cached)) {
      this.#pending.push(this.#confirmReboot(node, bootId, at));
    } else this.#countReboot(node, cached);
  }

  /** kured rebooted a node it holds its lock for: one of its staged updates, and drained by kured first. */
  #kuredReboot(node: string, n: V1Node | undefined): void {
    this.#kuredReboots.set(node, (this.#kuredReboots.get(node) ?? 0) + 1);
    this.#countReboot(node, n);
    if (n?.spec?.unschedulable !== true)
      this.#violate('reboot-not-drained', `${node} rebooted by kured while schedulable`);
  }

  /** The node's reboots that were kured's. */
  kuredRebootsOf(node: string): number {
    return this.#kuredReboots.get(node) ?? 0;
  }

  #planReboot(node: string): void {
    this.#planReboots.set(node, (this.#planReboots.get(node) ?? 0) + 1);
  }

  /**
   * One more granted reboot of `node`: for its staged updates, else for the Plan attempt that asked nuo
   * for it (`reboot: true`: once per attempt, which its grant names); past those, a double reboot.
   */
  #countReboot(node: string, n: V1Node | undefined): void {
    const count = (this.#reboots.get(node) ?? 0) + 1;
    const attempt = planAttemptOf(n);
    if (
      count > (this.#allowedReboots.get(node) ?? 0) &&
      attempt &&
      !this.#planAttemptsRebooted.has(attempt)
    ) {
      this.#planAttemptsRebooted.add(attempt);
      return;
    }
    this.#reboots.set(node, count);
    if (count > (this.#allowedReboots.get(node) ?? 0)) {
      this.#violate(
        'double-reboot',
        `${node} rebooted ${count} times for ${this.#allowedReboots.get(node) ?? 0} staged update(s)`,
      );
    }
  }

  async #confirmReboot(node: string, bootId: string, at: Date): Promise<void> {
    const [n, pods] = await Promise.all([
      this.#core.readNode({ name: node }).catch(() => undefined),
      this.#core
        .listPodForAllNamespaces({ labelSelector: JobLabels.plan, fieldSelector: `spec.nodeName=${node}` })
        .then((list) => list.items)
        .catch(() => []),
    ]);
    if (isPlanReboot(node, n, pods, at)) {
      this.#planReboot(node);
      return;
    }
    this.#countReboot(node, n);
    if (!this.#granted(n, bootId)) {
      // The key may have been published (or replaced) since it was read: read it once more.
      this.#grantKey = await this.#readGrantKey();
      if (!this.#granted(n, bootId)) {
        const value = n?.metadata?.annotations?.[Annotations.rebootOk];
        const protocol = this.#protocolOf(n);
        const why =
          protocol !== AgentProtocol.nuo
            ? protocolGrantMissing(n, protocol, bootId)
            : value === undefined
              ? 'no nuo.dev/reboot-ok'
              : (verifyGrant(this.#grantKey, value, { node, bootId }).why ?? 'not valid');
        this.#violate('reboot-without-grant', `${node} rebooted without a grant nuo gave: ${why}`);
      }
    }
    if (!this.#cordonedForReboot(n)) {
      const own = n && this.#ownCordon(n);
      this.#violate(
        'reboot-not-drained',
        own
          ? `${node} rebooted under its agent's own cordon (${own}), not drained by nuo`
          : `${node} rebooted while schedulable`,
      );
    }
  }

  /** The protocol of the node's pool: the first budget that selects it says (nuo's by default). */
  #protocolOf(n: V1Node | undefined): AgentProtocol {
    if (!n) return AgentProtocol.nuo;
    return this.#budgets.find((b) => b.selects(labelsOf(n)))?.protocol ?? AgentProtocol.nuo;
  }

  #granted(n: V1Node | undefined, bootId: string): boolean {
    const protocol = this.#protocolOf(n);
    if (protocol !== AgentProtocol.nuo) return protocolGrantMissing(n, protocol, bootId) === undefined;
    const value = n?.metadata?.annotations?.[Annotations.rebootOk];
    if (value === undefined || !n) return false;
    return (
      verifyGrant(this.#grantKey, value, { node: n.metadata?.name ?? '', bootId }).check === GrantCheck.valid
    );
  }

  /**
   * Unschedulable now, or when the agent marked the reboot as started: an uncordon that lands between
   * the agent's conditional mark and the reboot itself is a person's act on a node going down.
   */
  #cordonedForReboot(n: V1Node | undefined): boolean {
    if (n && this.#ownCordon(n)) return false;
    return n?.spec?.unschedulable === true || this.#markedCordoned.has(n?.metadata?.name ?? '');
  }

  /**
   * The key that says CLUO's or FLUO's agent cordoned the node itself (it drains on its own then): nuo
   * had not cordoned it, so had not drained it. Undefined for a node of nuo's agent.
   */
  #ownCordon(n: V1Node): string | undefined {
    const protocol = this.#protocolOf(n);
    if (!isCoreosProtocol(protocol)) return undefined;
    const key = protocolKeys(protocol).agentMadeUnschedulable;
    return n.metadata?.annotations?.[key] === 'true' ? `${key}="true"` : undefined;
  }

  /** Nodes whose agent marked reboot-in-progress while the node was unschedulable (until the mark goes). */
  readonly #markedCordoned = new Set<string>();

  /**
   * The published grant key, or the one read before while none is published. A read the API server does
   * not answer (a fault restarting it) is asked again for up to KEY_READ_MS: it says nothing of the key.
   */
  async #readGrantKey(): Promise<KeyObject | undefined> {
    const read = () =>
      this.#core.readNamespacedConfigMap({ name: GRANT_KEY_NAME, namespace: this.#namespace }).then(
        (cm) => cm,
        (err: unknown) => (statusCode(err) === 404 ? null : undefined),
      );
    const cm = await pollUntil('the grant key read', read, { timeoutMs: KEY_READ_MS, intervalMs: 250 }).catch(
      () => null,
    );
    const pem = cm?.data?.[PUBLIC_KEY_FIELD];
    return pem ? publicKeyFromPem(pem) : this.#grantKey;
  }

  /** The rollout did not finish within its bound (judged by the runner, which knows the bound). */
  notFinished(detail: string): void {
    this.#violate('not-finished', detail);
  }

  /** Waits for pending confirmations, so `violations` is complete. */
  async settle(): Promise<void> {
    await Promise.all(this.#pending);
  }

  /** The node's reboots for its staged updates (a Plan's own reboots are not among them). */
  rebootsOf(node: string): number {
    return this.#reboots.get(node) ?? 0;
  }

  /** The node's reboots that were a Plan's own. */
  planRebootsOf(node: string): number {
    return this.#planReboots.get(node) ?? 0;
  }

  /**
   * After the rollout: every cordon nuo made is gone, every admin cordon still there, and outside an
   * attempt no protection from the autoscalers that nuo set. `failedClosed` names nodes expected to keep
   * nuo's cordon (a node that never came back is Failed and fails closed).
   * Judged on a fresh list, not on the watch: the write that ended the last attempt may not have reached
   * the watch yet when the caller saw it in its own read.
   */
  async finalCheck(failedClosed: Iterable<string> = []): Promise<void> {
    const exempt = new Set(failedClosed);
    for (const n of (await this.#core.listNode()).items) {
      const name = n.metadata?.name ?? '';
      if (exempt.has(name)) continue;
      if (
        n.metadata?.annotations?.[Annotations.cordonedByNuo] === 'true' ||
        (n.spec?.unschedulable && !this.#adminCordoned.has(name))
      ) {
        this.#violate('cordon-left', `${name} is still cordoned by nuo after the rollout`);
      }
      const left = protectionLeft(n, this.#protectionBefore.get(name) ?? new Set());
      if (left.length > 0)
        this.#violate('protection-left', `${name} still carries ${left.join(', ')} after the rollout`);
    }
    await this.#lifecycleCheck(exempt);
    for (const b of (await this.gates?.final()) ?? []) this.#violate(b.rule, b.detail);
  }

  /**
   * Every lifecycle condition nuo published is gone once its attempt ended. nuo writes them one pass after
   * the phase, so a leftover counts only if it outlives LIFECYCLE_GRACE_MS.
   */
  async #lifecycleCheck(exempt: ReadonlySet<string>): Promise<void> {
    const leftovers = async () =>
      (await this.#core.listNode()).items
        .filter((n) => !exempt.has(n.metadata?.name ?? ''))
        .map((n) => [n.metadata?.name ?? '', lifecycleLeft(n)] as const)
        .filter(([, left]) => left.length > 0);
    const settled = await pollUntil(
      'nuo to remove the lifecycle conditions of ended attempts',
      async () => ((await leftovers()).length === 0 ? true : undefined),
      { timeoutMs: LIFECYCLE_GRACE_MS, intervalMs: 250 },
    ).catch(() => false);
    if (settled) return;
    for (const [name, left] of await leftovers()) {
      this.#violate('conditions-left', `${name} still carries nuo's ${left.join(', ')} outside an attempt`);
    }
  }

  disrupted(): string[] {
    const planPodNodes = this.#planPodNodes();
    return this.#informer
      .list()
      .filter((n) => disruptedNow(n, planPodNodes))
      .map((n) => n.metadata?.name ?? '');
  }

  #observe(type: string, node: V1Node, old: V1Node | undefined): void {
    const name = node.metadata?.name ?? '';
    // A node deleted and registered again while the watch was down: a list shows only the new one.
    if (type === 'update' && old?.metadata?.uid && node.metadata?.uid !== old.metadata.uid) {
      this.#observe('delete', old, undefined);
      this.#observe('add', node, undefined);
      return;
    }
    if (type === 'delete') {
      this.#gateMemory.delete(name);
      this.#rebootedFrom.delete(name);
      this.#waves.deleted(
        name,
        this.#budgets.filter((b) => b.waves && b.selects(labelsOf(node))).map((b) => b.name),
        inAttemptPhase(node),
      );
      this.#adminCordoned.delete(name);
      this.#markedCordoned.delete(name);
      this.#disruptedSince.delete(name);
      this.#protectionBefore.delete(name);
      if (this.#gated(node)) {
        this.gates?.ended(node, false);
        this.gates?.nodeSeen(name, undefined);
      }
      this.#count();
      return;
    }
    if (type === 'add') this.#firstSeen(node);
    if (type === 'update' && undoesAdminCordon(this.#adminCordoned.get(name), node, old)) {
      this.#violate('admin-cordon-removed', `${name}: an admin's cordon was removed`);
    }
    const annotations = node.metadata?.annotations ?? {};
    const state = annotations[Annotations.state];
    // A phase nuo never writes (a third client's garbage) is not nuo's act; what nuo does next is.
    if (
      annotations[Annotations.cordonedByNuo] === 'true' &&
      (state === undefined || isPhase(state)) &&
      !CORDONED_PHASES.has(state ?? '') &&
      (type === 'add' ||
        old?.metadata?.annotations?.[Annotations.cordonedByNuo] !== 'true' ||
        old?.metadata?.annotations?.[Annotations.state] !== state)
    ) {
      this.#violate('cordon-outside-attempt', `${name} is cordoned by nuo in phase ${state ?? '(none)'}`);
    }
    const mark = rebootMarkOf(this.#protocolOf(node));
    const marked = annotations[mark] === 'true';
    if (!marked) this.#markedCordoned.delete(name);
    else if (old?.metadata?.annotations?.[mark] !== 'true' && node.spec?.unschedulable)
      this.#markedCordoned.add(name);
    const planPodNodes = this.#planPodNodes();
    this.#track(node, planPodNodes);
    this.#countWaves(node, type === 'update' ? old : undefined);
    if (this.#rebootedFrom.get(name)?.bootId !== node.status?.nodeInfo?.bootID)
      this.#rebootedFrom.delete(name);
    if (type === 'update' && inAttempt(node, planPodNodes) && !inAttempt(old, planPodNodes)) {
      this.#checkAdmission(name);
    }
    if (type === 'update' && !inAttempt(node, planPodNodes) && inAttempt(old, planPodNodes)) {
      if (this.#gated(node))
        this.gates?.ended(node, old?.metadata?.annotations?.[Annotations.state] === Phase.afterReboot);
      const early = endedBeforeNewBoot(node, this.#rebootedFrom.get(name)?.bootId);
      if (early) this.#violate('ended-before-boot', early);
    }
    if (this.#gated(node)) this.gates?.nodeSeen(name, node);
    this.#remember(node);
    this.#count();
  }

  /** Whether the gates' rules apply to `node`: it is in their policy's pool. */
  #gated(node: V1Node): boolean {
    return this.gates?.selects(node) === true;
  }

  /** What the node shows of its own gates, as of the write that made this version (its API server time). */
  #remember(node: V1Node): void {
    const name = node.metadata?.name ?? '';
    const at = writtenAt(node);
    if (at === undefined) return;
    this.#gateMemory.set(name, remember(this.#gateMemory.get(name) ?? {}, node, at));
  }

  /** The admission of `node` went through its own gates, and a refresh after a reboot saw it advance. */
  #checkNodeGates(started: V1Node): void {
    const name = started.metadata?.name ?? '';
    const at = writtenAt(started);
    if (at !== undefined)
      for (const detail of gatesPassedBy(
        started,
        this.#gateMemory.get(name) ?? {},
        this.#nodeGates,
        at,
        RACE_MS,
      ))
        this.#violate('gate-bypassed', detail);
    if (!this.#gated(started) || this.gates?.reasonOf(started) !== 'Refresh') return;
    const stuck = refreshNotCounted(started, this.#bootTimeAtReboot.get(name));
    if (stuck) this.#violate('refresh-not-counted', stuck);
  }

  /** A completed attempt counts in its waved pool's rollout; a rollout with nothing left starts over. */
  #countWaves(node: V1Node, old: V1Node | undefined): void {
    const budgets = this.#budgets
      .filter((b) => b.waves && b.selects(labelsOf(node)))
      .map((b) => {
        const mine = this.#informer.list().filter((n) => b.selects(labelsOf(n)));
        return { name: b.name, over: rolloutOver(mine), nodes: mine.map((n) => n.metadata?.name ?? '') };
      });
    this.#waves.updated({ node, old, budgets });
  }

  /** The most of a budget's nodes in attempts at once now: its max, or less in a wave. */
  #max(b: Budget): number {
    if (!b.waves) return b.max;
    const limit = this.#waves.limit(b.name, b.waves);
    return Math.min(b.max, limit);
  }

  /**
   * A Plan Job's pod changed: a node that starts running one is in an attempt from now on (its admission
   * checked, unless its phase already held it in one), and every count is taken again.
   */
  #observePlanPod(type: string, pod: V1Pod, old: V1Pod | undefined): void {
    const now = this.#planPodNodes();
    // The nodes running a Plan Job's pod the moment before: this pod where it was, not where it is now
    // (unless another pod runs there).
    const was = type === 'delete' ? nodeOfPlanPod(pod) : old && nodeOfPlanPod(old);
    const is = type === 'delete' ? undefined : nodeOfPlanPod(pod);
    const before = new Set(now);
    if (
      is &&
      !this.#planPods.list().some((p) => p.metadata?.uid !== pod.metadata?.uid && nodeOfPlanPod(p) === is)
    )
      before.delete(is);
    if (was) before.add(was);
    for (const name of new Set([was, is])) {
      const node = name ? this.#informer.get(name) : undefined;
      if (!node || !name) continue;
      this.#track(node, now);
      if (inAttempt(node, now) && !inAttempt(node, before)) this.#checkAdmission(name);
    }
    this.#count();
  }

  #track(node: V1Node, planPodNodes: ReadonlySet<string>): void {
    const name = node.metadata?.name ?? '';
    if (!disruptedNow(node, planPodNodes)) this.#disruptedSince.delete(name);
    else if (!this.#disruptedSince.has(name)) this.#disruptedSince.set(name, performance.now());
  }

  /**
   * An attempt started on `node`: in each budget it is in, the disruptions older than RACE_MS and every
   * attempt had to leave room, in the pool and in the node's zone.
   */
  #checkAdmission(node: string): void {
    const now = performance.now();
    this.#judge((nodes, pods) => this.#admissionBreaches(node, nodes, pods, now));
    const started = this.#informer.get(node);
    if (started) this.#checkNodeGates(started);
    if (!this.gates || !started || !this.#gated(started)) return;
    const inPool = (name: string) => {
      const n = this.#informer.get(name);
      return n && this.#budgets.some((b) => b.selects(labelsOf(n)) && b.selects(labelsOf(started)));
    };
    const since = new Map([...this.#disruptedSince].filter(([name]) => inPool(name)));
    const disrupted = settledDisruptions(node, since, now, RACE_MS);
    for (const b of this.gates.admitted(started, disrupted)) this.#violate(b.rule, b.detail);
  }

  /** Nodes an admission at `now` must leave room for: in attempts, or disrupted for RACE_MS or more. */
  #counted(nodes: V1Node[], pods: readonly V1Pod[], now: number): V1Node[] {
    const planPodNodes = new Set([...podNodes(pods), ...this.#kuredHeld()]);
    return nodes.filter(
      (n) =>
        inAttempt(n, planPodNodes) ||
        (disruptedNow(n, planPodNodes) &&
          now - (this.#disruptedSince.get(n.metadata?.name ?? '') ?? now) >= RACE_MS),
    );
  }

  #admissionBreaches(node: string, nodes: V1Node[], pods: readonly V1Pod[], now: number): Breach[] {
    const started = nodes.find((n) => n.metadata?.name === node);
    const counted = this.#counted(nodes, pods, now);
    const out: Breach[] = [];
    for (const b of this.#budgets) {
      if (!started || !b.selects(labelsOf(started))) continue;
      for (const { scope, max, over } of scopes(b, this.#max(b), started, counted)) {
        if (over.length > max)
          out.push({
            rule: 'budget',
            detail: `${node}'s attempt started with ${over.length} nodes disrupted${scope} (budget ${max}): ${over.join(', ')}`,
          });
      }
    }
    return out;
  }

  #count(): void {
    this.maxDisrupted = Math.max(this.maxDisrupted, this.disrupted().length);
    const nodes = this.#informer.list();
    const pods = this.#planPods.list();
    for (const { name } of this.#plans)
      this.maxOfPlan.set(name, Math.max(this.maxOfPlan.get(name) ?? 0, planNodes(name, nodes, pods).length));
    this.#judge((nodes, pods) => this.#countBreaches(nodes, pods));
  }

  /** Every budget and every Plan's concurrency against the nodes in attempts now. */
  #countBreaches(nodes: V1Node[], pods: readonly V1Pod[]): Breach[] {
    const planPodNodes = new Set([...podNodes(pods), ...this.#kuredHeld()]);
    const attempts = nodes.filter((n) => inAttempt(n, planPodNodes));
    const whose = this.#kured ? "nuo's or kured's" : "nuo's";
    const out: Breach[] = [];
    for (const b of this.#budgets) {
      const mine = attempts.filter((n) => b.selects(labelsOf(n)));
      const max = this.#max(b);
      if (mine.length > max) {
        out.push({
          rule: 'budget',
          detail: `${mine.length} nodes in ${whose} attempts at once${b.name ? ` in ${b.name}` : ''} (budget ${max}${max < b.max ? ', its wave' : ''}): ${mine.map((n) => n.metadata?.name).join(', ')}`,
        });
      }
      if (!b.zones) continue;
      for (const [zone, inZone] of Map.groupBy(mine, (n) => labelsOf(n)[b.zones?.label ?? ''] ?? '')) {
        if (inZone.length > b.zones.max) {
          out.push({
            rule: 'budget',
            detail: `${inZone.length} nodes in ${whose} attempts at once in zone ${zone}${b.name ? ` of ${b.name}` : ''} (zone budget ${b.zones.max}): ${inZone.map((n) => n.metadata?.name).join(', ')}`,
          });
        }
      }
    }
    for (const b of planConcurrencyBreaches(this.#plans, nodes, pods)) {
      out.push({
        rule: 'plan-concurrency',
        detail: `${b.nodes.length} nodes in Plan ${b.plan.name}'s attempts at once (concurrency ${b.plan.max}): ${b.nodes.join(', ')}`,
      });
    }
    return out;
  }

  /**
   * Records the breaches `find` sees in the watches' copies. The nodes and the Plans' pods come by two
   * watches that run apart: a breach that needs a pod to count a node (a node whose own keys show no
   * attempt) may be the pod seen before the write that ended another node's attempt, so it is recorded
   * only if a fresh read of both (made after everything the watches showed) shows it too.
   */
  #judge(find: (nodes: V1Node[], pods: readonly V1Pod[]) => Breach[]): void {
    const nodes = this.#informer.list();
    const pods = this.#planPods.list();
    const breaches = find(nodes, pods);
    if (breaches.length === 0) return;
    const planPodNodes = podNodes(pods);
    const byPodAlone = nodes.some(
      (n) => planPodNodes.has(n.metadata?.name ?? '') && !inAttempt(n, new Set()),
    );
    if (!byPodAlone) {
      for (const b of breaches) this.#violate(b.rule, b.detail);
      return;
    }
    this.#pending.push(
      Promise.all([
        this.#core.listNode(),
        this.#core.listPodForAllNamespaces({ labelSelector: JobLabels.plan }),
      ]).then(
        ([freshNodes, freshPods]) => {
          for (const b of find(freshNodes.items, freshPods.items)) this.#violate(b.rule, b.detail);
        },
        // Unreadable (the API server restarting): the watches' view stands.
        () => {
          for (const b of breaches) this.#violate(b.rule, b.detail);
        },
      ),
    );
  }

  #violate(rule: Violation['rule'], detail: string): void {
    this.violations.push({ rule, at: new Date(), detail });
  }

  /** Stops watching even when a confirmation failed (its API server gone): a live informer keeps the process up. */
  async stop(): Promise<void> {
    try {
      await this.settle();
    } finally {
      await Promise.all([
        this.#informer.stop(),
        this.#planPods.stop(),
        this.#kured?.informer.stop(),
        this.gates?.stop(),
      ]);
    }
  }
}

/** A breach found, before it is recorded. */
interface Breach {
  rule: Violation['rule'];
  detail: string;
}
