/**
 * The independent checker's view of a pool's gates (checker.ts tells it each admission and each attempt
 * that ends): it watches the policy and the custom resource its health check reads, on its own, and
 * judges by checker-gates-rules.ts:
 *
 * - `halted`: no admission written after the policy's `Halted` condition turned True and before a person
 *   resumed it (its `nuo.dev/resumed-at` changed) or it turned False;
 * - `health-check`: no admission, nor a finished node's slot freed, written while the resource had been
 *   unhealthy longer than the operator's reading may be old (`staleMs`: its --blocker-interval and a
 *   margin): the span starts at a revision read that long after the checker saw it turn unhealthy;
 * - `reason-budget`: an attempt for a reason a budget limits starts only with room in it, and no more
 *   attempts for those reasons run at once than it allows;
 * - `remediation-rate`: no more remediations admitted in an hour than the policy's maxPerHour.
 */
import {
  CustomObjectsApi,
  type KubeConfig,
  type KubernetesObject,
  type V1Node,
} from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, UPDATE_POLICY } from '../api/crd.ts';
import { PolicyAnnotations } from '../api/keys.ts';
import type { AttemptReason, UpdatePolicy } from '../api/update-policy.ts';
import { ResilientInformer } from '../kube/informer.ts';
import { pollUntil } from '../util/poll.ts';
import {
  inSpans,
  type PolicyAsks,
  type ReasonBudget,
  reasonBudgetBreaches,
  reasonCountBreaches,
  reasonOf,
  remediationRateBreaches,
  type Seen,
  type Span,
} from './checker-gates-rules.ts';
import type { Violation } from './violation.ts';

/** A namespaced custom resource a health check reads, and whether an object of it is healthy. */
export interface CheckedObject {
  group: string;
  version: string;
  plural: string;
  namespace: string;
  name: string;
  /** The checker's own reading of the check's expression. */
  healthy: (object: KubernetesObject) => boolean;
}

/** The gates of one policy (over the nodes `selects` picks) the checker holds nuo to. */
export interface GateSettings {
  policy: string;
  object: CheckedObject;
  /** How old the operator's health reading may be when it admits: its --blocker-interval and a margin. */
  staleMs: number;
  asks: PolicyAsks;
  reasonBudgets: ReasonBudget[];
  remediationsPerHour: number;
}

export interface GateBreach {
  rule: Violation['rule'];
  detail: string;
}

type Obj = KubernetesObject & { status?: unknown };

export class GateChecker {
  readonly #s: GateSettings;
  readonly #custom: CustomObjectsApi;
  readonly #policy: ResilientInformer<UpdatePolicy>;
  readonly #object: ResilientInformer<Obj>;
  readonly #haltSpans: Span[] = [];
  readonly #healthSpans: Span[] = [];
  readonly #admitted: Seen[] = [];
  readonly #freed: Seen[] = [];
  readonly #remediations: { node: string; at: number }[] = [];
  /** Attempts in progress → the reason the checker read at their admission. */
  readonly #attempts = new Map<string, AttemptReason>();
  /** The unhealthy reading waiting out staleMs before its span opens. */
  #unhealthy: { timer: ReturnType<typeof setTimeout>; since: string } | undefined;
  readonly #pending: Promise<void>[] = [];
  /** Whether the policy showed Halted True in its last event. */
  #halted = false;
  #stopped = false;
  /** Counts for the run's report. */
  readonly seen = { halts: 0, unhealthy: 0, remediations: 0, refreshes: 0 };

  constructor(kubeconfig: KubeConfig, settings: GateSettings) {
    this.#s = settings;
    const custom = kubeconfig.makeApiClient(CustomObjectsApi);
    this.#custom = custom;
    const p = { group: API_GROUP, version: API_VERSION, plural: UPDATE_POLICY.plural };
    this.#policy = new ResilientInformer<UpdatePolicy>({
      kubeconfig,
      path: `/apis/${API_GROUP}/${API_VERSION}/${UPDATE_POLICY.plural}`,
      list: (opts) => custom.listClusterCustomObject({ ...p, ...opts }),
      name: 'checker-policy',
    });
    this.#policy.onEvent((type, policy, old) => this.#observePolicy(type, policy, old));
    const o = settings.object;
    this.#object = new ResilientInformer<Obj>({
      kubeconfig,
      path: `/apis/${o.group}/${o.version}/namespaces/${o.namespace}/${o.plural}`,
      list: (opts) => custom.listNamespacedCustomObject({ ...o, ...opts }),
      name: 'checker-health-object',
    });
    this.#object.onEvent((type, obj) => this.#observeObject(type, obj));
  }

  async start(): Promise<void> {
    await Promise.all([this.#policy.start(), this.#object.start()]);
  }

  #observePolicy(type: string, policy: UpdatePolicy, old: UpdatePolicy | undefined): void {
    if (policy.metadata.name !== this.#s.policy) return;
    const rv = policy.metadata.resourceVersion ?? '';
    const open = this.#haltSpans.find((s) => s.to === undefined);
    const resumed = (p: UpdatePolicy | undefined) => p?.metadata.annotations?.[PolicyAnnotations.resumedAt];
    const halted =
      type !== 'delete' &&
      policy.status?.conditions?.some((c) => c.type === 'Halted' && c.status === 'True') === true;
    if (open && (!halted || resumed(policy) !== resumed(old))) open.to = rv;
    // A span opens when Halted turns True: a status written after a resume, before the operator read
    // it, still shows the halt the resume ended.
    if (halted && !this.#halted && resumed(policy) === resumed(old)) {
      this.seen.halts++;
      this.#haltSpans.push({ from: rv, what: `policy ${this.#s.policy} Halted since revision ${rv}` });
    }
    this.#halted = halted;
  }

  #observeObject(type: string, obj: Obj): void {
    const o = this.#s.object;
    if (obj.metadata?.name !== o.name) return;
    const rv = obj.metadata?.resourceVersion ?? '';
    const healthy = type !== 'delete' && o.healthy(obj);
    const open = this.#healthSpans.find((s) => s.to === undefined);
    if (healthy) {
      clearTimeout(this.#unhealthy?.timer);
      this.#unhealthy = undefined;
      if (open) open.to = rv;
      return;
    }
    if (this.#unhealthy || open) return;
    this.seen.unhealthy++;
    const since = rv;
    const timer = setTimeout(() => this.#pending.push(this.#openHealthSpan(since)), this.#s.staleMs);
    this.#unhealthy = { timer, since };
  }

  /**
   * Still unhealthy staleMs after it was seen so: from the revision now (a list's), every admission is
   * the operator's act on a failing check. An API outage delays the read: the span starts later.
   */
  async #openHealthSpan(since: string): Promise<void> {
    const o = this.#s.object;
    const revision = await pollUntil(
      'the current revision',
      async () => {
        if (this.#stopped) return '';
        const list = (await this.#custom.listNamespacedCustomObject({ ...o }).catch(() => undefined)) as
          | { metadata?: { resourceVersion?: string } }
          | undefined;
        return list?.metadata?.resourceVersion;
      },
      { timeoutMs: 120_000, intervalMs: 250 },
    ).catch(() => '');
    if (!revision || this.#unhealthy?.since !== since) return;
    this.#unhealthy = undefined;
    this.#healthSpans.push({
      from: revision,
      what: `${o.plural} ${o.namespace}/${o.name} unhealthy since revision ${since} (span from ${revision}, ${this.#s.staleMs} ms later)`,
    });
  }

  /**
   * An attempt started on `node` (as the node's write shows it) with `disrupted` of the pool's nodes
   * disrupted, itself among them: breaches of the reason budgets now; the rest is judged at the end.
   */
  admitted(node: V1Node, disrupted: readonly string[]): GateBreach[] {
    const name = node.metadata?.name ?? '';
    const now = Date.now();
    const reason = reasonOf(node, this.#s.asks, now);
    this.#admitted.push({ node: name, resourceVersion: node.metadata?.resourceVersion ?? '' });
    this.#attempts.set(name, reason);
    if (reason === 'Remediation') {
      this.seen.remediations++;
      this.#remediations.push({ node: name, at: now });
    }
    if (reason === 'Refresh') this.seen.refreshes++;
    return [
      ...reasonBudgetBreaches(name, reason, disrupted, this.#s.reasonBudgets),
      ...reasonCountBreaches(this.#attempts, this.#s.reasonBudgets),
    ].map((detail) => ({ rule: 'reason-budget', detail }));
  }

  /** Why an attempt of `node` starting now would be, as the checker reads the node (reasonOf). */
  reasonOf(node: V1Node): AttemptReason {
    return reasonOf(node, this.#s.asks, Date.now());
  }

  /** The attempt of `node` ended; `freed`: from its health gate to Idle (the health checks had to pass). */
  ended(node: V1Node, freed: boolean): void {
    const name = node.metadata?.name ?? '';
    this.#attempts.delete(name);
    if (freed) this.#freed.push({ node: name, resourceVersion: node.metadata?.resourceVersion ?? '' });
  }

  /** Everything judged over the whole run (call after the rollout, before stop). */
  async final(): Promise<GateBreach[]> {
    await Promise.all(this.#pending);
    const out: GateBreach[] = [];
    for (const { seen, span } of inSpans(this.#admitted, this.#haltSpans))
      out.push({
        rule: 'halted',
        detail: `${seen.node} admitted at revision ${seen.resourceVersion}: ${span.what}, not resumed`,
      });
    for (const { seen, span } of inSpans(this.#admitted, this.#healthSpans))
      out.push({
        rule: 'health-check',
        detail: `${seen.node} admitted at revision ${seen.resourceVersion}: ${span.what}`,
      });
    for (const { seen, span } of inSpans(this.#freed, this.#healthSpans))
      out.push({
        rule: 'health-check',
        detail: `${seen.node}'s slot freed from its health gate at revision ${seen.resourceVersion}: ${span.what}`,
      });
    for (const detail of remediationRateBreaches(this.#remediations, this.#s.remediationsPerHour))
      out.push({ rule: 'remediation-rate', detail });
    return out;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#unhealthy?.timer);
    await Promise.all(this.#pending);
    await Promise.all([this.#policy.stop(), this.#object.stop()]);
  }
}
