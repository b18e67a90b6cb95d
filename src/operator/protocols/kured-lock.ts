/**
 * kured's lock, read and written as kured 1.23 keeps it: one annotation on kured's DaemonSet holding JSON,
 * `{"nodeID","metadata":{"unschedulable"},"created","TTL"}` for one holder (kured's --concurrency 1), or
 * `{"maxOwners","locks":[…]}` for several. `created` is an RFC 3339 time, `TTL` nanoseconds (0: no expiry).
 * Pure: what a pool counts as disrupted, what holds it, and the value nuo writes to hold or release.
 */
import type { Wait } from '../decide/wait.ts';

export const KURED_LOCK_ANNOTATION = 'weave.works/kured-node-lock';

/** A policy's coexistence.kured, resolved. */
export interface KuredSettings {
  namespace: string;
  name: string;
  annotation: string;
  /** kured's --concurrency: which of the two forms the lock takes. */
  concurrency: number;
  /** nuo holds kured's lock while its attempts in the pool run, and admits nothing while kured holds it. */
  holdLock: boolean;
  /** The TTL nuo's hold carries; renewed at half of it while held. */
  ttlMs: number;
}

/** One holder as kured writes it. */
export interface LockEntry {
  nodeID: string;
  metadata?: { unschedulable: boolean };
  created: string;
  /** Nanoseconds (Go's time.Duration); 0: until released. */
  TTL: number;
}

/** The lock's holders, expired or not. */
export type KuredLock = LockEntry[];

/** nuo's holder names: never a node's name (a node name has no '/'), and one per pool. */
export function nuoHolder(policy: string): string {
  return `nuo.dev/${policy}`;
}

const ownedBy = (policy: string) => (e: LockEntry) =>
  e.nodeID === nuoHolder(policy) || e.nodeID.startsWith(`${nuoHolder(policy)}#`);
const isNuo = (e: LockEntry) => e.nodeID.startsWith('nuo.dev/');

function expired(e: LockEntry, now: number): boolean {
  return e.TTL > 0 && now - Date.parse(e.created) >= e.TTL / 1e6;
}

/** The annotation's value as holders; an error says what is wrong with it (kured would refuse it too). */
export function parseKuredLock(
  value: string | undefined,
  concurrency: number,
): { ok: true; lock: KuredLock } | { ok: false; error: string } {
  if (value === undefined || value === '') return { ok: true, lock: [] };
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch (err) {
    return { ok: false, error: `not JSON (${(err as Error).message})` };
  }
  const entries = concurrency > 1 ? (parsed as { locks?: unknown })?.locks : [parsed];
  if (concurrency > 1 && entries === null) return { ok: true, lock: [] };
  if (!Array.isArray(entries)) {
    return { ok: false, error: `no "locks" list: is kured's --concurrency ${concurrency}?` };
  }
  const lock: LockEntry[] = [];
  for (const e of entries as Partial<LockEntry>[]) {
    if (
      typeof e?.nodeID !== 'string' ||
      typeof e.created !== 'string' ||
      Number.isNaN(Date.parse(e.created))
    ) {
      return {
        ok: false,
        error: `a holder without nodeID and created time: is kured's --concurrency ${concurrency}?`,
      };
    }
    lock.push({ ...(e as LockEntry), TTL: typeof e.TTL === 'number' ? e.TTL : 0 });
  }
  return { ok: true, lock };
}

/** What the pool sees of kured's lock now. */
export interface KuredView {
  /** kured's live holders (nodes), every pool's. */
  kured: string[];
  /** Whether this pool's own hold is in the lock and live. */
  held: boolean;
  /** Another pool of nuo holds it. */
  otherNuo: boolean;
}

export function viewLock(lock: KuredLock, policy: string, now: number): KuredView {
  const live = lock.filter((e) => !expired(e, now));
  return {
    kured: live.filter((e) => !isNuo(e)).map((e) => e.nodeID),
    held: live.some(ownedBy(policy)),
    otherNuo: live.some((e) => isNuo(e) && !ownedBy(policy)(e)),
  };
}

/** The pool's nodes kured holds its lock for: disrupted, in the pool's budget and its zones'. */
export function kuredDisrupted(view: KuredView, pool: Iterable<string>): Map<string, string> {
  const held = new Set(view.kured);
  return new Map([...pool].filter((n) => held.has(n)).map((n) => [n, "held by kured's lock"]));
}

/**
 * Why the pool admits nothing because of kured's lock: while it is not read or not understood (who kured
 * disrupts is unknown: fail closed). With holdLock also while kured holds the lock (kured reboots one node
 * or more: nuo waits), and until nuo's own hold is in it (kured waits from then). Without holdLock kured's
 * nodes only count in the budget.
 */
export function kuredHold(
  settings: KuredSettings,
  view: KuredView | { error: string } | undefined,
): Wait | undefined {
  const lock = `kured's lock (${settings.namespace}/${settings.name} ${settings.annotation})`;
  if (view === undefined) return { reason: `waiting: ${lock} is not read yet` };
  if ('error' in view) return { reason: `waiting: ${lock} cannot be used: ${view.error}` };
  if (!settings.holdLock) return undefined;
  if (view.kured.length > 0) return { reason: `waiting: kured holds ${lock} for ${view.kured.join(', ')}` };
  if (view.otherNuo) return { reason: `waiting: another UpdatePolicy holds ${lock}` };
  if (!view.held) return { reason: `waiting: taking ${lock}` };
  return undefined;
}

function entry(id: string, now: number, ttlMs: number): LockEntry {
  return {
    nodeID: id,
    metadata: { unschedulable: false },
    created: new Date(now).toISOString(),
    TTL: ttlMs * 1e6,
  };
}

/**
 * The annotation value that makes the pool hold (`want`) or release kured's lock, from the value read:
 * undefined when nothing is to change, null to remove the annotation. Holding with one holder takes a
 * free or expired lock; with several, it fills every free place, so kured adds no holder while nuo holds.
 * A hold is renewed when half its TTL has passed. kured's own holders are never removed.
 */
export function nextLockValue(
  lock: KuredLock,
  settings: KuredSettings,
  policy: string,
  want: boolean,
  now: number,
): string | null | undefined {
  const mine = ownedBy(policy);
  const others = lock.filter((e) => !mine(e) && !expired(e, now));
  const ours = lock.filter(mine);
  const fresh = (e: LockEntry) => now - Date.parse(e.created) < settings.ttlMs / 2;
  if (settings.concurrency <= 1) {
    if (!want) return ours.length > 0 ? null : undefined;
    if (others.length > 0) return undefined;
    if (ours.length > 0 && ours.every(fresh)) return undefined;
    return JSON.stringify(entry(nuoHolder(policy), now, settings.ttlMs));
  }
  const free = Math.max(0, settings.concurrency - others.length);
  const live = ours.filter((e) => !expired(e, now));
  if (want ? live.length === free && live.every(fresh) : ours.length === 0) return undefined;
  const holds = want
    ? Array.from({ length: free }, (_, i) => entry(`${nuoHolder(policy)}#${i + 1}`, now, settings.ttlMs))
    : [];
  const kept = lock.filter((e) => !mine(e) && (want ? !expired(e, now) : true));
  return JSON.stringify({ maxOwners: settings.concurrency, locks: [...kept, ...holds] });
}

/**
 * A pool wants its hold while an attempt of its own runs, or while a node of it waits and nothing but
 * kured's lock holds the pool back (not a closed window or a pause: kured may reboot meanwhile).
 */
export function wantsLock(attempts: number, waiting: number, hold: { code: string } | undefined): boolean {
  return attempts > 0 || (waiting > 0 && (hold === undefined || hold.code === 'KuredLock'));
}
