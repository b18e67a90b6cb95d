/**
 * Applies a twin (src/whatif/twin.ts) to a local cluster and waits until it stands as its snapshot did:
 * every workload with as many pods, placed as many, and as many of them unready, the snapshot's NotReady
 * nodes NotReady; then checks that each PDB allows as many disruptions. A pod that cannot be placed ends
 * the wait with its scheduler's reason.
 */
import { PLAN, UPDATE_POLICY } from '../api/crd.ts';
import { inParallel } from '../util/parallel.ts';
import { pollUntil } from '../util/poll.ts';
import type { PodObject } from '../whatif/objects.ts';
import { clusterSources, readSnapshotFrom } from '../whatif/read-cluster.ts';
import type { Snapshot } from '../whatif/snapshot.ts';
import type { Twin, TwinNode } from '../whatif/twin.ts';
import { unreadyPicks } from '../whatif/unready.ts';
import { isPodReady, livePods, nodeZones, ZONE_LABEL } from '../whatif/workloads.ts';
import { KWOK_CUSTOM_STATUS, type LocalCluster, startCluster } from './cluster/cluster.ts';
import type { NodeSpec } from './cluster/nodes.ts';
import { STAY_UNREADY_LABEL } from './cluster/pod-readiness.ts';
import { RawApiError } from './cluster/raw-api.ts';
import { installPlanCrd } from './crds.ts';
import { installPolicyCrd } from './policies.ts';

export interface ApplyOptions {
  /** How long the twin's pods may take to stand as the snapshot's (default 5 minutes). */
  timeoutMs?: number;
  log?: (line: string) => void;
}

export interface ApplyResult {
  /** Where the twin differs from its snapshot once it stands (a PDB allowing another number of disruptions). */
  differences: string[];
  /** Pods made unready, "namespace/name". */
  unready: string[];
  ms: number;
}

/** API path of a manifest's collection. */
function collection(o: { apiVersion: string; kind: string; metadata: { namespace?: string } }): string {
  const plural: Record<string, string> = {
    Namespace: 'namespaces',
    PriorityClass: 'priorityclasses',
    Deployment: 'deployments',
    ReplicaSet: 'replicasets',
    StatefulSet: 'statefulsets',
    DaemonSet: 'daemonsets',
    Job: 'jobs',
    PodDisruptionBudget: 'poddisruptionbudgets',
    Pod: 'pods',
    [UPDATE_POLICY.kind]: UPDATE_POLICY.plural,
    [PLAN.kind]: PLAN.plural,
  };
  const resource = plural[o.kind];
  if (!resource) throw new Error(`a twin has no ${o.kind} objects`);
  const base = o.apiVersion === 'v1' ? '/api/v1' : `/apis/${o.apiVersion}`;
  return o.metadata.namespace
    ? `${base}/namespaces/${o.metadata.namespace}/${resource}`
    : `${base}/${resource}`;
}

/** After a read of the twin, wait this many times as long before the next. */
const READ_SHARE_WAIT = 4;

type Manifest = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } };

/** Creates the objects, `parallel` at a time; one that exists already is left as it is. */
async function createAll(cluster: LocalCluster, objects: readonly object[], parallel = 20): Promise<void> {
  await inParallel(objects as Manifest[], parallel, async (o) => {
    try {
      await cluster.raw.request('POST', collection(o), o);
    } catch (err) {
      if (err instanceof RawApiError && err.status === 409) return;
      const name = o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata.name;
      throw new Error(`creating the twin's ${o.kind} ${name} failed: ${(err as Error).message}`);
    }
  });
}

const nodeSpec = (n: TwinNode): NodeSpec => ({
  name: n.name,
  zone: n.labels[ZONE_LABEL],
  labels: n.labels,
  annotations: n.annotations,
  taints: n.taints,
  unschedulable: n.unschedulable,
  ...(n.capacity ? { capacity: n.capacity } : {}),
  ...(n.allocatable ? { allocatable: n.allocatable } : {}),
});

/**
 * Makes nodes NotReady as in the snapshot, once their pods are placed (a scheduler places nothing on a
 * NotReady node, and the snapshot's pods there were placed while it was Ready): KWOK is told to leave
 * their status alone and they report NotReady, so the node-lifecycle controller taints them and marks
 * their pods NotReady, as it does when a kubelet stops.
 */
async function makeNodesNotReady(cluster: LocalCluster, nodes: readonly TwinNode[]): Promise<void> {
  await inParallel(nodes, 20, async (n) => {
    const path = `/api/v1/nodes/${n.name}`;
    await cluster.raw.request('PATCH', path, {
      metadata: { annotations: { [KWOK_CUSTOM_STATUS]: 'custom' } },
    });
    const node = await cluster.raw.request<{ status?: { conditions?: { type: string }[] } }>('GET', path);
    const now = new Date().toISOString();
    const ready = {
      type: 'Ready',
      status: 'False',
      reason: 'KubeletNotReady',
      message: 'NotReady in the snapshot this twin was built from',
      lastHeartbeatTime: now,
      lastTransitionTime: now,
    };
    // A merge patch replaces the whole list: the other conditions are sent as they are.
    const conditions = (node.status?.conditions ?? []).filter((c) => c.type !== 'Ready').concat([ready]);
    await cluster.raw.request('PATCH', `${path}/status`, { status: { conditions } });
  });
}

/** Waits until each namespace's default ServiceAccount exists: pods are refused before it does. */
async function waitServiceAccounts(cluster: LocalCluster, namespaces: readonly string[], timeoutMs: number) {
  for (const ns of namespaces) {
    await pollUntil(
      `the default ServiceAccount of namespace ${ns}`,
      () => cluster.raw.request('GET', `/api/v1/namespaces/${ns}/serviceaccounts/default`).then(() => true),
      { timeoutMs, intervalMs: 200 },
    );
  }
}

/**
 * Waits until the ReplicaSet controller has synced each ReplicaSet made for a Deployment (its
 * observedGeneration): the Deployment controller shares its informer, so it then finds the ReplicaSet
 * when its Deployment comes, rather than making one of its own that would replace the seeds.
 */
async function waitSynced(cluster: LocalCluster, replicaSets: readonly Manifest[], timeoutMs: number) {
  await inParallel(replicaSets, 20, async (rs) => {
    await pollUntil(
      `the twin's ReplicaSet ${rs.metadata.namespace}/${rs.metadata.name} to be synced`,
      async () => {
        const live = await cluster.raw.request<{ status?: { observedGeneration?: number } }>(
          'GET',
          `${collection(rs)}/${rs.metadata.name}`,
        );
        return (live.status?.observedGeneration ?? 0) >= 1 ? true : undefined;
      },
      { timeoutMs, intervalMs: 100 },
    );
  });
}

/** The twin as it stands now: its nodes, owners and pods, read as a snapshot is. */
async function readTwin(cluster: LocalCluster): Promise<Snapshot> {
  const kinds = new Set(['Node', 'Deployment', 'ReplicaSet', 'StatefulSet', 'DaemonSet', 'Job', 'Pod']);
  const sources = clusterSources(cluster.kubeconfig).filter((s) => kinds.has(s.kind));
  return (await readSnapshotFrom(sources)).snapshot;
}

/** Why a workload's pods do not yet stand as in the snapshot; undefined when they do. */
function lag(
  key: string,
  want: { pods: number; scheduled: number },
  have: readonly PodObject[],
): string | undefined {
  const scheduled = have.filter((p) => p.spec.nodeName);
  const ready = scheduled.filter(isPodReady);
  if (have.length === want.pods && scheduled.length >= want.scheduled && ready.length >= scheduled.length)
    return undefined;
  const pending = have.find((p) => !p.spec.nodeName);
  const why = pending?.status.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False');
  return [
    `${key}: ${have.length} of ${want.pods} pods, ${scheduled.length} of ${want.scheduled} placed, ${ready.length} Ready`,
    ...(pending
      ? [
          `; ${pending.metadata.name} is not placed${why?.reason ? ` (${why.reason}: ${why.message ?? 'no message'})` : ''}`,
        ]
      : []),
  ].join('');
}

/**
 * Marks a pod NotReady for good, as a replica failing its readiness probe: the label keeps the harness's
 * readiness keeper off it.
 */
export async function makePodUnready(cluster: LocalCluster, namespace: string, name: string): Promise<void> {
  const path = `/api/v1/namespaces/${namespace}/pods/${name}`;
  await cluster.raw.request('PATCH', path, { metadata: { labels: { [STAY_UNREADY_LABEL]: 'true' } } });
  const pod = await cluster.raw.request<{ status?: { conditions?: { type: string }[] } }>('GET', path);
  const now = new Date().toISOString();
  const notReady = (type: string) => ({
    type,
    status: 'False',
    reason: 'NotReadyInSnapshot',
    lastTransitionTime: now,
  });
  // A merge patch replaces the whole list: the other conditions are sent as they are.
  const conditions = (pod.status?.conditions ?? [])
    .filter((c) => c.type !== 'Ready' && c.type !== 'ContainersReady')
    .concat([notReady('Ready'), notReady('ContainersReady')]);
  await cluster.raw.request('PATCH', `${path}/status`, { status: { conditions } });
}

/**
 * Creates the twin on `cluster` and waits until it stands as its snapshot did. Throws, naming the
 * workloads and their unplaced pods, when it does not within the deadline.
 */
export async function applyTwin(
  cluster: LocalCluster,
  twin: Twin,
  snapshot: Snapshot,
  options: ApplyOptions = {},
): Promise<ApplyResult> {
  const started = performance.now();
  const timeoutMs = options.timeoutMs ?? 300_000;
  const log = options.log ?? (() => {});
  await createAll(cluster, twin.namespaces);
  await createAll(cluster, twin.priorityClasses);
  if (twin.nodes.length > 0) await cluster.addNodes(twin.nodes.map(nodeSpec), { timeoutMs });
  log(`${twin.nodes.length} nodes created`);
  if (twin.updatePolicies.length > 0) await installPolicyCrd(cluster);
  if (twin.plans.length > 0) await installPlanCrd(cluster);
  await createAll(cluster, [...twin.updatePolicies, ...twin.plans]);
  const namespaces = [
    ...new Set([...twin.workloads, ...twin.pods].map((o) => (o as Manifest).metadata.namespace ?? '')),
  ];
  await waitServiceAccounts(cluster, namespaces.filter(Boolean), timeoutMs);
  await createAll(cluster, twin.pdbs);
  await createAll(cluster, twin.seeds);
  await createAll(cluster, twin.seedReplicaSets);
  await waitSynced(cluster, twin.seedReplicaSets as Manifest[], timeoutMs);
  await createAll(cluster, [...twin.workloads, ...twin.pods]);
  log(
    `${twin.seeds.length} pods on their snapshot nodes, ${twin.workloads.length} owners and ${twin.pods.length} bare pods created`,
  );

  let lags: string[] = [];
  const deadline = Date.now() + timeoutMs;
  let nextRead = 0;
  const stood = await pollUntil(
    "the twin's pods to stand as in the snapshot",
    async () => {
      // A read of 10,000 pods costs seconds of CPU the control plane shares: at most a fifth of the time.
      if (Date.now() < nextRead) return undefined;
      const readStart = Date.now();
      const now = await readTwin(cluster);
      nextRead = Date.now() + READ_SHARE_WAIT * (Date.now() - readStart);
      const pods = livePods(now);
      lags = twin.expectations.flatMap((e) => lag(e.workload, e.standing, pods.get(e.workload) ?? []) ?? []);
      return lags.length === 0 ? now : undefined;
    },
    { timeoutMs: Math.max(0, deadline - Date.now()), intervalMs: 500 },
  ).catch((err: Error) => {
    throw new Error(
      `the twin did not stand as its snapshot within ${timeoutMs / 1000} s (${err.message.split(' (last:')[0]}):\n${lags
        .slice(0, 20)
        .map((l) => `  ${l}`)
        .join('\n')}`,
    );
  });

  const zones = nodeZones(stood);
  const sourceZones = nodeZones(snapshot);
  const pods = livePods(stood);
  const unready: string[] = [];
  for (const e of twin.expectations) {
    if (e.standing.unready === 0) continue;
    const placed = (pods.get(e.workload) ?? []).flatMap((p) =>
      p.spec.nodeName
        ? [{ name: p.metadata.name, node: p.spec.nodeName, zone: zones.get(p.spec.nodeName) ?? '' }]
        : [],
    );
    const namespace = e.workload.split('/')[0] ?? '';
    for (const name of unreadyPicks(e.standing, (n) => sourceZones.get(n) ?? '', placed)) {
      await makePodUnready(cluster, namespace, name);
      unready.push(`${namespace}/${name}`);
    }
  }
  const notReady = twin.nodes.filter((n) => n.notReady);
  await makeNodesNotReady(cluster, notReady);
  log(`${unready.length} pods made unready and ${notReady.length} nodes NotReady as in the snapshot`);
  const differences = await pdbDifferences(cluster, snapshot, Math.max(10_000, deadline - Date.now()));
  return { differences, unready, ms: performance.now() - started };
}

/**
 * Waits until every PDB of the snapshot allows as many disruptions in the twin as it did there (the
 * disruption controller writes its status a moment after the pods change); those that do not by the
 * deadline are returned, one line each.
 */
async function pdbDifferences(
  cluster: LocalCluster,
  snapshot: Snapshot,
  timeoutMs: number,
): Promise<string[]> {
  const wanted = snapshot.pdbs.filter((p) => p.status.disruptionsAllowed !== undefined);
  let differences: string[] = [];
  await pollUntil(
    "the twin's PDBs to allow as many disruptions as the snapshot's",
    async () => {
      differences = [];
      for (const p of wanted) {
        const path = `/apis/policy/v1/namespaces/${p.metadata.namespace}/poddisruptionbudgets/${p.metadata.name}`;
        const live = await cluster.raw.request<{ status?: { disruptionsAllowed?: number } }>('GET', path);
        const have = live.status?.disruptionsAllowed;
        if (have !== p.status.disruptionsAllowed)
          differences.push(
            `PDB ${p.metadata.namespace}/${p.metadata.name} allows ${have ?? 'no'} disruptions in the twin, ${p.status.disruptionsAllowed} in the snapshot`,
          );
      }
      return differences.length === 0 ? true : undefined;
    },
    { timeoutMs, intervalMs: 500 },
  ).catch(() => {});
  return differences;
}

/**
 * Starts a local cluster with the twin on it (`nuo whatif twin`), waited until it stands as its
 * snapshot did; the cluster is stopped again when it does not.
 */
export async function startTwin(
  snapshot: Snapshot,
  twin: Twin,
  options: ApplyOptions = {},
): Promise<{ cluster: LocalCluster; result: ApplyResult }> {
  const cluster = await startCluster({ ...(options.log ? { log: options.log } : {}) });
  try {
    return { cluster, result: await applyTwin(cluster, twin, snapshot, options) };
  } catch (err) {
    await cluster.stop();
    throw err;
  }
}
