/**
 * The slot ledger: one ConfigMap recording which nodes hold a slot of the disruption budget. Every change
 * is a conditional replace (resourceVersion), so admissions are serialised by the API server itself: a
 * stale or second operator that decided on an old view gets 409 and must re-read and re-decide.
 */
import type { CoreV1Api, V1ConfigMap } from '@kubernetes/client-node';
import { AGENT_PROTOCOLS, type AgentProtocol, LEDGER } from '../../api/keys.ts';
import { ATTEMPT_REASONS } from '../../api/update-policy.ts';
import { statusCode } from '../../kube/errors.ts';
import type { Action } from '../decide/action.ts';
import type { Ledger, RemediationRecord } from '../decide/ledger-view.ts';
import type { PlanSlot } from '../decide/plan-work.ts';
import { ATTEMPT_ENDS, AttemptEnd, type InPool } from '../decide/slot.ts';
import type { RolloutRecord } from '../decide/waves.ts';

/**
 * The ledger holds every pool's budget: each slot and promise names its pool, so a node keeps its slot
 * in the pool that admitted it until its attempt ends, whatever its labels say meanwhile. `inPool` is
 * one pool's part, as decide() counts it (in the same shape, `lastGrant` that pool's).
 */
export function inPool(ledger: Ledger, pool: string): Ledger {
  const mine = (e: InPool) => (e.pool ?? '') === pool;
  const slots = Object.fromEntries(Object.entries(ledger.slots).filter(([, s]) => mine(s)));
  const next = Object.entries(ledger.next ?? {}).filter(([, s]) => mine(s));
  const lastGrant = pool === '' ? ledger.lastGrant : ledger.poolGrants?.[pool];
  const rollout = pool === '' ? ledger.rollout : ledger.rollouts?.[pool];
  return {
    slots,
    ...(next.length > 0 ? { next: Object.fromEntries(next) } : {}),
    ...(lastGrant === undefined ? {} : { lastGrant }),
    ...(rollout === undefined ? {} : { rollout }),
  };
}

/** The pool whose budget holds `node`'s slot or promise ('' the default), or undefined. */
export function poolOf(ledger: Ledger, node: string): string | undefined {
  const entry = ledger.slots[node] ?? ledger.next?.[node];
  return entry === undefined ? undefined : (entry.pool ?? '');
}

const PREPARES: ReadonlySet<unknown> = new Set(['drain', 'cordon', 'none']);

function isPlanSlot(p: unknown): p is PlanSlot {
  if (typeof p !== 'object' || p === null) return false;
  const s = p as Record<string, unknown>;
  return (
    typeof s.ref === 'string' &&
    typeof s.hash === 'string' &&
    typeof s.version === 'string' &&
    PREPARES.has(s.prepare) &&
    typeof s.reboot === 'boolean'
  );
}

function isRolloutRecord(r: unknown): r is RolloutRecord {
  if (typeof r !== 'object' || r === null) return false;
  const o = r as Record<string, unknown>;
  return (
    typeof o.since === 'string' &&
    Number.isInteger(o.wave) &&
    typeof o.waveSince === 'string' &&
    Number.isInteger(o.completed) &&
    Array.isArray(o.counted) &&
    o.counted.every((d) => typeof d === 'string') &&
    typeof o.failed === 'object' &&
    o.failed !== null &&
    Object.values(o.failed).every((f) => typeof f === 'string') &&
    (o.resumed === undefined || typeof o.resumed === 'string')
  );
}

export class LedgerConflict extends Error {}

export interface LedgerVersion {
  ledger: Ledger;
  resourceVersion: string;
}

export function parseLedger(cm: V1ConfigMap): Ledger {
  const text = cm.data?.[LEDGER.key];
  if (!text) return { slots: {} };
  try {
    const doc = JSON.parse(text) as Ledger;
    if (typeof doc !== 'object' || doc === null || typeof doc.slots !== 'object' || doc.slots === null) {
      throw new Error('no "slots" object');
    }
    const next: unknown = doc.next;
    if (
      next !== undefined &&
      (typeof next !== 'object' ||
        next === null ||
        Object.values(next).some(
          (s: { after?: unknown; since?: unknown } | null) =>
            typeof s?.after !== 'string' || typeof s.since !== 'string',
        ))
    ) {
      throw new Error('"next" must map nodes to { after, since }');
    }
    const entries: { pool?: unknown }[] = [...Object.values(doc.slots), ...Object.values(doc.next ?? {})];
    if (entries.some((e) => e.pool !== undefined && typeof e.pool !== 'string')) {
      throw new Error('a "pool" that is not a string');
    }
    const plans = Object.values(doc.slots).map((s) => (s as { plan?: unknown }).plan);
    if (plans.some((p) => p !== undefined && !isPlanSlot(p))) {
      throw new Error('a "plan" that is not { ref, hash, version, prepare, reboot }');
    }
    const protocols = Object.values(doc.slots).map((s) => (s as { protocol?: unknown }).protocol);
    const foreign = new Set<unknown>(AGENT_PROTOCOLS.filter((p: AgentProtocol) => p !== 'nuo'));
    if (protocols.some((p) => p !== undefined && !foreign.has(p))) {
      throw new Error(`a "protocol" that is not one of ${[...foreign].join(', ')}`);
    }
    const numbered: unknown[] = [
      doc.attempts,
      ...[...Object.values(doc.slots), ...Object.values(doc.next ?? {})].map(
        (s) => (s as { attempt?: unknown }).attempt,
      ),
    ];
    if (numbered.some((n) => n !== undefined && !(Number.isSafeInteger(n) && (n as number) >= 0))) {
      throw new Error('an "attempts" or "attempt" that is not a whole number');
    }
    const ends = Object.values(doc.slots).map((s) => (s as { ended?: unknown }).ended);
    const known = new Set<unknown>(ATTEMPT_ENDS);
    if (ends.some((e) => e !== undefined && !known.has(e))) {
      throw new Error(`an "ended" that is not one of ${ATTEMPT_ENDS.join(', ')}`);
    }
    const reasons = Object.values(doc.slots).map((s) => (s as { reason?: unknown }).reason);
    const attemptReasons = new Set<unknown>(ATTEMPT_REASONS);
    if (reasons.some((r) => r !== undefined && !attemptReasons.has(r))) {
      throw new Error(`a "reason" that is not one of ${ATTEMPT_REASONS.join(', ')}`);
    }
    const grants: unknown = doc.poolGrants;
    if (
      grants !== undefined &&
      (typeof grants !== 'object' ||
        grants === null ||
        Object.values(grants).some((g) => typeof g !== 'string'))
    ) {
      throw new Error('"poolGrants" must map pools to times');
    }
    const rollouts = [
      ...(doc.rollout === undefined ? [] : [doc.rollout]),
      ...Object.values(doc.rollouts ?? {}),
    ];
    if (rollouts.some((r) => !isRolloutRecord(r))) {
      throw new Error('a rollout that is not { since, wave, waveSince, completed, counted, failed }');
    }
    const remediations: unknown = doc.remediations;
    if (
      remediations !== undefined &&
      (typeof remediations !== 'object' ||
        remediations === null ||
        Array.isArray(remediations) ||
        Object.values(remediations).some((list) => !Array.isArray(list) || !list.every(isRemediationRecord)))
    ) {
      throw new Error('"remediations" must map pools to lists of { node, at }');
    }
    return doc;
  } catch (err) {
    // Never guess who holds a slot: refuse to act until a person repairs or deletes the ledger.
    throw new Error(
      `ConfigMap ${cm.metadata?.namespace}/${LEDGER.name} is corrupt (${(err as Error).message}); nuo admits no node until it is repaired`,
    );
  }
}

export class LedgerStore {
  readonly #core: CoreV1Api;
  readonly #namespace: string;

  constructor(core: CoreV1Api, namespace: string) {
    this.#core = core;
    this.#namespace = namespace;
  }

  async read(): Promise<LedgerVersion> {
    try {
      const cm = await this.#core.readNamespacedConfigMap({ name: LEDGER.name, namespace: this.#namespace });
      return { ledger: parseLedger(cm), resourceVersion: cm.metadata?.resourceVersion ?? '' };
    } catch (err) {
      if (statusCode(err) !== 404) throw err;
      try {
        const cm = await this.#core.createNamespacedConfigMap({
          namespace: this.#namespace,
          body: {
            metadata: { name: LEDGER.name, labels: { 'app.kubernetes.io/name': 'nuo' } },
            data: { [LEDGER.key]: JSON.stringify({ slots: {} }) },
          },
        });
        return { ledger: { slots: {} }, resourceVersion: cm.metadata?.resourceVersion ?? '' };
      } catch (createErr) {
        if (statusCode(createErr) === 409) return this.read();
        throw createErr;
      }
    }
  }

  /** Replaces the ledger if it is still at `from`; throws LedgerConflict otherwise. */
  async write(from: LedgerVersion, ledger: Ledger): Promise<LedgerVersion> {
    try {
      const cm = await this.#core.replaceNamespacedConfigMap({
        name: LEDGER.name,
        namespace: this.#namespace,
        body: {
          metadata: {
            name: LEDGER.name,
            resourceVersion: from.resourceVersion,
            labels: { 'app.kubernetes.io/name': 'nuo' },
          },
          data: { [LEDGER.key]: JSON.stringify(ledger) },
        },
      });
      return { ledger, resourceVersion: cm.metadata?.resourceVersion ?? '' };
    } catch (err) {
      if (statusCode(err) === 409) throw new LedgerConflict('the slot ledger changed meanwhile');
      throw err;
    }
  }
}

/** A pool's rollout record as this pass leaves it: absent, the rollout has ended. */
export interface RolloutChange {
  type: 'rollout';
  record?: RolloutRecord;
}

/**
 * A pool's remediation records to forget: out of the rate limit's hour as the deciding leader saw them
 * (policy-need.ts remediationRate), or all of a pool whose policy is gone. Never pruned by comparing the
 * times recorded with the writer's clock: another leader's clock wrote them.
 */
export interface ForgetRemediations {
  type: 'remediations';
  forget: readonly RemediationRecord[] | 'all';
}

/** The end of a slot holder's attempt, recorded before the node write that ends it (Slot.ended). */
export interface EndChange {
  type: 'ended';
  node: string;
  outcome: AttemptEnd;
}

/** The end an action writes on a slot holder, as the ledger records it first; undefined for any other. */
export function endOf(a: Action): EndChange | undefined {
  const outcome =
    a.type === 'complete'
      ? AttemptEnd.completed
      : a.type === 'abort'
        ? AttemptEnd.failed
        : a.type === 'end'
          ? AttemptEnd.ended
          : undefined;
  return outcome && { type: 'ended', node: a.node, outcome };
}

/**
 * decide()'s actions that change the ledger: the slots a pass takes, frees, promises and records, the
 * ends of attempts it decided, and its pool's rollout record.
 */
export type LedgerChange =
  | Extract<Action, { type: 'admit' | 'release' | 'promise' | 'unpromise' | 'claim' }>
  | EndChange
  | ForgetRemediations
  | RolloutChange;

/**
 * The ledger after `changes` to `pool`'s budget (default ''), made at `at` (RFC 3339): a new object, the
 * old one untouched.
 */
export function withChanges(ledger: Ledger, changes: readonly LedgerChange[], at: string, pool = ''): Ledger {
  const l = structuredClone(ledger);
  const tag = pool === '' ? {} : { pool };
  // Each admission and promise takes the next attempt number, unique across pools and leaders: the
  // write is conditional, so two leaders never hand out the same one.
  const nextAttempt = () => {
    l.attempts = (l.attempts ?? 0) + 1;
    return l.attempts;
  };
  for (const a of changes) {
    if (a.type === 'rollout') setRollout(l, pool, a.record);
    else if (a.type === 'remediations') forgetRemediations(l, pool, a.forget);
    else if (a.type === 'release') delete l.slots[a.node];
    else if (a.type === 'ended') {
      const slot = l.slots[a.node];
      if (slot) slot.ended = a.outcome;
    } else if (a.type === 'promise')
      l.next = { ...l.next, [a.node]: { after: a.after, since: at, attempt: nextAttempt(), ...tag } };
    else if (a.type === 'unpromise') delete l.next?.[a.node];
    else {
      // An admission takes its slot now; a claim records a handover made when its promise was, in the
      // attempt the promise named.
      const plan = a.type === 'admit' && a.plan ? { plan: a.plan } : {};
      const protocol = a.protocol ? { protocol: a.protocol } : {};
      const reason = a.type === 'admit' ? { reason: a.for } : {};
      const named =
        a.type === 'claim'
          ? { since: a.since, ...(a.attempt === undefined ? {} : { attempt: a.attempt }) }
          : { since: at, attempt: nextAttempt() };
      l.slots[a.node] = { ...named, ...tag, ...plan, ...protocol, ...reason };
      delete l.next?.[a.node];
    }
  }
  if (l.next && Object.keys(l.next).length === 0) delete l.next;
  const remediated = changes.flatMap((a) =>
    a.type === 'admit' && a.remediation ? [{ node: a.node, at }] : [],
  );
  if (pool !== '' && remediated.length > 0) recordRemediations(l, pool, remediated);
  if (changes.some((a) => a.type === 'admit')) {
    if (pool === '') l.lastGrant = at;
    else l.poolGrants = { ...l.poolGrants, [pool]: at };
  }
  return l;
}

function isRemediationRecord(r: unknown): r is RemediationRecord {
  const { node, at } = (r ?? {}) as Partial<Record<keyof RemediationRecord, unknown>>;
  return typeof node === 'string' && typeof at === 'string' && !Number.isNaN(Date.parse(at));
}

/** Adds `added` to `pool`'s remediations in `l`. */
function recordRemediations(l: Ledger, pool: string, added: readonly RemediationRecord[]): void {
  setRemediations(l, pool, [...(l.remediations?.[pool] ?? []), ...added]);
}

/** Forgets `forget` (or all) of `pool`'s remediations in `l`. */
function forgetRemediations(l: Ledger, pool: string, forget: readonly RemediationRecord[] | 'all'): void {
  const gone = (r: RemediationRecord) =>
    forget === 'all' || forget.some((f) => f.node === r.node && f.at === r.at);
  setRemediations(
    l,
    pool,
    (l.remediations?.[pool] ?? []).filter((r) => !gone(r)),
  );
}

function setRemediations(l: Ledger, pool: string, list: RemediationRecord[]): void {
  const { [pool]: _, ...others } = l.remediations ?? {};
  l.remediations = list.length > 0 ? { ...others, [pool]: list } : others;
  if (Object.keys(l.remediations).length === 0) delete l.remediations;
}

/** Records (or, with none, removes) `pool`'s rollout in `l`. */
function setRollout(l: Ledger, pool: string, record: RolloutRecord | undefined): void {
  if (pool === '') {
    if (record) l.rollout = record;
    else delete l.rollout;
    return;
  }
  const { [pool]: _, ...others } = l.rollouts ?? {};
  l.rollouts = record ? { ...others, [pool]: record } : others;
  if (Object.keys(l.rollouts).length === 0) delete l.rollouts;
}

/** Each pool's changes of a pass (pool → its changes), applied in one write. */
export type PoolChanges = ReadonlyMap<string, readonly LedgerChange[]>;

export function withPoolChanges(ledger: Ledger, changes: PoolChanges, at: string): Ledger {
  let l = ledger;
  for (const [pool, list] of changes) l = withChanges(l, list, at, pool);
  return l;
}

/** Conditional writes recordEnd tries before it gives up (the step then fails and a pass decides again). */
const END_RECORD_TRIES = 5;

/**
 * The ledger as this leader last read or wrote it, read again when older than `ttlMs`. While it leads,
 * nuo is the ledger's only writer, so a read before every decision buys nothing: a change by anyone else
 * makes the next write 409, which drops the copy, and a stale copy only holds slots longer than needed,
 * never fewer.
 */
export class LedgerCache {
  readonly #store: LedgerStore;
  readonly #ttlMs: number;
  #copy: { version: LedgerVersion; at: number } | undefined;

  constructor(store: LedgerStore, ttlMs: number) {
    this.#store = store;
    this.#ttlMs = ttlMs;
  }

  /** The ledger as last read or written here, if any (a handover decides on it). */
  get last(): Ledger | undefined {
    return this.#copy?.version.ledger;
  }

  async read(): Promise<LedgerVersion> {
    const copy = this.#copy;
    if (copy && performance.now() - copy.at < this.#ttlMs) return copy.version;
    const version = await this.#store.read();
    this.#copy = { version, at: performance.now() };
    return version;
  }

  /** The ledger at `from` with each pool's `changes`, written conditionally (LedgerConflict on 409: re-decide). */
  async write(from: LedgerVersion, changes: PoolChanges, at: string): Promise<LedgerVersion> {
    try {
      const version = await this.#store.write(from, withPoolChanges(from.ledger, changes, at));
      this.#copy = { version, at: performance.now() };
      return version;
    } catch (err) {
      this.#copy = undefined;
      throw err;
    }
  }

  /**
   * Records the end of `node`'s attempt in its slot before the node write that ends it (Slot.ended): a
   * conditional write, read again and retried on a conflict. Nothing to do when the node holds no slot
   * (an attempt without one) or the end is recorded already (the pass that decided it wrote it).
   */
  async recordEnd(node: string, outcome: AttemptEnd): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const from = await this.read();
      const slot = from.ledger.slots[node];
      if (!slot || slot.ended === outcome) return;
      const change: LedgerChange = { type: 'ended', node, outcome };
      try {
        await this.write(from, new Map([[slot.pool ?? '', [change]]]), new Date().toISOString());
        return;
      } catch (err) {
        if (!(err instanceof LedgerConflict) || attempt >= END_RECORD_TRIES) throw err;
      }
    }
  }

  /** A new leadership reads afresh. */
  forget(): void {
    this.#copy = undefined;
  }
}
