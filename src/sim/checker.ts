/**
 * The independent safety checker: watches every Node on its own (sharing nothing with the operator) and
 * records each violation of the safety rules it can see — more nodes disrupted than the budget, a reboot
 * without a grant nuo gave or of a node left schedulable (so never drained), a node rebooted twice for
 * one need, an admin's cordon removed, nuo's cordon on a node outside an attempt or left behind after
 * the rollout.
 *
 * The budget, checked two ways: nuo's attempts alone never exceed it; and no attempt starts while the
 * nodes already disrupted (NotReady, cordoned by anyone, or in an attempt) leave no room. A disruption
 * that began less than RACE_MS before an attempt started is not held against it: no client can see
 * another's write before it is made, and an admin who cordons a node as nuo admits another one is a
 * coincidence the next admission accounts for.
 */
import type { KeyObject } from 'node:crypto';
import { CoreV1Api, type KubeConfig, type V1Node } from '@kubernetes/client-node';
import { GRANT_KEY_NAME, GrantCheck, PUBLIC_KEY_FIELD, publicKeyFromPem, verifyGrant } from '../api/grant.ts';
import { Annotations, DEFAULT_NAMESPACE } from '../api/keys.ts';
import { isPhase, Phase } from '../api/phases.ts';
import { compareResourceVersions, ResilientInformer } from '../kube/informer.ts';
import { isReady } from './cluster/nodes.ts';

export interface Violation {
  rule:
    | 'budget'
    | 'reboot-without-grant'
    | 'reboot-not-drained'
    | 'double-reboot'
    | 'admin-cordon-removed'
    | 'cordon-left'
    | 'cordon-outside-attempt'
    | 'not-finished';
  at: Date;
  detail: string;
}

/**
 * The phases in which nuo's cordon may stand: it is written with Draining and undone in the write that
 * ends the attempt (Idle, or Pending after an abort). Seen anywhere else, something cordoned late. (A
 * `nuo drain` by hand records its cordon as nuo's too; the runs a checker watches make none.)
 */
const CORDONED_PHASES: ReadonlySet<string> = new Set([
  Phase.draining,
  Phase.rebootGranted,
  Phase.rebooting,
  Phase.afterReboot,
  Phase.failed,
]);

/** Phases of an attempt: the node holds a slot of the budget. */
const ATTEMPT_PHASES: ReadonlySet<string> = new Set([Phase.beforeReboot, ...CORDONED_PHASES]);

/** How long before an attempt starts a disruption must have begun to count against it. */
export const RACE_MS = 2000;

const inAttempt = (n: V1Node | undefined) =>
  ATTEMPT_PHASES.has(n?.metadata?.annotations?.[Annotations.state] ?? '') ||
  n?.metadata?.annotations?.[Annotations.cordonedByNuo] === 'true';
const disruptedNow = (n: V1Node) => !isReady(n) || n.spec?.unschedulable === true || inAttempt(n);

/**
 * A budget the checker holds nuo to: a pool's nodes (by their labels), how many may be disrupted at
 * once, and at most how many in any one zone.
 */
export interface Budget {
  name: string;
  selects: (labels: Record<string, string>) => boolean;
  max: number;
  zones?: { label: string; max: number };
}

export interface CheckerOptions {
  /** The operator's namespace, where it publishes the key its grants are verified with. */
  namespace?: string;
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
  readonly #budgets: Budget[];
  readonly #namespace: string;
  readonly #informer: ResilientInformer<V1Node>;
  /**
   * Nodes an admin cordoned → the resourceVersion of the object that first showed that cordon ('' when
   * told before the write): only an update from that version on can undo it, not one the watch delivers
   * late from before it.
   */
  readonly #adminCordoned = new Map<string, string>();
  /** performance.now() since when each disrupted node has been disrupted, as this watch saw it. */
  readonly #disruptedSince = new Map<string, number>();
  #grantKey: KeyObject | undefined;
  readonly #reboots = new Map<string, number>();
  readonly #allowedReboots = new Map<string, number>();
  readonly #core: CoreV1Api;
  /** Confirmations still in flight; awaited by settle(). */
  readonly #pending: Promise<void>[] = [];

  /** `budget`: one budget over every node, or each pool's. */
  constructor(kubeconfig: KubeConfig, budget: number | Budget[], options: CheckerOptions = {}) {
    this.#budgets = typeof budget === 'number' ? [{ name: '', selects: () => true, max: budget }] : budget;
    this.#namespace = options.namespace ?? DEFAULT_NAMESPACE;
    const core = kubeconfig.makeApiClient(CoreV1Api);
    this.#core = core;
    this.#informer = new ResilientInformer<V1Node>({
      kubeconfig,
      path: '/api/v1/nodes',
      list: (opts) => core.listNode(opts),
      name: 'checker',
    });
    this.#informer.onEvent((type, node, old) => this.#observe(type, node, old));
  }

  async start(): Promise<void> {
    this.#grantKey = await this.#readGrantKey();
    await this.#informer.start();
    for (const n of this.#informer.list()) {
      // Disrupted before the checker looked: long enough for any admission to have seen it.
      if (disruptedNow(n)) this.#disruptedSince.set(n.metadata?.name ?? '', Number.NEGATIVE_INFINITY);
      if (n.spec?.unschedulable && n.metadata?.annotations?.[Annotations.cordonedByNuo] !== 'true') {
        this.#adminCordoned.set(n.metadata?.name ?? '', n.metadata?.resourceVersion ?? '');
      }
    }
    this.#count();
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
    const cached = this.#informer.get(node);
    if (!this.#granted(cached, bootId) || !this.#cordonedForReboot(cached)) {
      this.#pending.push(this.#confirmReboot(node, bootId));
    }
    const count = (this.#reboots.get(node) ?? 0) + 1;
    this.#reboots.set(node, count);
    if (count > (this.#allowedReboots.get(node) ?? 0)) {
      this.#violate(
        'double-reboot',
        `${node} rebooted ${count} times for ${this.#allowedReboots.get(node) ?? 0} staged update(s)`,
      );
    }
  }

  async #confirmReboot(node: string, bootId: string): Promise<void> {
    const n = await this.#core.readNode({ name: node }).catch(() => undefined);
    if (!this.#granted(n, bootId)) {
      // The key may have been published (or replaced) since it was read: read it once more.
      this.#grantKey = await this.#readGrantKey();
      if (!this.#granted(n, bootId)) {
        const value = n?.metadata?.annotations?.[Annotations.rebootOk];
        const why =
          value === undefined
            ? 'no nuo.dev/reboot-ok'
            : (verifyGrant(this.#grantKey, value, { node, bootId }).why ?? 'not valid');
        this.#violate('reboot-without-grant', `${node} rebooted without a grant nuo gave: ${why}`);
      }
    }
    if (!this.#cordonedForReboot(n))
      this.#violate('reboot-not-drained', `${node} rebooted while schedulable`);
  }

  #granted(n: V1Node | undefined, bootId: string): boolean {
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
    return n?.spec?.unschedulable === true || this.#markedCordoned.has(n?.metadata?.name ?? '');
  }

  /** Nodes whose agent marked reboot-in-progress while the node was unschedulable (until the mark goes). */
  readonly #markedCordoned = new Set<string>();

  async #readGrantKey(): Promise<KeyObject | undefined> {
    const cm = await this.#core
      .readNamespacedConfigMap({ name: GRANT_KEY_NAME, namespace: this.#namespace })
      .catch(() => undefined);
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

  rebootsOf(node: string): number {
    return this.#reboots.get(node) ?? 0;
  }

  /**
   * After the rollout: every cordon nuo made is gone, every admin cordon still there. `failedClosed`
   * names nodes expected to keep nuo's cordon (a node that never came back is Failed and fails closed).
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
    }
  }

  disrupted(): string[] {
    return this.#informer
      .list()
      .filter(disruptedNow)
      .map((n) => n.metadata?.name ?? '');
  }

  #observe(type: string, node: V1Node, old: V1Node | undefined): void {
    const name = node.metadata?.name ?? '';
    if (type === 'delete') {
      this.#adminCordoned.delete(name);
      this.#markedCordoned.delete(name);
      this.#disruptedSince.delete(name);
      this.#count();
      return;
    }
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
    const marked = annotations[Annotations.rebootInProgress] === 'true';
    if (!marked) this.#markedCordoned.delete(name);
    else if (
      old?.metadata?.annotations?.[Annotations.rebootInProgress] !== 'true' &&
      node.spec?.unschedulable
    )
      this.#markedCordoned.add(name);
    this.#track(node);
    if (type === 'update' && inAttempt(node) && !inAttempt(old)) this.#checkAdmission(name);
    this.#count();
  }

  #track(node: V1Node): void {
    const name = node.metadata?.name ?? '';
    if (!disruptedNow(node)) this.#disruptedSince.delete(name);
    else if (!this.#disruptedSince.has(name)) this.#disruptedSince.set(name, performance.now());
  }

  /**
   * An attempt started on `node`: in each budget it is in, the disruptions older than RACE_MS and every
   * attempt had to leave room, in the pool and in the node's zone.
   */
  #checkAdmission(node: string): void {
    const now = performance.now();
    const nodes = this.#informer.list();
    const started = nodes.find((n) => n.metadata?.name === node);
    const counted = nodes.filter(
      (n) =>
        inAttempt(n) ||
        (disruptedNow(n) && now - (this.#disruptedSince.get(n.metadata?.name ?? '') ?? now) >= RACE_MS),
    );
    for (const b of this.#budgets) {
      if (!started || !b.selects(labelsOf(started))) continue;
      for (const { scope, max, over } of scopes(b, started, counted)) {
        if (over.length > max) {
          this.#violate(
            'budget',
            `${node}'s attempt started with ${over.length} nodes disrupted${scope} (budget ${max}): ${over.join(', ')}`,
          );
        }
      }
    }
  }

  #count(): void {
    this.maxDisrupted = Math.max(this.maxDisrupted, this.disrupted().length);
    const attempts = this.#informer.list().filter(inAttempt);
    for (const b of this.#budgets) {
      const mine = attempts.filter((n) => b.selects(labelsOf(n)));
      if (mine.length > b.max) {
        this.#violate(
          'budget',
          `${mine.length} nodes in nuo's attempts at once${b.name ? ` in ${b.name}` : ''} (budget ${b.max}): ${mine.map((n) => n.metadata?.name).join(', ')}`,
        );
      }
      if (!b.zones) continue;
      for (const [zone, inZone] of Map.groupBy(mine, (n) => labelsOf(n)[b.zones?.label ?? ''] ?? '')) {
        if (inZone.length > b.zones.max) {
          this.#violate(
            'budget',
            `${inZone.length} nodes in nuo's attempts at once in zone ${zone}${b.name ? ` of ${b.name}` : ''} (zone budget ${b.zones.max}): ${inZone.map((n) => n.metadata?.name).join(', ')}`,
          );
        }
      }
    }
  }

  #violate(rule: Violation['rule'], detail: string): void {
    this.violations.push({ rule, at: new Date(), detail });
  }

  async stop(): Promise<void> {
    await this.settle();
    await this.#informer.stop();
  }
}

const labelsOf = (n: V1Node): Record<string, string> => n.metadata?.labels ?? {};

/** The scopes an admission is checked in: the budget's pool, and the started node's zone if capped. */
function scopes(b: Budget, started: V1Node, counted: V1Node[]) {
  const inPool = counted.filter((n) => b.selects(labelsOf(n)));
  const names = (list: V1Node[]) => list.map((n) => n.metadata?.name ?? '');
  const of = b.name ? ` of ${b.name}` : '';
  const out = [{ scope: b.name ? ` in ${b.name}` : '', max: b.max, over: names(inPool) }];
  if (b.zones) {
    const zone = labelsOf(started)[b.zones.label] ?? '';
    const inZone = inPool.filter((n) => (labelsOf(n)[b.zones?.label ?? ''] ?? '') === zone);
    out.push({ scope: ` in zone ${zone}${of}`, max: b.zones.max, over: names(inZone) });
  }
  return out;
}
