/**
 * What a node supervisor does for a hung kubelet, played for KWOK during chaos runs: KWOK v0.8.0 can stop
 * renewing the node Leases it keeps and never resume (seen when a node was deleted and registered again
 * while the API server restarted: every other node's Lease went stale, and the node lifecycle controller
 * marked those nodes unreachable for the rest of the campaign). nuo then rightly holds, and the run ends
 * unfinished on a simulation artefact. A kubelet's Lease does not stall so; the runner restarts KWOK
 * when one does, and the run's log says so.
 */
import type { CoordinationV1Api, CoreV1Api, V1Lease, V1Node } from '@kubernetes/client-node';
import { sleep } from '../kube/backoff.ts';
import type { LocalCluster } from './cluster/cluster.ts';
import { KWOK_CUSTOM_STATUS } from './cluster/component-args.ts';

/**
 * How long a Lease KWOK keeps may go unrenewed before KWOK counts as stalled: three of its renewals (every
 * 10 s), longer than any API server or etcd outage a fault makes.
 */
export const STALE_LEASE_MS = 30_000;
const LOOK_MS = 2000;

/** When each node (by UID) was first seen with its status kept by KWOK, not by its simulated host. */
export type KeptSince = Map<string, number>;

/**
 * The nodes whose Lease KWOK has not renewed for STALE_LEASE_MS although it has kept their status at
 * least that long (a node whose host holds its status, mid-reboot or never returning, is its host's; a
 * node just registered or just back from its host gets a whole period first). Updates `kept`.
 */
export function staleLeases(
  nodes: readonly V1Node[],
  leases: readonly V1Lease[],
  kept: KeptSince,
  now: number,
): string[] {
  const renewed = new Map(
    leases.map((l) => [l.metadata?.name ?? '', new Date(l.spec?.renewTime ?? 0).getTime()] as const),
  );
  const live = new Set<string>();
  const stale: string[] = [];
  for (const n of nodes) {
    const uid = n.metadata?.uid ?? '';
    const name = n.metadata?.name ?? '';
    if (n.metadata?.annotations?.[KWOK_CUSTOM_STATUS] !== undefined) continue;
    live.add(uid);
    const since = kept.get(uid) ?? now;
    kept.set(uid, since);
    if (now - since >= STALE_LEASE_MS && now - (renewed.get(name) ?? 0) >= STALE_LEASE_MS) stale.push(name);
  }
  for (const uid of kept.keys()) if (!live.has(uid)) kept.delete(uid);
  return stale;
}

/**
 * Looks at the node Leases every LOOK_MS until `signal` aborts and restarts KWOK when staleLeases names
 * any; a look the API server does not answer (a fault) is skipped. Resolves with the restarts made.
 */
export async function superviseKwok(
  cluster: LocalCluster,
  api: { core: CoreV1Api; coordination: CoordinationV1Api },
  signal: AbortSignal,
  note: (line: string) => void,
): Promise<number> {
  const kept: KeptSince = new Map();
  let restarts = 0;
  while (!signal.aborted) {
    await sleep(LOOK_MS, signal);
    if (signal.aborted) break;
    const read = await Promise.all([
      api.core.listNode(),
      api.coordination.listNamespacedLease({ namespace: 'kube-node-lease' }),
    ]).catch(() => undefined);
    if (!read) continue;
    const stale = staleLeases(read[0].items, read[1].items, kept, Date.now());
    if (stale.length === 0) continue;
    await cluster.restart('kwok');
    restarts++;
    kept.clear();
    note(
      `KWOK stopped renewing the Leases of ${stale.join(', ')} (${STALE_LEASE_MS / 1000} s and more): restarted, as a supervisor restarts a hung kubelet`,
    );
  }
  return restarts;
}
