/**
 * The leader election's timing rules as pure functions, table-tested apart from the elector's I/O: what
 * the Lease record says, when this candidate first saw it as it is (by its own clock), and what to do.
 */
import type { V1Lease } from '@kubernetes/client-node';

/** The election-relevant fields of a Lease. */
export interface LeaseRecord {
  /** '' when nobody holds it (released or never acquired). */
  holderIdentity: string;
  leaseDurationSeconds: number | undefined;
  acquireTime: string | undefined;
  renewTime: string | undefined;
  leaseTransitions: number;
}

/** When (by the local, preferably monotonic, clock) the candidate first saw the Lease record as it is now. */
export interface LeaseObservation {
  fingerprint: string;
  at: number;
}

export type LeaseDecision =
  /** No Lease exists: create it, held by us. */
  | { action: 'create' }
  /** We hold it: renew it. */
  | { action: 'renew' }
  /** Free, released, or expired by our observation: take it over (leaseTransitions + 1). */
  | { action: 'acquire'; from: string }
  /** Someone else holds it and it has not expired by our observation. */
  | { action: 'wait'; holder: string; expiresInMs: number };

export function leaseRecord(lease: V1Lease): LeaseRecord {
  const spec = lease.spec ?? {};
  return {
    holderIdentity: spec.holderIdentity ?? '',
    leaseDurationSeconds: spec.leaseDurationSeconds,
    acquireTime: timeText(spec.acquireTime),
    renewTime: timeText(spec.renewTime),
    leaseTransitions: spec.leaseTransitions ?? 0,
  };
}

/**
 * Records when the Lease record was first seen as it is: the previous observation if nothing changed,
 * otherwise a new one at `now`. A holder that keeps renewing keeps changing renewTime, so its lease never
 * looks expired; a holder that stopped leaves it unchanged, and the lease expires leaseDuration after
 * we first saw that last renewal.
 */
export function observeLease(
  previous: LeaseObservation | undefined,
  record: LeaseRecord | undefined,
  now: number,
): LeaseObservation {
  const fingerprint = record
    ? JSON.stringify([
        record.holderIdentity,
        record.renewTime,
        record.acquireTime,
        record.leaseDurationSeconds,
        record.leaseTransitions,
      ])
    : '';
  return previous?.fingerprint === fingerprint ? previous : { fingerprint, at: now };
}

/**
 * What a candidate does next, given the current Lease record, when it saw that record first
 * (`observed`, from observeLease; undefined counts as "just now"), and the duration to assume when the
 * record names none. Pure: the elector's timing rules, table-tested.
 */
export function decideLease(
  record: LeaseRecord | undefined,
  identity: string,
  now: number,
  observed: LeaseObservation | undefined,
  fallbackDurationMs: number,
): LeaseDecision {
  if (!record) return { action: 'create' };
  const holder = record.holderIdentity;
  if (holder === identity) return { action: 'renew' };
  if (holder === '') return { action: 'acquire', from: '' };
  const seconds = record.leaseDurationSeconds;
  const durationMs =
    seconds !== undefined && Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : fallbackDurationMs;
  const expiresAt = (observed?.at ?? now) + durationMs;
  if (now < expiresAt) return { action: 'wait', holder, expiresInMs: expiresAt - now };
  return { action: 'acquire', from: holder };
}

function timeText(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (value instanceof Date) return value.toISOString();
  return String(value);
}
