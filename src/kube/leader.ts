/**
 * Leader election on a coordination.k8s.io/v1 Lease, with client-go's leaderelection semantics.
 *
 * - A candidate takes a Lease held by someone else only after `leaseDurationSeconds` have passed, by
 *   its own clock, since it last saw the Lease's record change (client-go's observedTime). The holder's
 *   renewTime is never compared with the local clock, so clock skew between replicas does not matter.
 * - Every write is conditional on the resourceVersion read (create, or replace); a 409 means someone
 *   else wrote: re-read and decide again, never force.
 * - A successful write (create, take over or renew) counts from the instant it was sent, not from when
 *   the attempt began (its read may have hung) nor from when the answer came: nobody can see the record
 *   before it was sent, so nobody can take over before that instant + leaseDuration.
 * - The leader renews every retryPeriod, counted from the start of the previous attempt, so after a slow
 *   write the next renewal goes out at once. If no write sent within the last renewDeadline succeeded
 *   it steps down at once, even while a request hangs: the signal given to onStartedLeading aborts and
 *   onStoppedLeading runs. renewDeadline < leaseDuration, so that happens before any other candidate may
 *   take over. `isLeader()` answers from the same clock: guard every actuation with it.
 * - A candidate starts leading only if its winning write left at least a retryPeriod of the renew
 *   deadline; otherwise it renews first, so a slow acquire cannot lead and step down moments later.
 * - When `run(signal)` is aborted, the leader steps down and releases the Lease (conditionally), so a
 *   standby can take over at once instead of waiting out the lease.
 * - `handOver()` steps down and releases the same way, then waits a pause (one lease duration) before
 *   it campaigns again: a standby takes over meanwhile; without one, this candidate leads again.
 *
 * The rules' pure part is lease-decision.ts. The elector stays one file over 400 lines on purpose: its
 * acquire, renew, step-down timer and release share the clock readings the rules above rest on.
 */
import { CoordinationV1Api, type KubeConfig, type V1Lease, V1MicroTime } from '@kubernetes/client-node';
import { type KubeLog, silentLog, sleep } from './backoff.ts';
import { describeError, statusCode } from './errors.ts';
import { advertOf, advertValue } from './lease-advert.ts';
import {
  decideLease,
  type LeaseDecision,
  type LeaseObservation,
  type LeaseRecord,
  leaseRecord,
  observeLease,
} from './lease-decision.ts';
import { withSignal } from './request-signal.ts';

export interface LeaderElectorOptions {
  kubeconfig: KubeConfig;
  namespace: string;
  /** Name of the Lease. */
  name: string;
  /** This candidate, unique among candidates (e.g. the pod name). */
  identity: string;
  /** How long others wait after the last renewal they saw before taking over (default 15 s). */
  leaseDurationMs?: number;
  /** The leader steps down if it could not renew for this long (default 10 s; < leaseDurationMs). */
  renewDeadlineMs?: number;
  /** Interval between attempts to acquire or renew (default 2 s; < renewDeadlineMs). */
  retryPeriodMs?: number;
  /** Called when this candidate becomes leader; `signal` aborts when it stops being leader. */
  onStartedLeading: (signal: AbortSignal) => void | Promise<void>;
  /** Called when this candidate stops being leader (after the signal aborted). */
  onStoppedLeading: () => void;
  /** Called when the observed holder changes ('' when nobody holds the Lease). */
  onNewLeader?: (identity: string) => void;
  /**
   * What this candidate, while it leads, tells the others on the Lease: an annotation (lease-advert.ts)
   * they read with `advert(key)`.
   */
  advert?: { key: string; value: string };
  /** Release the Lease when run() is aborted (default true; false is like a crash, for tests). */
  releaseOnCancel?: boolean;
  log?: KubeLog;
}

export interface LeaderElectorStats {
  leading: boolean;
  /** Holder identity last observed ('' free, undefined not yet read). */
  leader: string | undefined;
  /** Times this candidate became leader. */
  acquisitions: number;
  renewals: number;
  /** Failed acquire or renew attempts (API errors). */
  failures: number;
  /** Date.now() when the last successful acquire or renew write was sent. */
  lastRenewTime: number | undefined;
}

type Attempt = 'leading' | 'not-leading';

export class LeaderElector {
  readonly namespace: string;
  readonly name: string;
  readonly identity: string;
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
  readonly releaseOnCancel: boolean;
  readonly #api: CoordinationV1Api;
  readonly #onStartedLeading: (signal: AbortSignal) => void | Promise<void>;
  readonly #onStoppedLeading: () => void;
  readonly #onNewLeader: ((identity: string) => void) | undefined;
  readonly #advert: { key: string; value: string } | undefined;
  readonly #log: KubeLog;

  /** The Lease as last read or written by us (holds the resourceVersion for conditional writes). */
  #lease: V1Lease | undefined;
  #observed: LeaseObservation | undefined;
  #leader: string | undefined;
  #leading = false;
  #leaderScope: AbortController | undefined;
  /** Monotonic time (performance.now()) when the last successful acquire or renew write was sent. */
  #lastRenewAt: number | undefined;
  /** The same instant by the wall clock, for stats. */
  #lastRenewWall: number | undefined;
  #running = false;
  /** Ends the current term at once (set while leading). */
  #endTerm: ((reason: string) => void) | undefined;
  /** A handover asked for: how long to wait before campaigning again. */
  #handoverPauseMs: number | undefined;
  #lastError: string | undefined;
  #acquisitions = 0;
  #renewals = 0;
  #failures = 0;

  constructor(options: LeaderElectorOptions) {
    const {
      kubeconfig,
      namespace,
      name,
      identity,
      leaseDurationMs = 15_000,
      renewDeadlineMs = 10_000,
      retryPeriodMs = 2_000,
      onStartedLeading,
      onStoppedLeading,
      releaseOnCancel = true,
    } = options;
    if (!kubeconfig || typeof kubeconfig.makeApiClient !== 'function') {
      throw new Error('LeaderElector: kubeconfig must be a KubeConfig');
    }
    const dnsName = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
    if (typeof namespace !== 'string' || !dnsName.test(namespace)) {
      throw new Error(`LeaderElector: namespace must be a valid namespace name (got "${namespace}")`);
    }
    if (typeof name !== 'string' || !dnsName.test(name) || name.length > 253) {
      throw new Error(`LeaderElector: name must be a valid Lease name (got "${name}")`);
    }
    if (typeof identity !== 'string' || identity.trim() === '') {
      throw new Error('LeaderElector: identity must be a non-empty string');
    }
    for (const [what, value] of [
      ['leaseDurationMs', leaseDurationMs],
      ['renewDeadlineMs', renewDeadlineMs],
      ['retryPeriodMs', retryPeriodMs],
    ] as const) {
      if (!Number.isFinite(value) || value <= 0) {
        throw new Error(`LeaderElector: ${what} must be a positive number of milliseconds (got ${value})`);
      }
    }
    if (leaseDurationMs < 1000) {
      throw new Error(`LeaderElector: leaseDurationMs must be at least 1000 (got ${leaseDurationMs})`);
    }
    if (renewDeadlineMs >= leaseDurationMs) {
      throw new Error(
        `LeaderElector: renewDeadlineMs (${renewDeadlineMs}) must be less than leaseDurationMs (${leaseDurationMs})`,
      );
    }
    if (retryPeriodMs >= renewDeadlineMs) {
      throw new Error(
        `LeaderElector: retryPeriodMs (${retryPeriodMs}) must be less than renewDeadlineMs (${renewDeadlineMs})`,
      );
    }
    if (typeof onStartedLeading !== 'function' || typeof onStoppedLeading !== 'function') {
      throw new Error('LeaderElector: onStartedLeading and onStoppedLeading must be functions');
    }
    this.namespace = namespace;
    this.name = name;
    this.identity = identity;
    this.leaseDurationMs = leaseDurationMs;
    this.renewDeadlineMs = renewDeadlineMs;
    this.retryPeriodMs = retryPeriodMs;
    this.releaseOnCancel = releaseOnCancel;
    this.#api = kubeconfig.makeApiClient(CoordinationV1Api);
    this.#onStartedLeading = onStartedLeading;
    this.#onStoppedLeading = onStoppedLeading;
    this.#onNewLeader = options.onNewLeader;
    this.#advert = options.advert;
    this.#log = options.log ?? silentLog;
  }

  /**
   * True only while this candidate leads and its last successful write was sent less than
   * renewDeadlineMs ago. Check it right before every actuation.
   */
  isLeader(): boolean {
    return (
      this.#leading &&
      this.#lastRenewAt !== undefined &&
      monotonic() - this.#lastRenewAt < this.renewDeadlineMs
    );
  }

  /** Another holder's advert of `key` on the Lease as last read (at most retryPeriodMs old). */
  advert(key: string): string | undefined {
    if (this.#lease?.spec?.holderIdentity === this.identity) return undefined;
    return advertOf(this.#lease, key);
  }

  /** The holder last observed ('' nobody, undefined before the first read). */
  get leader(): string | undefined {
    return this.#leader;
  }

  stats(): LeaderElectorStats {
    return {
      leading: this.isLeader(),
      leader: this.#leader,
      acquisitions: this.#acquisitions,
      renewals: this.#renewals,
      failures: this.#failures,
      lastRenewTime: this.#lastRenewWall,
    };
  }

  /**
   * Steps down at once (isLeader() is false on return, the leader signal aborted), releases the Lease
   * and campaigns again only after `pauseMs`, so that a standby takes over. False when not leading.
   */
  handOver(reason: string, pauseMs = this.leaseDurationMs): boolean {
    const end = this.#endTerm;
    if (!this.#leading || !end) return false;
    this.#handoverPauseMs = pauseMs;
    end(`handing over: ${reason}`);
    return true;
  }

  /**
   * Campaigns, leads, and campaigns again after losing the lease, until `signal` aborts; then steps
   * down, releases the Lease if it holds it (unless releaseOnCancel is false) and resolves.
   */
  async run(signal: AbortSignal): Promise<void> {
    if (this.#running) throw new Error(`LeaderElector ${this.identity}: run() is already running`);
    this.#running = true;
    try {
      while (!signal.aborted) {
        if (!(await this.#acquire(signal))) break;
        this.#startLeading();
        const reason = await this.#renewUntilLost(signal);
        this.#stepDown(reason);
        if (this.#handoverPauseMs !== undefined) await this.#pauseAfterHandover(signal);
      }
    } finally {
      this.#stepDown('shutdown');
      if (this.releaseOnCancel) await this.#release();
      this.#running = false;
    }
  }

  /** Releases the Lease (the renew loop has exited: no write of ours is in flight) and waits the pause. */
  async #pauseAfterHandover(signal: AbortSignal): Promise<void> {
    const pauseMs = this.#handoverPauseMs ?? 0;
    this.#handoverPauseMs = undefined;
    await this.#release();
    this.#log(
      'info',
      `leader election: ${this.identity} campaigns again for ${this.#leaseName()} in ${pauseMs} ms, so that a standby takes over`,
    );
    await sleep(pauseMs, signal);
  }

  /** Tries every retryPeriod until it holds the Lease (true) or `signal` aborts (false). */
  async #acquire(signal: AbortSignal): Promise<boolean> {
    this.#log('debug', `leader election: ${this.identity} campaigning for ${this.#leaseName()}`);
    while (!signal.aborted) {
      const result = await this.#attempt(signal, false);
      if (signal.aborted) return false;
      if (result === 'leading') {
        // Lead only with at least a retryPeriod of the renew deadline left, else renew at once first:
        // with less, the first renewal could hardly land in time and leading would end at once,
        // aborting the drains it had started.
        const left = (this.#lastRenewAt ?? Number.NEGATIVE_INFINITY) + this.renewDeadlineMs - monotonic();
        if (left >= this.retryPeriodMs) return true;
        this.#log(
          'info',
          `leader election: ${this.identity} holds ${this.#leaseName()} but its write was slow (${Math.max(0, Math.round(left))} ms of the ${this.renewDeadlineMs} ms renew deadline left); renewing before leading`,
        );
        continue;
      }
      await sleep(this.retryPeriodMs * (1 + 0.2 * Math.random()), signal);
    }
    return false;
  }

  /**
   * Renews every retryPeriod. Resolves with why leadership ended: the renew deadline passed (checked by a
   * timer, so a hanging request cannot delay it), another holder took the Lease, or `signal` aborted.
   */
  #renewUntilLost(signal: AbortSignal): Promise<string> {
    return new Promise<string>((resolve) => {
      const scope = new AbortController();
      let deadline: NodeJS.Timeout | undefined;
      let why = '';
      const end = (reason: string) => {
        if (scope.signal.aborted) return;
        clearTimeout(deadline);
        signal.removeEventListener('abort', onAbort);
        // Step down synchronously, before anything else can run: an actuation guarded by isLeader()
        // or by the leader signal stops here. The promise resolves once the renew loop has exited.
        this.#stepDown(reason);
        scope.abort();
        why = reason;
      };
      const onAbort = () => end('shutdown');
      const armDeadline = () => {
        clearTimeout(deadline);
        const left = (this.#lastRenewAt ?? 0) + this.renewDeadlineMs - monotonic();
        deadline = setTimeout(
          () => end(`no successful renewal for ${this.renewDeadlineMs} ms`),
          Math.max(0, left),
        );
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.#endTerm = end;
      armDeadline();
      void (async () => {
        // Attempts start retryPeriod after the previous one started (the first, after the acquiring
        // write was sent), at once if it took longer: a slow write leaves the next renewal the rest of
        // the deadline instead of a retryPeriod less.
        let last = this.#lastRenewAt ?? monotonic();
        while (!scope.signal.aborted) {
          await sleep(last + this.retryPeriodMs - monotonic(), scope.signal);
          if (scope.signal.aborted) return;
          last = monotonic();
          const result = await this.#attempt(scope.signal, true);
          if (scope.signal.aborted) return;
          if (result === 'leading') armDeadline();
          else if (this.#leader !== undefined && this.#leader !== this.identity) {
            end(`the lease is now held by ${this.#leader || 'nobody'}`);
          }
        }
      })().finally(() => {
        this.#endTerm = undefined;
        resolve(why);
      });
    });
  }

  /**
   * One acquire-or-renew: read the Lease (or, when renewing, start from the copy we last wrote), decide,
   * write conditionally; on 409 re-read and decide again (at most a few times). API errors are logged
   * and count as "not leading" for this attempt.
   */
  async #attempt(signal: AbortSignal, renewing: boolean): Promise<Attempt> {
    try {
      // The leader renews from the copy it last wrote (a 409 tells if anyone else wrote since);
      // a candidate always reads.
      let fresh = !(renewing && this.#lease);
      let lease = fresh ? await this.#read(signal) : this.#lease;
      for (let tries = 0; tries < 3; tries++) {
        const record = lease ? leaseRecord(lease) : undefined;
        if (fresh) this.#observe(record);
        const decision = decideLease(
          record,
          this.identity,
          monotonic(),
          this.#observed,
          this.leaseDurationMs,
        );
        if (decision.action === 'wait') {
          this.#lastError = undefined;
          return 'not-leading';
        }
        try {
          // Stamped right before the write leaves: the earliest instant anyone can see the record.
          const sent = monotonic();
          const sentWall = Date.now();
          const written =
            decision.action === 'create'
              ? await this.#api.createNamespacedLease(
                  { namespace: this.namespace, body: this.#leaseBody(undefined, decision) },
                  withSignal(signal, this.renewDeadlineMs),
                )
              : await this.#api.replaceNamespacedLease(
                  { namespace: this.namespace, name: this.name, body: this.#leaseBody(lease, decision) },
                  withSignal(signal, this.renewDeadlineMs),
                );
          this.#lease = written;
          this.#observe(leaseRecord(written));
          this.#lastRenewAt = sent;
          this.#lastRenewWall = sentWall;
          this.#lastError = undefined;
          if (decision.action === 'renew' && renewing) this.#renewals++;
          if (decision.action !== 'renew' || !renewing) {
            this.#log(
              'info',
              `leader election: ${this.identity} holds ${this.#leaseName()} (${decision.action})`,
              {
                from: decision.action === 'acquire' ? decision.from : undefined,
                transitions: written.spec?.leaseTransitions,
              },
            );
          }
          return 'leading';
        } catch (err) {
          // 409: someone else wrote since we read (or created it first): re-read and decide again.
          if (statusCode(err) !== 409 || signal.aborted) throw err;
          this.#log('debug', `leader election: conflict writing ${this.#leaseName()}; re-reading`);
          lease = await this.#read(signal);
          fresh = true;
        }
      }
      return 'not-leading';
    } catch (err) {
      if (signal.aborted) return 'not-leading';
      this.#failures++;
      this.#reportError(err, renewing);
      return 'not-leading';
    }
  }

  async #read(signal: AbortSignal): Promise<V1Lease | undefined> {
    try {
      const lease = await this.#api.readNamespacedLease(
        { namespace: this.namespace, name: this.name },
        withSignal(signal, this.renewDeadlineMs),
      );
      this.#lease = lease;
      return lease;
    } catch (err) {
      if (statusCode(err) === 404) {
        this.#lease = undefined;
        return undefined;
      }
      throw err;
    }
  }

  #observe(record: LeaseRecord | undefined): void {
    this.#observed = observeLease(this.#observed, record, monotonic());
    const holder = record?.holderIdentity ?? '';
    if (holder !== this.#leader) {
      const first = this.#leader === undefined;
      this.#leader = holder;
      if (!first || holder !== '') {
        this.#log('info', `leader election: ${this.#leaseName()} is held by ${holder || 'nobody'}`, {
          holder,
        });
      }
      try {
        this.#onNewLeader?.(holder);
      } catch (err) {
        this.#log('error', `leader election: onNewLeader failed: ${describeError(err)}`);
      }
    }
  }

  #leaseBody(current: V1Lease | undefined, decision: LeaseDecision): V1Lease {
    const now = new V1MicroTime(Date.now());
    const spec = current?.spec ?? {};
    const takeover = decision.action === 'acquire';
    return {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        ...current?.metadata,
        name: this.name,
        namespace: this.namespace,
        ...(this.#advert
          ? {
              annotations: {
                ...current?.metadata?.annotations,
                [this.#advert.key]: advertValue(this.identity, this.#advert.value),
              },
            }
          : {}),
      },
      spec: {
        ...spec,
        holderIdentity: this.identity,
        leaseDurationSeconds: Math.ceil(this.leaseDurationMs / 1000),
        acquireTime: decision.action === 'renew' && spec.acquireTime ? spec.acquireTime : now,
        renewTime: now,
        leaseTransitions: (spec.leaseTransitions ?? 0) + (takeover ? 1 : 0),
      },
    };
  }

  #startLeading(): void {
    this.#leading = true;
    this.#acquisitions++;
    const scope = new AbortController();
    this.#leaderScope = scope;
    this.#log('info', `leader election: ${this.identity} started leading ${this.#leaseName()}`);
    try {
      const result = this.#onStartedLeading(scope.signal);
      if (result && typeof (result as Promise<void>).catch === 'function') {
        (result as Promise<void>).catch((err: unknown) =>
          this.#log('error', `leader election: onStartedLeading failed: ${describeError(err)}`),
        );
      }
    } catch (err) {
      this.#log('error', `leader election: onStartedLeading failed: ${describeError(err)}`);
    }
  }

  #stepDown(reason: string): void {
    if (!this.#leading) return;
    this.#leading = false;
    const scope = this.#leaderScope;
    this.#leaderScope = undefined;
    this.#log(
      reason === 'shutdown' || this.#handoverPauseMs !== undefined ? 'info' : 'warn',
      `leader election: ${this.identity} stopped leading: ${reason}`,
    );
    scope?.abort(new Error(`leadership lost: ${reason}`));
    try {
      this.#onStoppedLeading();
    } catch (err) {
      this.#log('error', `leader election: onStoppedLeading failed: ${describeError(err)}`);
    }
  }

  /** Gives the Lease up if we still hold it, conditionally: a 409 re-reads and retries once. */
  async #release(): Promise<void> {
    let lease = this.#lease;
    for (let tries = 0; tries < 2 && lease?.spec?.holderIdentity === this.identity; tries++) {
      const now = new V1MicroTime(Date.now());
      try {
        this.#lease = await this.#api.replaceNamespacedLease(
          {
            namespace: this.namespace,
            name: this.name,
            body: {
              ...lease,
              spec: {
                ...lease.spec,
                holderIdentity: '',
                leaseDurationSeconds: 1,
                acquireTime: now,
                renewTime: now,
              },
            },
          },
          withSignal(undefined, this.renewDeadlineMs),
        );
        this.#log('info', `leader election: ${this.identity} released ${this.#leaseName()}`);
        return;
      } catch (err) {
        if (statusCode(err) !== 409) {
          this.#log('warn', `leader election: could not release ${this.#leaseName()}: ${describeError(err)}`);
          return;
        }
        lease = await this.#read(AbortSignal.timeout(this.renewDeadlineMs)).catch(() => undefined);
      }
    }
  }

  #reportError(err: unknown, renewing: boolean): void {
    const code = statusCode(err);
    let text = `leader election: ${this.identity} could not ${renewing ? 'renew' : 'acquire'} ${this.#leaseName()}: ${describeError(err)}`;
    if (code === 403) {
      text += ` — forbidden: the identity needs get and update (and create, if the Lease does not exist yet) on leases.coordination.k8s.io "${this.name}" in namespace ${this.namespace}`;
    }
    // The same failure every retryPeriod would flood the log: report each distinct one once at warn/error.
    const key = `${code}:${describeError(err)}`;
    const repeat = key === this.#lastError;
    this.#lastError = key;
    this.#log(repeat ? 'debug' : code === 403 || code === 401 ? 'error' : 'warn', text, { code });
  }

  #leaseName(): string {
    return `lease ${this.namespace}/${this.name}`;
  }
}

/**
 * Every duration the elector measures uses the monotonic clock: a wall-clock jump (NTP step, manual
 * change) must neither extend a leader's belief that it still leads nor expire a rival's lease early.
 */
function monotonic(): number {
  return performance.now();
}
