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
 * - `remediation-rate`: no more remediations admitted in an hour than the policy's maxPerHour;
 * - `health-check` too while a health read hangs, and `pod-blocker` while a blocking pod runs (in the
 *   pool, or on the admitted node), each from when the runner says it began (hold());
 * - `circuit-breaker`: no admission while more of the pool's nodes had been NotReady than maxNotReady;
 * - `do-not-disrupt`: no pod is deleted while annotated nuo.dev/do-not-disrupt (checker-do-not-disrupt.ts).
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
import { DoNotDisruptGuard, type DoNotDisruptPods } from './checker-do-not-disrupt.ts';
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
  /** How old the operator's reading of it may be, when more than GateSettings.staleMs (a scrape's delay). */
  staleMs?: number;
}

/** The gates of one policy (over the nodes `selects` picks) the checker holds nuo to. */
export interface GateSettings {
  policy: string;
  /** The nodes of the policy's pool, by their labels (every node when absent). */
  selects?: (labels: Record<string, string>) => boolean;
  object: CheckedObject;
  /** The resources of its further health checks (a PromQL check's metric, as its exporter's source has it). */
  objects?: CheckedObject[];
  /** How old the operator's health reading may be when it admits: its --blocker-interval and a margin. */
  staleMs: number;
  asks: PolicyAsks;
  reasonBudgets: ReasonBudget[];
  remediationsPerHour: number;
  /** spec.circuitBreaker: no admission while more of the pool had been NotReady for staleMs. */
  circuitBreaker?: { maxNotReady: number };
  /** Pods (by label, in a namespace) that carry nuo.dev/do-not-disrupt, none of which nuo may delete. */
  doNotDisrupt?: DoNotDisruptPods;
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
  readonly #objects: ResilientInformer<Obj>[];
  readonly #haltSpans: Span[] = [];
  readonly #healthSpans: Span[] = [];
  readonly #blockerSpans: Span[] = [];
  /** Gated nodes seen NotReady, since when (performance.now()). */
  readonly #notReadySince = new Map<string, number>();
  #tripped = false;
  readonly #doNotDisrupt: DoNotDisruptGuard | undefined;
  readonly #admitted: Seen[] = [];
  readonly #freed: Seen[] = [];
  readonly #remediations: { node: string; at: number }[] = [];
  /** Attempts in progress → the reason the checker read at their admission. */
  readonly #attempts = new Map<string, AttemptReason>();
  /** Each object's unhealthy reading waiting out its staleMs before its span opens. */
  readonly #unhealthy = new Map<CheckedObject, { timer: ReturnType<typeof setTimeout>; since: string }>();
  /** Holds the runner began whose span is still to open. */
  readonly #holdTimers = new Set<ReturnType<typeof setTimeout>>();
  readonly #pending: Promise<void>[] = [];
  /** Whether the policy showed Halted True in its last event. */
  #halted = false;
  #stopped = false;
  /** Counts for the run's report. */
  readonly seen = { halts: 0, unhealthy: 0, remediations: 0, refreshes: 0, trips: 0 };

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
    this.#objects = [settings.object, ...(settings.objects ?? [])].map((o) => {
      const informer = new ResilientInformer<Obj>({
        kubeconfig,
        path: `/apis/${o.group}/${o.version}/namespaces/${o.namespace}/${o.plural}`,
        list: (opts) => custom.listNamespacedCustomObject({ ...o, ...opts }),
        name: 'checker-health-object',
      });
      informer.onEvent((type, obj) => this.#observeObject(o, type, obj));
      return informer;
    });
    this.#doNotDisrupt = settings.doNotDisrupt && new DoNotDisruptGuard(kubeconfig, settings.doNotDisrupt);
  }

  async start(): Promise<void> {
    await Promise.all([
      this.#policy.start(),
      ...this.#objects.map((i) => i.start()),
      this.#doNotDisrupt?.start(),
    ]);
  }

  /** Whether `node` is in the policy's pool. */
  selects(node: V1Node): boolean {
    return this.#s.selects?.(node.metadata?.labels ?? {}) ?? true;
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

  #observeObject(o: CheckedObject, type: string, obj: Obj): void {
    if (obj.metadata?.name !== o.name) return;
    const rv = obj.metadata?.resourceVersion ?? '';
    const healthy = type !== 'delete' && o.healthy(obj);
    const what = `${o.plural} ${o.namespace}/${o.name}`;
    const open = this.#healthSpans.find((s) => s.to === undefined && s.what.startsWith(what));
    const waiting = this.#unhealthy.get(o);
    if (healthy) {
      clearTimeout(waiting?.timer);
      this.#unhealthy.delete(o);
      if (open) open.to = rv;
      return;
    }
    if (waiting || open) return;
    this.seen.unhealthy++;
    const since = rv;
    const staleMs = o.staleMs ?? this.#s.staleMs;
    const timer = setTimeout(
      () =>
        this.#pending.push(
          this.#openHealthSpan(o, since, `${what} unhealthy since revision ${since}`, staleMs),
        ),
      staleMs,
    );
    this.#unhealthy.set(o, { timer, since });
  }

  /**
   * Still unhealthy staleMs after it was seen so: from the revision now (a list's), every admission is
   * the operator's act on a failing check. An API outage delays the read: the span starts later.
   */
  async #openHealthSpan(o: CheckedObject, since: string, what: string, staleMs: number): Promise<void> {
    const revision = await this.#revision();
    if (!revision || this.#unhealthy.get(o)?.since !== since) return;
    this.#unhealthy.delete(o);
    this.#healthSpans.push({ from: revision, what: `${what} (span from ${revision}, ${staleMs} ms later)` });
  }

  /** The current revision (a list's); '' once stopped or when the API server did not answer in 2 min. */
  #revision(): Promise<string> {
    const o = this.#s.object;
    return pollUntil(
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
  }

  /**
   * Something that holds the pool (or only `node`) began now, as the runner made it: a health read that
   * hangs (`health-check`: fail closed), a blocking pod running (`pod-blocker`). From a revision read
   * `staleMs` later (the operator's reading may be that old) until the one read when the returned `end`
   * is called (before the hold is lifted), an admission there breaks the rule.
   */
  hold(
    rule: 'health-check' | 'pod-blocker',
    what: string,
    staleMs: number,
    node?: string,
  ): () => Promise<void> {
    const spans = rule === 'health-check' ? this.#healthSpans : this.#blockerSpans;
    let span: Span | undefined;
    let ended = false;
    const timer = setTimeout(async () => {
      this.#holdTimers.delete(timer);
      const from = await this.#revision();
      if (!from || ended) return;
      span = { from, what: `${what} (span from ${from}, ${staleMs} ms later)`, ...(node ? { node } : {}) };
      spans.push(span);
    }, staleMs);
    this.#holdTimers.add(timer);
    return async () => {
      ended = true;
      clearTimeout(timer);
      this.#holdTimers.delete(timer);
      if (!span) return;
      span.to = (await this.#revision()) || span.from;
    };
  }

  /**
   * A gated node as the node watch delivered it (undefined: deleted): its readiness, for the circuit
   * breaker's rule, and each trip (more of the pool NotReady than maxNotReady) counted.
   */
  nodeSeen(name: string, node: V1Node | undefined): void {
    const ready = node?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? true;
    if (ready || !node) this.#notReadySince.delete(name);
    else if (!this.#notReadySince.has(name)) this.#notReadySince.set(name, performance.now());
    const max = this.#s.circuitBreaker?.maxNotReady;
    if (max === undefined) return;
    const tripped = this.#notReadySince.size > max;
    if (tripped && !this.#tripped) this.seen.trips++;
    this.#tripped = tripped;
  }

  /** More gated nodes than maxNotReady NotReady for staleMs or longer, `name` aside: the breach, if so. */
  #circuitBreach(name: string, now: number): string | undefined {
    const max = this.#s.circuitBreaker?.maxNotReady;
    if (max === undefined) return undefined;
    const settled = [...this.#notReadySince]
      .filter(([n, since]) => n !== name && now - since >= this.#s.staleMs)
      .map(([n]) => n)
      .sort();
    if (settled.length <= max) return undefined;
    return `${name} admitted while ${settled.length} nodes of the pool had been NotReady ${this.#s.staleMs} ms or longer (circuitBreaker.maxNotReady ${max}): ${settled.join(', ')}`;
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
    const circuit = this.#circuitBreach(name, performance.now());
    return [
      ...[
        ...reasonBudgetBreaches(name, reason, disrupted, this.#s.reasonBudgets),
        ...reasonCountBreaches(this.#attempts, this.#s.reasonBudgets),
      ].map((detail): GateBreach => ({ rule: 'reason-budget', detail })),
      ...(circuit ? [{ rule: 'circuit-breaker' as const, detail: circuit }] : []),
    ];
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
    for (const { seen, span } of inSpans(this.#admitted, this.#blockerSpans))
      out.push({
        rule: 'pod-blocker',
        detail: `${seen.node} admitted at revision ${seen.resourceVersion}: ${span.what}`,
      });
    for (const detail of this.#doNotDisrupt?.breaches ?? []) out.push({ rule: 'do-not-disrupt', detail });
    for (const detail of remediationRateBreaches(this.#remediations, this.#s.remediationsPerHour))
      out.push({ rule: 'remediation-rate', detail });
    return out;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    for (const { timer } of this.#unhealthy.values()) clearTimeout(timer);
    for (const timer of this.#holdTimers) clearTimeout(timer);
    await Promise.all(this.#pending);
    await Promise.all([
      this.#policy.stop(),
      ...this.#objects.map((i) => i.stop()),
      this.#doNotDisrupt?.stop(),
    ]);
  }
}
