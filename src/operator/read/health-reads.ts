/**
 * The health gate's reads: the DaemonSet pods of slot holders whose soak is about to end, read in the
 * background so that no pass, and no node waiting for a freed slot, waits for a pod list. A node's pods
 * are first read shortly before its soak ends and read again as healthRereadDue says, until it leaves
 * the gate; each read that lands asks for a pass (`onRead`).
 */
import type { CoreV1Api, V1Pod } from '@kubernetes/client-node';
import type { KubeLog } from '../../kube/backoff.ts';
import { describeError } from '../../kube/errors.ts';
import { type Health, healthGated, healthRereadDue } from '../decide/health-gate.ts';
import type { Ledger } from '../decide/ledger-view.ts';
import type { NodeView } from '../decide/node-view.ts';
import { PodReads, tooOld } from './pod-reads.ts';

/** Reads of DaemonSet pods in flight. */
const HEALTH_READERS = 16;
/**
 * A reading older than this is not the node's health: a gated node's pods are read again every few
 * seconds (healthRereadDue), so only reads that kept failing leave one this old.
 */
export const HEALTH_MAX_AGE_MS = 15_000;

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
  /** The soak of a node's pool. */
  readonly #soakMs: (node: string) => number;
  readonly #reads: PodReads<Health>;

  constructor(o: { core: CoreV1Api; soakMs: (node: string) => number; log: KubeLog; onRead: () => void }) {
    this.#soakMs = o.soakMs;
    this.#reads = new PodReads({
      core: o.core,
      readers: HEALTH_READERS,
      summarize: daemonSetHealth,
      onError: (node, err) =>
        o.log('warn', 'reading DaemonSet pods at the health gate failed; will retry', {
          node,
          error: describeError(err),
        }),
      onRead: o.onRead,
    });
  }

  /** The health of the gated slot holders, as last read; starts the reads that are due. */
  current(nodes: readonly NodeView[], ledger: Ledger, now: Date): Map<string, Health> {
    const gated = nodes.filter(
      (n) => ledger.slots[n.name] && healthGated(n, { soakMs: this.#soakMs(n.name) }, now),
    );
    this.#reads.keepOnly(new Set(gated.map((n) => n.name)));
    const health = new Map<string, Health>();
    for (const { name } of gated) {
      const read = this.#reads.get(name);
      if (read?.value)
        health.set(
          name,
          tooOld(read, HEALTH_MAX_AGE_MS, performance.now())
            ? {
                daemonSetPodsReady: false,
                detail: `their last reading is older than ${HEALTH_MAX_AGE_MS / 1000} s (the reads since failed; retried)`,
              }
            : read.value,
        );
      const renew =
        read?.running === false &&
        healthRereadDue({
          healthy: read.value?.daemonSetPodsReady === true,
          ageMs: performance.now() - read.at,
        });
      if (!read || renew) this.#reads.read(name);
    }
    return health;
  }

  /** A new leadership reads afresh. */
  clear(): void {
    this.#reads.clear();
  }
}
