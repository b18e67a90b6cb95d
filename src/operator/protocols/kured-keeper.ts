/**
 * kured's lock for the pools whose policy runs beside kured (coexistence.kured): read in the background,
 * kept for the passes (kured's holders count as disrupted; with holdLock a pool admits only while its
 * own hold is in the lock and kured holds none), and, with holdLock, written: nuo's hold taken while the
 * pool wants it (decider.ts says so after each pass), renewed at half its TTL, released after. Writes are
 * conditional on the DaemonSet's resourceVersion, as kured's are: a conflict is read again next round.
 */
import type { AppsV1Api } from '@kubernetes/client-node';
import type { KubeLog } from '../../kube/backoff.ts';
import { sleep } from '../../kube/backoff.ts';
import { describeError } from '../../kube/errors.ts';
import { mergePatch } from '../../kube/patch.ts';
import type { PolicyEntry } from '../policies/policies.ts';
import type { PolicyBlockers } from '../policies/pool-holds.ts';
import {
  type KuredLock,
  type KuredSettings,
  type KuredView,
  nextLockValue,
  parseKuredLock,
  viewLock,
} from './kured-lock.ts';

/** How often the lock is read: one GET of one object; kured itself reads it once per --period. */
export const KURED_LOCK_READ_MS = 2000;

interface Kept {
  key: string;
  settings: KuredSettings;
  stop: AbortController;
  /** Ends the current wait so a round runs now (the pool began to want the lock). */
  poke: () => void;
  read?: { lock: KuredLock } | { error: string };
  /** Undefined until a pass says: a new leader neither takes nor drops a hold before it has decided. */
  want?: boolean;
}

export class KuredKeeper {
  readonly #o: { apps: AppsV1Api; onChange: () => void; log: KubeLog };
  readonly #kept = new Map<string, Kept>();

  constructor(o: { apps: AppsV1Api; onChange: () => void; log: KubeLog }) {
    this.#o = o;
  }

  /** Keeps the lock of these policies (their valid generation's) and lets go of the rest's. */
  sync(policies: readonly PolicyEntry[]): void {
    const wanted = new Map<string, KuredSettings>();
    for (const p of policies)
      if (p.current.ok && p.current.policy.kured) wanted.set(p.name, p.current.policy.kured);
    for (const [name, k] of this.#kept) {
      const s = wanted.get(name);
      if (s && JSON.stringify(s) === k.key) continue;
      this.#stop(name, k);
    }
    for (const [name, s] of wanted) if (!this.#kept.has(name)) this.#keep(name, s);
  }

  /** What the policy's pool sees of kured's lock now; undefined before the first read. */
  view(policy: string): KuredView | { error: string } | undefined {
    const read = this.#kept.get(policy)?.read;
    if (!read || 'error' in read) return read;
    return viewLock(read.lock, policy, Date.now());
  }

  /** The pool wants its hold (an attempt runs or is about to be admitted) or not: written next round. */
  want(policy: string, want: boolean): void {
    const k = this.#kept.get(policy);
    if (!k || k.want === want) return;
    k.want = want;
    k.poke();
  }

  /** Stops every loop (leadership lost, or shutdown); a hold left behind expires with its TTL. */
  stop(): void {
    for (const [name, k] of this.#kept) this.#stop(name, k);
  }

  #stop(name: string, k: Kept): void {
    k.stop.abort();
    this.#kept.delete(name);
  }

  #keep(name: string, settings: KuredSettings): void {
    const k: Kept = {
      key: JSON.stringify(settings),
      settings,
      stop: new AbortController(),
      poke: () => {},
    };
    this.#kept.set(name, k);
    void (async () => {
      while (!k.stop.signal.aborted) {
        await this.#round(name, k);
        if (k.stop.signal.aborted) return;
        const wait = new AbortController();
        k.poke = () => wait.abort();
        const stop = () => wait.abort();
        k.stop.signal.addEventListener('abort', stop, { once: true });
        await sleep(KURED_LOCK_READ_MS, wait.signal);
        k.stop.signal.removeEventListener('abort', stop);
      }
    })();
  }

  /** Reads the lock, writes the pool's hold or release if it is to change, and asks for a pass on news. */
  async #round(name: string, k: Kept): Promise<void> {
    const { namespace, name: ds, annotation, concurrency } = k.settings;
    let read: Kept['read'];
    try {
      const object = await this.#o.apps.readNamespacedDaemonSet({ namespace, name: ds });
      const parsed = parseKuredLock(object.metadata?.annotations?.[annotation], concurrency);
      read = parsed.ok ? { lock: parsed.lock } : { error: `its value is not kured's: ${parsed.error}` };
      const next =
        parsed.ok && k.settings.holdLock && k.want !== undefined
          ? nextLockValue(parsed.lock, k.settings, name, k.want, Date.now())
          : undefined;
      if (next !== undefined && !k.stop.signal.aborted) {
        await this.#o.apps.patchNamespacedDaemonSet(
          {
            namespace,
            name: ds,
            body: {
              metadata: {
                resourceVersion: object.metadata?.resourceVersion,
                annotations: { [annotation]: next },
              },
            },
          },
          mergePatch,
        );
        this.#o.log('info', next === null || !k.want ? "kured's lock released" : "kured's lock held", {
          policy: name,
          daemonSet: `${namespace}/${ds}`,
        });
        const written = parseKuredLock(next ?? undefined, concurrency);
        if (written.ok) read = { lock: written.lock };
      }
    } catch (err) {
      const code = (err as { code?: number }).code;
      // Someone wrote the DaemonSet between the read and the write (kured taking its lock): read again.
      if (code === 409)
        return void this.#o.log('info', "kured's lock changed under nuo's write; reading it again", {
          policy: name,
        });
      read = { error: `${namespace}/${ds} cannot be read or written: ${describeError(err)}` };
    }
    if (k.stop.signal.aborted) return;
    const changed = JSON.stringify(read) !== JSON.stringify(k.read);
    k.read = read;
    if (changed) {
      this.#o.log('info', "kured's lock", {
        policy: name,
        ...(read && 'error' in read ? read : { holders: read?.lock.map((e) => e.nodeID) }),
      });
      this.#o.onChange();
    }
  }
}

/** A pool's blockers' answers with kured's lock beside them (none read yet stays none). */
export function withKured(
  blockers: PolicyBlockers | undefined,
  kured: KuredView | { error: string } | undefined,
): PolicyBlockers | undefined {
  return kured === undefined ? blockers : { ...blockers, kured };
}
