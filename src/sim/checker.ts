/**
 * The independent safety checker: watches every Node on its own (sharing nothing with the operator) and
 * records each violation of DESIGN.md's rules it can see — more nodes disrupted than the budget, a
 * reboot without a grant or of a node left schedulable (so never drained), a node rebooted twice for one
 * need, an admin's cordon removed, nuo's cordon on a node outside an attempt or left behind after the
 * rollout.
 */
import { CoreV1Api, type KubeConfig, type V1Node } from '@kubernetes/client-node';
import { Annotations } from '../api/keys.ts';
import { Phase } from '../api/phases.ts';
import { ResilientInformer } from '../kube/informer.ts';
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

export class SafetyChecker {
  readonly violations: Violation[] = [];
  maxDisrupted = 0;
  readonly #budget: number;
  readonly #informer: ResilientInformer<V1Node>;
  readonly #adminCordoned = new Set<string>();
  readonly #reboots = new Map<string, number>();
  readonly #allowedReboots = new Map<string, number>();
  readonly #core: CoreV1Api;
  /** Confirmations still in flight; awaited by settle(). */
  readonly #pending: Promise<void>[] = [];

  constructor(kubeconfig: KubeConfig, budget: number) {
    this.#budget = budget;
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
    await this.#informer.start();
    for (const n of this.#informer.list()) {
      if (n.spec?.unschedulable && n.metadata?.annotations?.[Annotations.cordonedByNuo] !== 'true') {
        this.#adminCordoned.add(n.metadata?.name ?? '');
      }
    }
    this.#count();
  }

  /** Each node may reboot `times` more times (once per staged update). */
  allowReboots(node: string, times = 1): void {
    this.#allowedReboots.set(node, (this.#allowedReboots.get(node) ?? 0) + times);
  }

  /**
   * Called by the simulated host at the moment it reboots. The grant must be in the API by then, and the
   * node cordoned (a drained node is unschedulable until its attempt ends); the checker's own watch may
   * lag the agent's by a few milliseconds, so a cache miss is confirmed with a read before it counts (the
   * grant is withdrawn and the cordon undone only after the boot ID changes, later than this read).
   */
  onReboot(node: string): void {
    const granted = (n: V1Node | undefined) => n?.metadata?.annotations?.[Annotations.rebootOk] !== undefined;
    const cordoned = (n: V1Node | undefined) => n?.spec?.unschedulable === true;
    const cached = this.#informer.get(node);
    if (!granted(cached) || !cordoned(cached)) {
      this.#pending.push(
        this.#core
          .readNode({ name: node })
          .catch(() => undefined)
          .then((n) => {
            if (!granted(n))
              this.#violate('reboot-without-grant', `${node} rebooted without nuo.dev/reboot-ok`);
            if (!cordoned(n)) this.#violate('reboot-not-drained', `${node} rebooted while schedulable`);
          }),
      );
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
      .filter((n) => !isReady(n) || n.spec?.unschedulable === true)
      .map((n) => n.metadata?.name ?? '');
  }

  #observe(type: string, node: V1Node, old: V1Node | undefined): void {
    const name = node.metadata?.name ?? '';
    if (
      type === 'update' &&
      this.#adminCordoned.has(name) &&
      old?.spec?.unschedulable &&
      !node.spec?.unschedulable
    ) {
      this.#violate('admin-cordon-removed', `${name}: an admin's cordon was removed`);
    }
    const state = node.metadata?.annotations?.[Annotations.state];
    if (
      node.metadata?.annotations?.[Annotations.cordonedByNuo] === 'true' &&
      !CORDONED_PHASES.has(state ?? '') &&
      (type === 'add' ||
        old?.metadata?.annotations?.[Annotations.cordonedByNuo] !== 'true' ||
        old?.metadata?.annotations?.[Annotations.state] !== state)
    ) {
      this.#violate('cordon-outside-attempt', `${name} is cordoned by nuo in phase ${state ?? '(none)'}`);
    }
    this.#count();
  }

  #count(): void {
    const disrupted = this.disrupted();
    this.maxDisrupted = Math.max(this.maxDisrupted, disrupted.length);
    if (disrupted.length > this.#budget) {
      this.#violate(
        'budget',
        `${disrupted.length} nodes disrupted at once (budget ${this.#budget}): ${disrupted.join(', ')}`,
      );
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
