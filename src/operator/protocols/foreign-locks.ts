/**
 * A foreign controller's leader-election lock, wherever client-go keeps it: a Lease, or (its older
 * ConfigMapLock and EndpointsLock, which CLUO's operator and FLUO's lock types use) the record as JSON in
 * an annotation of a ConfigMap or an Endpoints object. A lock is judged as client-go's leader election
 * judges one (leaderelection.go, observedTime): held until its leaseDuration has passed, on this
 * process's monotonic clock, since this process last saw its record change; never by its renewTime,
 * which the holder's clock wrote (safety rule 10).
 */
import type { V1ConfigMap, V1Endpoints, V1Lease } from '@kubernetes/client-node';
import { type LeaseObservation, type LeaseRecord, leaseRecord } from '../../kube/lease-decision.ts';

export const LockKind = { lease: 'Lease', configMap: 'ConfigMap', endpoints: 'Endpoints' } as const;
export type LockKind = (typeof LockKind)[keyof typeof LockKind];

/** client-go's ConfigMapLock and EndpointsLock keep their LeaderElectionRecord here, as JSON. */
export const LEADER_ANNOTATION = 'control-plane.alpha.kubernetes.io/leader';

/** A lock as found: where it is, and its record (undefined: an annotation nuo cannot read). */
export interface FoundLock {
  kind: LockKind;
  namespace: string;
  name: string;
  uid: string;
  resourceVersion: string;
  record: LeaseRecord | undefined;
}

export const lockName = (l: FoundLock) => `${l.kind} ${l.namespace}/${l.name}`;

const meta = (kind: LockKind, o: V1Lease | V1ConfigMap | V1Endpoints) => ({
  kind,
  namespace: o.metadata?.namespace ?? '',
  name: o.metadata?.name ?? '',
  uid: o.metadata?.uid ?? '',
  resourceVersion: o.metadata?.resourceVersion ?? '',
});

export const leaseLock = (lease: V1Lease): FoundLock => ({
  ...meta(LockKind.lease, lease),
  record: leaseRecord(lease),
});

/**
 * A ConfigMap or Endpoints lock: its annotation parsed as client-go writes it (holderIdentity,
 * leaseDurationSeconds, acquireTime, renewTime, leaderTransitions). An object without the annotation has
 * no holder; one whose annotation does not parse has an unreadable record (held: fail closed).
 */
export function annotatedLock(kind: LockKind, o: V1ConfigMap | V1Endpoints): FoundLock {
  const text = o.metadata?.annotations?.[LEADER_ANNOTATION];
  return { ...meta(kind, o), record: text === undefined ? noHolder() : parseRecord(text) };
}

const noHolder = (): LeaseRecord => ({
  holderIdentity: '',
  leaseDurationSeconds: undefined,
  acquireTime: undefined,
  renewTime: undefined,
  leaseTransitions: 0,
});

function parseRecord(text: string): LeaseRecord | undefined {
  let r: unknown;
  try {
    r = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof r !== 'object' || r === null) return undefined;
  const o = r as Record<string, unknown>;
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
  if (o.holderIdentity !== undefined && typeof o.holderIdentity !== 'string') return undefined;
  return {
    holderIdentity: str(o.holderIdentity) ?? '',
    leaseDurationSeconds: num(o.leaseDurationSeconds),
    acquireTime: str(o.acquireTime),
    renewTime: str(o.renewTime),
    leaseTransitions: num(o.leaderTransitions) ?? 0,
  };
}

/**
 * Whether a lock is held: it names a holder (or its record cannot be read), and its leaseDuration has
 * not passed since `observed`, when this process last saw its record change (client-go's isLeaseValid).
 * Pure; `now` and `observed.at` are on the observer's monotonic clock.
 */
export function lockHeld(lock: FoundLock, observed: LeaseObservation, now: number): boolean {
  if (lock.record === undefined) return true;
  if (!lock.record.holderIdentity) return false;
  return observed.at + (lock.record.leaseDurationSeconds ?? 0) * 1000 > now;
}

/** Who holds a lock, as a message says it. */
export const holderOf = (lock: FoundLock) =>
  lock.record === undefined
    ? `a holder nuo cannot read (its ${LEADER_ANNOTATION} annotation is not client-go's record)`
    : lock.record.holderIdentity;

const lockKey = (l: FoundLock) => `${l.kind}/${l.uid}/${l.namespace}/${l.name}`;

/** A lock's record as client-go compares it, and its resourceVersion: any write to it is a change. */
const fingerprint = (l: FoundLock) => JSON.stringify([l.record ?? null, l.resourceVersion]);

/**
 * When this process last saw each lock's record change, on its monotonic clock: a first sight counts as
 * a change (a new candidate in client-go waits a whole leaseDuration too).
 */
export class LockObserver {
  readonly #seen = new Map<string, LeaseObservation>();
  readonly #clock: () => number;

  constructor(clock: () => number = () => performance.now()) {
    this.#clock = clock;
  }

  /** Takes in a fresh list of locks (others are forgotten) and returns whether a lock is held now. */
  observe(locks: readonly FoundLock[]): (lock: FoundLock) => boolean {
    const now = this.#clock();
    const live = new Set<string>();
    for (const lock of locks) {
      const key = lockKey(lock);
      live.add(key);
      const print = fingerprint(lock);
      if (this.#seen.get(key)?.fingerprint !== print) this.#seen.set(key, { fingerprint: print, at: now });
    }
    for (const key of this.#seen.keys()) if (!live.has(key)) this.#seen.delete(key);
    return (lock) => {
      const seen = this.#seen.get(lockKey(lock));
      return seen !== undefined && lockHeld(lock, seen, now);
    };
  }
}
