/**
 * A kubelet's node Lease, played for the nodes KWOK drops during chaos runs: KWOK v0.8.0 can stop renewing
 * the node Leases it keeps and never resume, or never make one for a node registered again (seen when a
 * node was deleted and registered again, once during an API server restart: every other node's Lease went
 * stale; once the new node got none). The node lifecycle controller then marks those nodes unreachable
 * for the rest of the campaign, nuo rightly holds, and the run ends unfinished on a simulation artefact.
 * A kubelet keeps its Lease while it runs; so the runner renews a Lease KWOK dropped, and the run's log
 * says which. It renews it in KWOK's name: KWOK plays a node's pods (starts them, finishes their deletion)
 * only while the node's Lease names KWOK, so a Lease held under another name would leave every pod later
 * bound there Pending, and a PDB over it refusing evictions for good. (Restarting KWOK is no cure: a new
 * KWOK makes no Lease for a node whose status a simulated host holds, as host.ts does in every chaos run.)
 */
import {
  type CoordinationV1Api,
  type CoreV1Api,
  type V1Lease,
  V1MicroTime,
  type V1Node,
} from '@kubernetes/client-node';
import { sleep } from '../kube/backoff.ts';
import { KWOK_NODE } from './cluster/component-args.ts';

/**
 * How long a Lease KWOK keeps may go unrenewed before KWOK counts as stalled: three of its renewals (every
 * 10 s), longer than any API server or etcd outage a fault makes.
 */
export const STALE_LEASE_MS = 30_000;
const LOOK_MS = 2000;
const NODE_LEASES = 'kube-node-lease';

/** When each node KWOK plays (by UID) was first seen. */
export type KeptSince = Map<string, number>;

/**
 * The nodes KWOK plays whose Lease it has not renewed (or made) for STALE_LEASE_MS although it has
 * played them at least that long (a node just registered gets a whole period first). Updates `kept`.
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
    if (n.metadata?.annotations?.[KWOK_NODE] === undefined) continue;
    live.add(uid);
    const since = kept.get(uid) ?? now;
    kept.set(uid, since);
    if (now - since >= STALE_LEASE_MS && now - (renewed.get(name) ?? 0) >= STALE_LEASE_MS) stale.push(name);
  }
  for (const uid of kept.keys()) if (!live.has(uid)) kept.delete(uid);
  return stale;
}

const LEASE_SECONDS = 40;

/** KWOK's identity (a host name and a UUID of its process): the holder the Leases of the nodes it plays name. */
export function kwokIdentity(nodes: readonly V1Node[], leases: readonly V1Lease[]): string | undefined {
  const played = new Set(
    nodes.filter((n) => n.metadata?.annotations?.[KWOK_NODE] !== undefined).map((n) => n.metadata?.name),
  );
  return leases.find((l) => played.has(l.metadata?.name) && l.spec?.holderIdentity)?.spec?.holderIdentity;
}

/**
 * The Lease of a node, renewed now by the runner in `holder`'s name: the one read with the runner's spec,
 * or a new one owned by the node (gone with it). MicroTime: the API server takes a Lease's times with
 * microseconds only.
 */
export function renewedLease(node: V1Node, old: V1Lease | undefined, now: Date, holder: string): V1Lease {
  const at = new V1MicroTime(now.getTime());
  const spec = {
    holderIdentity: holder,
    leaseDurationSeconds: LEASE_SECONDS,
    renewTime: at,
    acquireTime: at,
  };
  if (old) return { ...old, spec };
  const name = node.metadata?.name ?? '';
  return {
    metadata: {
      name,
      namespace: NODE_LEASES,
      ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name, uid: node.metadata?.uid ?? '' }],
    },
    spec,
  };
}

/** The runner's part of the node Leases while a campaign runs. */
export interface LeaseSupervision {
  /** Each node whose Lease the runner took over from KWOK (or made), once per node (by UID), in order. */
  takeovers: string[];
  /** Resolves once `signal` aborted and the last look is over. */
  done: Promise<void>;
}

/**
 * Looks at the node Leases every LOOK_MS until `signal` aborts and renews those staleLeases names in
 * KWOK's name, as their kubelets would (KWOK renews them too if it comes back); a look or a write the API
 * server does not answer (a fault) waits for the next look, and so does every write until a Lease has
 * named KWOK (one in another name would take the node's pods from KWOK).
 */
export function superviseKwok(
  api: { core: CoreV1Api; coordination: CoordinationV1Api },
  signal: AbortSignal,
  note: (line: string) => void,
): LeaseSupervision {
  const takeovers: string[] = [];
  const taken = new Set<string>();
  const kept: KeptSince = new Map();
  let identity: string | undefined;
  const look = async () => {
    const read = await Promise.all([
      api.core.listNode(),
      api.coordination.listNamespacedLease({ namespace: NODE_LEASES }),
    ]).catch(() => undefined);
    if (!read) return;
    const [nodes, leases] = [read[0].items, read[1].items];
    identity ??= kwokIdentity(nodes, leases);
    if (identity === undefined) return;
    for (const name of staleLeases(nodes, leases, kept, Date.now())) {
      const node = nodes.find((n) => n.metadata?.name === name);
      const old = leases.find((l) => l.metadata?.name === name);
      if (!node) continue;
      const body = renewedLease(node, old, new Date(), identity);
      const wrote = await (old
        ? api.coordination.replaceNamespacedLease({ name, namespace: NODE_LEASES, body })
        : api.coordination.createNamespacedLease({ namespace: NODE_LEASES, body })
      ).then(
        () => true,
        () => false,
      );
      const uid = node.metadata?.uid ?? '';
      if (!wrote || taken.has(uid)) continue;
      taken.add(uid);
      takeovers.push(name);
      note(
        `KWOK had not renewed the Lease of ${name} for ${STALE_LEASE_MS / 1000} s${old ? '' : ' (it made none)'}: renewed by the runner from now on, as its kubelet would`,
      );
    }
  };
  const done = (async () => {
    while (!signal.aborted) {
      await sleep(LOOK_MS, signal);
      if (!signal.aborted) await look();
    }
  })();
  return { takeovers, done };
}
