/**
 * Which workload a pod belongs to, and how a snapshot's pods stand per workload: the unit in which a twin
 * is built, waited for and compared (a twin's ReplicaSets get new names; its Deployments do not).
 */
import type { Meta, OwnerRef, PodObject, WorkloadObject } from './objects.ts';
import type { Snapshot } from './snapshot.ts';

/** "namespace/Kind/name" of a pod's top owner that a snapshot holds, or "namespace/Pod/name". */
export type WorkloadKey = string;

const MAX_DEPTH = 4;

const controllerOf = (m: Meta): OwnerRef | undefined => m.ownerReferences?.find((o) => o.controller);

/** Resolves pods to their top owner through the snapshot's ReplicaSets and Jobs (CronJobs are not kept). */
export class Owners {
  readonly #byKey = new Map<string, WorkloadObject>();

  constructor(workloads: readonly WorkloadObject[]) {
    for (const w of workloads) this.#byKey.set(`${w.metadata.namespace}/${w.kind}/${w.metadata.name}`, w);
  }

  /**
   * The highest controller of an object that the snapshot holds, in its namespace; undefined when it has
   * none. At most MAX_DEPTH owners up: real chains are two long (pod, ReplicaSet, Deployment), and a
   * hostile file's cycle must end.
   */
  topOf(m: Meta): WorkloadObject | undefined {
    let ref = controllerOf(m);
    let top: WorkloadObject | undefined;
    for (let depth = 0; ref && depth < MAX_DEPTH; depth++) {
      const owner = this.#byKey.get(`${m.namespace}/${ref.kind}/${ref.name}`);
      if (!owner) break;
      top = owner;
      ref = controllerOf(owner.metadata);
    }
    return top;
  }

  keyOf(pod: PodObject): WorkloadKey {
    const top = this.topOf(pod.metadata);
    return top ? workloadKey(top) : `${pod.metadata.namespace}/Pod/${pod.metadata.name}`;
  }
}

export const workloadKey = (w: WorkloadObject): WorkloadKey =>
  `${w.metadata.namespace}/${w.kind}/${w.metadata.name}`;

export const isTerminal = (p: PodObject) => p.status.phase === 'Succeeded' || p.status.phase === 'Failed';
export const isPodReady = (p: PodObject) =>
  p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
export const isMirrorPod = (p: PodObject) =>
  p.metadata.annotations?.['kubernetes.io/config.mirror'] !== undefined;

/** How a workload's live pods stand: how many, how many placed, and where; how many Ready. */
export interface PodStanding {
  pods: number;
  scheduled: number;
  ready: number;
  /** Placed but not Ready (the pods that hold a PDB). */
  unready: number;
  /** The zone of each placed pod, sorted ("" for a node without a zone label, "?" for an unknown node). */
  zones: string[];
  /** The nodes of its unready pods. */
  unreadyNodes: string[];
}

export const ZONE_LABEL = 'topology.kubernetes.io/zone';

/** The zone of each node of the snapshot ("" for a node without a zone label). */
export const nodeZones = (s: Snapshot): Map<string, string> =>
  new Map(s.nodes.map((n) => [n.metadata.name, n.metadata.labels?.[ZONE_LABEL] ?? '']));

/** Per workload, its live pods (not finished, not a static pod's mirror). */
export function livePods(s: Snapshot): Map<WorkloadKey, PodObject[]> {
  const owners = new Owners(s.workloads);
  const out = new Map<WorkloadKey, PodObject[]>();
  for (const pod of s.pods) {
    if (isTerminal(pod) || isMirrorPod(pod)) continue;
    const key = owners.keyOf(pod);
    const list = out.get(key);
    if (list) list.push(pod);
    else out.set(key, [pod]);
  }
  return out;
}

/** Per workload, how its live pods stand in the snapshot. */
export function podStandings(s: Snapshot): Map<WorkloadKey, PodStanding> {
  const zoneOf = nodeZones(s);
  const out = new Map<WorkloadKey, PodStanding>();
  for (const [key, pods] of livePods(s)) {
    const st: PodStanding = { pods: 0, scheduled: 0, ready: 0, unready: 0, zones: [], unreadyNodes: [] };
    for (const pod of pods) {
      st.pods++;
      const node = pod.spec.nodeName;
      if (!node) continue;
      st.scheduled++;
      st.zones.push(zoneOf.get(node) ?? '?');
      if (isPodReady(pod)) st.ready++;
      else {
        st.unready++;
        st.unreadyNodes.push(node);
      }
    }
    out.set(key, st);
  }
  for (const st of out.values()) {
    st.zones.sort();
    st.unreadyNodes.sort();
  }
  return out;
}
