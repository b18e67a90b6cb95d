/**
 * The cluster's Plans as the operator uses them: watched in every namespace, each checked once per
 * generation (what the API server cannot check, and names that collide), and resolved in the background
 * — the version from the spec or, polled every interval, from the channel; the Plan's secrets read; the
 * hash of what runs on the node computed — so a pass never waits on a channel or a secret. A version or
 * hash that changes asks for a pass. A channel that cannot be read keeps the last version it gave. The
 * Secrets read are watched (plan-secrets.ts): a change re-resolves the Plans using it at once.
 * Without the CRD the cluster has no Plans; the list is tried again with the informer's backoff.
 * nuo's Plans are watched in every namespace; SUC's (upgrade.cattle.io), when adopted, in the one
 * namespace SUC's controller watched. A SUC Plan's hash is SUC's: it is what SUC's label records.
 */
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { PLAN } from '../../api/crd.ts';
import type { Plan } from '../../api/plan.ts';
import { apiVersionOf, NUO_PLANS, type PlanGroup, planGroupOf, SUC_PLANS } from '../../api/plan-groups.ts';
import type { KubeLog } from '../../kube/backoff.ts';
import { sleep } from '../../kube/backoff.ts';
import { describeError, statusCode } from '../../kube/errors.ts';
import { ResilientInformer } from '../../kube/informer.ts';
import type { PooledKubeConfig } from '../../kube/pooled-kubeconfig.ts';
import { resolveChannel } from '../../plan/channel.ts';
import { planHash } from '../../plan/hash.ts';
import { type HashedSecret, sucPlanHash } from '../../plan/suc-hash.ts';
import { resolveVersion } from '../../plan/version.ts';
import { crdNotInstalled, listCustomPage } from '../read/custom-list.ts';
import { type PlanEntry, planEntries, planRef } from './plan-resolve.ts';
import { PlanSecretWatch, secretKey } from './plan-secrets.ts';

/** How long a channel may take to answer. */
const CHANNEL_TIMEOUT_MS = 10_000;

interface Resolution {
  /** uid and generation it was made for. */
  key: string;
  version?: string;
  hash?: string;
  sucHash?: string;
  resolveError?: string;
}

/** The Secrets of a Plan whose data is hashed (not ignoreUpdates). */
const secretsOf = (p: Plan) => (p.spec.secrets ?? []).filter((s) => !s.ignoreUpdates).map((s) => s.name);

const keyOf = (p: Plan) => `${p.metadata.uid ?? ''}@${p.metadata.generation ?? 0}`;

/** One group's Plans, watched in every namespace or in one. */
interface Watched {
  group: PlanGroup;
  informer: ResilientInformer<Plan>;
  listed: boolean;
  crdMissing: boolean;
}

export class PlanSource {
  readonly #watched: Watched[];
  readonly #core: CoreV1Api;
  readonly #intervalMs: number;
  readonly #log: KubeLog;
  readonly #resolved = new Map<string, Resolution>();
  readonly #changed: (() => void)[] = [];
  #cluster: string | undefined;
  #wake: (() => void) | undefined;
  readonly #stop = new AbortController();
  readonly #secretWatch: PlanSecretWatch;
  /** Each Plan's Secrets as its last resolution read them: key → resourceVersion (none: missing). */
  readonly #secretsRead = new Map<string, Map<string, string | undefined>>();
  /** Every Plan is resolved at the next wake (a Plan changed, or the interval passed). */
  #all = true;
  /** Plans to resolve at the next wake: a Secret they use changed. */
  readonly #pending = new Set<string>();

  constructor(o: {
    kubeconfig: PooledKubeConfig;
    intervalMs: number;
    /** The namespace whose SUC Plans nuo runs; none: SUC's Plans are not watched. */
    sucNamespace?: string;
    log: KubeLog;
  }) {
    this.#core = o.kubeconfig.makeApiClient(CoreV1Api);
    this.#intervalMs = o.intervalMs;
    this.#log = o.log;
    this.#watched = [this.#watch(o, NUO_PLANS)];
    if (o.sucNamespace !== undefined) this.#watched.push(this.#watch(o, SUC_PLANS, o.sucNamespace));
    this.#secretWatch = new PlanSecretWatch({ kubeconfig: o.kubeconfig, log: o.log });
    this.#secretWatch.onChange((key) => {
      for (const p of this.#plans())
        if (secretsOf(p).some((name) => secretKey(p.metadata.namespace, name) === key))
          this.#pending.add(planRef(p));
      this.#wake?.();
    });
  }

  #watch(o: { kubeconfig: PooledKubeConfig; log: KubeLog }, group: PlanGroup, namespace?: string): Watched {
    const api = o.kubeconfig.makeApiClient(CustomObjectsApi);
    const where = namespace === undefined ? '' : `/namespaces/${namespace}`;
    const what = { ...group, plural: PLAN.plural, ...(namespace === undefined ? {} : { namespace }) };
    const apiVersion = apiVersionOf(group);
    const watched: Watched = {
      group,
      listed: false,
      crdMissing: false,
      informer: new ResilientInformer<Plan>({
        kubeconfig: o.kubeconfig,
        path: `/apis/${group.group}/${group.version}${where}/${PLAN.plural}`,
        list: (opts) => listCustomPage<Plan>(api, what, opts, (missing) => this.#answered(watched, missing)),
        // Each Plan names its group: a ref tells the two groups' Plans apart.
        transform: (p) => (planGroupOf(p.apiVersion) === group ? p : ({ ...p, apiVersion } as Plan)),
        name: group === NUO_PLANS ? 'plans' : `plans.${group.group}`,
        expectedFailure: crdNotInstalled,
        log: o.log,
      }),
    };
    watched.informer.onEvent((type, p, old) => {
      if (type === 'update' && old?.metadata.generation === p.metadata.generation) return;
      this.#all = true;
      this.#wake?.();
      this.#notify();
    });
    return watched;
  }

  /** Every Plan of every group watched whose CRD is installed. */
  #plans(): Plan[] {
    return this.#watched.flatMap((w) => (w.crdMissing ? [] : w.informer.list()));
  }

  /** Calls `fn` when a Plan's spec, version or hash changes, or one comes or goes. */
  onChange(fn: () => void): void {
    this.#changed.push(fn);
  }

  /** Starts watching and resolving in the background. */
  start(): void {
    for (const w of this.#watched) w.informer.start().catch(() => {});
    this.#resolveLoop().catch((err) =>
      this.#log('error', 'Plan resolution stopped', { error: describeError(err) }),
    );
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    this.#wake?.();
    await Promise.all([...this.#watched.map((w) => w.informer.stop()), this.#secretWatch.stop()]);
  }

  /** False until the first list answered (or showed that the CRD is not installed). */
  get known(): boolean {
    return this.#watched.every((w) => w.listed || w.informer.stats().synced);
  }

  /** Every Plan, by ref, checked and with its resolution as last made. */
  entries(): PlanEntry[] {
    return planEntries(this.#plans(), (p) => {
      const r = this.#resolved.get(planRef(p));
      // A version and hash are this generation's only; an error is the last resolution's, whichever.
      const current = r?.key === keyOf(p) ? r : undefined;
      return {
        ...(current?.version === undefined ? {} : { version: current.version }),
        ...(current?.hash === undefined ? {} : { hash: current.hash }),
        ...(current?.sucHash === undefined ? {} : { sucHash: current.sucHash }),
        ...(r?.resolveError === undefined ? {} : { resolveError: r.resolveError }),
      };
    });
  }

  /**
   * Resolves every Plan now, and again every interval or when a Plan changes; the Plans using a Secret
   * that changed at once.
   */
  async #resolveLoop(): Promise<void> {
    const signal = this.#stop.signal;
    let pollAt = 0;
    while (!signal.aborted) {
      const all = this.#all || Date.now() >= pollAt;
      if (all) pollAt = Date.now() + this.#intervalMs;
      const only = new Set(this.#pending);
      this.#all = false;
      this.#pending.clear();
      for (const p of this.#plans()) {
        if (signal.aborted) return;
        if (all || only.has(planRef(p))) await this.#resolve(p, signal);
      }
      const live = new Set(this.#plans().map(planRef));
      for (const ref of this.#resolved.keys()) if (!live.has(ref)) this.#resolved.delete(ref);
      for (const ref of this.#secretsRead.keys()) if (!live.has(ref)) this.#secretsRead.delete(ref);
      // None started once stopping: stop() may have stopped the watches already.
      if (signal.aborted) return;
      await this.#secretWatch.watch(new Map([...this.#secretsRead.values()].flatMap((m) => [...m])));
      if (this.#all || this.#pending.size > 0) continue;
      await new Promise<void>((wake) => {
        this.#wake = wake;
        sleep(Math.max(0, pollAt - Date.now()), signal).then(wake, wake);
      });
    }
  }

  /** One Plan's version, secrets and hash; a change asks for a pass. */
  async #resolve(p: Plan, signal: AbortSignal): Promise<void> {
    const ref = planRef(p);
    const before = this.#resolved.get(ref);
    const next: Resolution = { key: keyOf(p) };
    try {
      next.version = await resolveVersion(p.spec, async (url) => {
        const clusterId = await this.#clusterId();
        const latestVersion = p.status?.latestVersion;
        return resolveChannel(url, {
          signal,
          timeoutMs: CHANNEL_TIMEOUT_MS,
          ...(clusterId ? { clusterId } : {}),
          ...(latestVersion ? { latestVersion } : {}),
        });
      });
      const secrets = await this.#secrets(p);
      const data = Object.fromEntries(Object.entries(secrets).map(([name, s]) => [name, s.data ?? {}]));
      next.sucHash = sucPlanHash({ plan: p, version: next.version, secrets });
      next.hash =
        planGroupOf(p.apiVersion) === SUC_PLANS
          ? next.sucHash
          : planHash({ spec: p.spec, version: next.version, secrets: data });
    } catch (err) {
      next.resolveError = describeError(err);
      // The last version and hash stand (same generation): a channel that is down changes nothing.
      if (before?.key === next.key) {
        if (before.version !== undefined) next.version = before.version;
        if (before.hash !== undefined) next.hash = before.hash;
        if (before.sucHash !== undefined) next.sucHash = before.sucHash;
      }
      if (before?.resolveError !== next.resolveError)
        this.#log('warn', 'Plan not resolved', { plan: ref, error: next.resolveError });
    }
    this.#resolved.set(ref, next);
    const changed =
      before?.key !== next.key ||
      before.version !== next.version ||
      before.hash !== next.hash ||
      before.sucHash !== next.sucHash ||
      before.resolveError !== next.resolveError;
    if (changed) this.#notify();
  }

  /**
   * SUC's cluster ID, the kube-system namespace's UID, read once (through the namespace list the operator
   * may make); unread, the channel is asked without it and the read is tried at the next resolution.
   */
  async #clusterId(): Promise<string | undefined> {
    if (this.#cluster === undefined) {
      try {
        const list = await this.#core.listNamespace({ fieldSelector: 'metadata.name=kube-system' });
        this.#cluster = list.items[0]?.metadata?.uid;
      } catch (err) {
        this.#log('warn', "kube-system's UID not read: the channel is asked without X-SUC-Cluster-ID", {
          error: describeError(err),
        });
      }
    }
    return this.#cluster;
  }

  /** The Plan's secrets that are hashed (not ignoreUpdates), by secret name. */
  async #secrets(p: Plan): Promise<Record<string, HashedSecret>> {
    const out: Record<string, HashedSecret> = {};
    // Watched: the Secrets read, and those missing (their creation is a change); not those forbidden.
    const read = new Map<string, string | undefined>();
    this.#secretsRead.set(planRef(p), read);
    for (const name of secretsOf(p)) {
      const key = secretKey(p.metadata.namespace, name);
      try {
        const secret = await this.#core.readNamespacedSecret({ name, namespace: p.metadata.namespace });
        read.set(key, secret.metadata?.resourceVersion);
        out[name] = {
          name,
          ...(secret.type === undefined ? {} : { type: secret.type }),
          ...(secret.data === undefined ? {} : { data: secret.data }),
          ...(secret.immutable === undefined ? {} : { immutable: secret.immutable }),
        };
      } catch (err) {
        const code = statusCode(err);
        if (code === 404) read.set(key, undefined);
        const why =
          code === 404
            ? 'does not exist'
            : code === 403
              ? `cannot be read: bind the ClusterRole nuo-plan-secrets to the operator in namespace ${p.metadata.namespace}`
              : `cannot be read: ${describeError(err)}`;
        throw new Error(`secret ${key} ${why}`);
      }
    }
    return out;
  }

  #notify(): void {
    for (const fn of this.#changed) fn();
  }

  #answered(w: Watched, crdMissing: boolean): void {
    const changed = !w.listed || crdMissing !== w.crdMissing;
    const crd = `the Plan CRD of ${w.group.group}`;
    if (crdMissing && changed) this.#log('info', `${crd} is not installed: its Plans are off until it is`);
    else if (changed && w.listed) this.#log('info', `${crd} is installed: its Plans are read`);
    w.listed = true;
    w.crdMissing = crdMissing;
    if (changed) {
      this.#all = true;
      this.#wake?.();
      this.#notify();
    }
  }
}
