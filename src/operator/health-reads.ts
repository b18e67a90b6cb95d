/**
 * The health gate's reads: the DaemonSet pods of slot holders whose soak is about to end, read in the
 * background so that no pass, and no node waiting for a freed slot, waits for a pod list. A node's pods
 * are first read shortly before its soak ends and read again as healthRereadDue says, until it leaves
 * the gate; each read that lands asks for a pass (`onRead`).
 */
import type { CoreV1Api, V1Pod } from '@kubernetes/client-node';
import { podsOnNode } from '../drain/evict.ts';
import type { KubeLog } from '../kube/backoff.ts';
import { describeError } from '../kube/errors.ts';
import { Limiter } from '../util/parallel.ts';
import { type Health, healthGated, healthRereadDue } from './health-gate.ts';
import type { Ledger } from './ledger.ts';
import type { NodeView } from './node-view.ts';

/** Reads of DaemonSet pods in flight. */
const HEALTH_READERS = 16;

/** What the health gate makes of a node's pods: its DaemonSet pods, not being deleted, all Ready. */
function daemonSetHealth(pods: readonly V1Pod[]): Health {
  const ds = pods.filter(
    (p) =>
      p.metadata?.ownerReferences?.some((r) => r.controller && r.kind === 'DaemonSet') &&
      !p.metadata?.deletionTimestamp,
  );
  const notReady = ds.filter(
    (p) => !p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
  );
  if (notReady.length === 0) return { daemonSetPodsReady: true, detail: `${ds.length} ready` };
  const waiting = notReady.map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`).join(', ');
  return {
    daemonSetPodsReady: false,
    detail: `${ds.length - notReady.length}/${ds.length} ready (waiting for ${waiting})`,
  };
}

export class HealthReads {
  readonly #core: CoreV1Api;
  /** The soak of a node's pool. */
  readonly #soakMs: (node: string) => number;
  readonly #log: KubeLog;
  readonly #onRead: () => void;
  readonly #reads = new Map<string, { health?: Health; at: number; running: boolean }>();
  readonly #readers = new Limiter(HEALTH_READERS);

  constructor(o: { core: CoreV1Api; soakMs: (node: string) => number; log: KubeLog; onRead: () => void }) {
    this.#core = o.core;
    this.#soakMs = o.soakMs;
    this.#log = o.log;
    this.#onRead = o.onRead;
  }

  /** The health of the gated slot holders, as last read; starts the reads that are due. */
  current(nodes: readonly NodeView[], ledger: Ledger, now: Date): Map<string, Health> {
    const gated = nodes.filter(
      (n) => ledger.slots[n.name] && healthGated(n, { soakMs: this.#soakMs(n.name) }, now),
    );
    const names = new Set(gated.map((n) => n.name));
    for (const name of this.#reads.keys()) if (!names.has(name)) this.#reads.delete(name);
    const health = new Map<string, Health>();
    for (const { name } of gated) {
      const read = this.#reads.get(name);
      if (read?.health) health.set(name, read.health);
      const renew =
        read?.running === false &&
        healthRereadDue({
          healthy: read.health?.daemonSetPodsReady === true,
          ageMs: performance.now() - read.at,
        });
      if (!read || renew) this.#read(name);
    }
    return health;
  }

  /** A new leadership reads afresh. */
  clear(): void {
    this.#reads.clear();
  }

  #read(name: string): void {
    const read = this.#reads.get(name) ?? { at: 0, running: false };
    read.running = true;
    this.#reads.set(name, read);
    void this.#readers
      .run(async () => {
        read.health = daemonSetHealth(await podsOnNode(this.#core, name));
      })
      .catch((err) =>
        this.#log('warn', 'reading DaemonSet pods at the health gate failed; will retry', {
          node: name,
          error: describeError(err),
        }),
      )
      .finally(() => {
        read.running = false;
        read.at = performance.now();
        this.#onRead();
      });
  }
}
