/**
 * The twin of a snapshot: the objects to create on a local control plane so that its scheduler, its
 * controllers and nuo meet the same nodes, workloads and budgets (a pure builder; the harness applies it,
 * src/sim/whatif-twin.ts). What a twin keeps and drops, and why: docs/decisions/0047-what-a-twin-keeps.md.
 */
import { Annotations, JobLabels } from '../api/keys.ts';
import type {
  NodeObject,
  PdbObject,
  PlanObject,
  PodObject,
  StringMap,
  Taint,
  UpdatePolicyObject,
  WorkloadObject,
} from './objects.ts';
import { defined } from './raw.ts';
import { seedsOf, type TwinTemplate } from './seeds.ts';
import type { Snapshot } from './snapshot.ts';
import { type Known, nonEmpty, type TwinSpec, twinLabels, twinPodSpec, twinSelector } from './twin-spec.ts';
import {
  isMirrorPod,
  isTerminal,
  livePods,
  Owners,
  type PodStanding,
  podStandings,
  type WorkloadKey,
  workloadKey,
} from './workloads.ts';

/** A twin Job's pods run this long (KWOK's pod-complete delay): a Job's remaining time is not known. */
export const TWIN_JOB_RUN = '24h';
/** KWOK's pod annotation for how long a completing pod runs (src/sim/job-keys.ts names it too). */
const KWOK_COMPLETE_DELAY = 'pod-complete.stage.kwok.x-k8s.io/delay';

/** Namespaces every cluster has: the twin creates the others. */
const BUILT_IN_NAMESPACES = new Set(['default', 'kube-system', 'kube-public', 'kube-node-lease']);

/**
 * Taints that controllers keep from a node's conditions and cordon (and nuo's own, from its state): the
 * twin's controllers put them back as its nodes stand.
 */
const DERIVED_TAINTS = ['node.kubernetes.io/', 'node.cloudprovider.kubernetes.io/', 'nuo.dev/'];

/** Node annotations a person writes and a twin keeps (nuo's own state starts afresh in a twin). */
const KEPT_NODE_ANNOTATIONS = new Set<string>([Annotations.paused]);

export interface TwinNode {
  name: string;
  labels: StringMap;
  annotations: StringMap;
  taints: Taint[];
  unschedulable: boolean;
  capacity?: StringMap;
  allocatable?: StringMap;
  /** Not Ready in the snapshot: the twin's node is kept NotReady too. */
  notReady: boolean;
}

/** What the twin's pods must look like before it is used: the snapshot's standing, workload by workload. */
export interface TwinExpectation {
  workload: WorkloadKey;
  standing: PodStanding;
}

export interface Twin {
  nodes: TwinNode[];
  /** Manifests, in the order they are created. */
  namespaces: object[];
  priorityClasses: object[];
  updatePolicies: object[];
  plans: object[];
  /**
   * Pods of ReplicaSets, Deployments and StatefulSets on their snapshot nodes, then the ReplicaSets that
   * adopt a Deployment's: created before the workloads, which adopt them (seeds.ts).
   */
  seeds: object[];
  seedReplicaSets: object[];
  workloads: object[];
  pdbs: object[];
  /** Pods no owner of the snapshot recreates: created as they were, on their node. */
  pods: object[];
  expectations: TwinExpectation[];
  /** What was left out or changed, one line each, for the person reading the prediction. */
  notes: string[];
}

function twinNode(n: NodeObject): TwinNode {
  const annotations = Object.fromEntries(
    Object.entries(n.metadata.annotations ?? {}).filter(([k]) => KEPT_NODE_ANNOTATIONS.has(k)),
  );
  const ready = n.status.conditions?.find((c) => c.type === 'Ready');
  return defined({
    name: n.metadata.name,
    labels: n.metadata.labels ?? {},
    annotations,
    taints: (n.spec.taints ?? []).filter((t) => !DERIVED_TAINTS.some((prefix) => t.key.startsWith(prefix))),
    unschedulable: n.spec.unschedulable ?? false,
    capacity: n.status.capacity,
    allocatable: n.status.allocatable,
    // A snapshot without conditions (a hand-written one) means Ready.
    notReady: ready !== undefined && ready.status !== 'True',
  });
}

/** The twin's manifest of a top-level owner and its pod template, or why it has none. */
function twinWorkload(
  w: WorkloadObject,
  standing: PodStanding | undefined,
  known: Known,
): { manifest?: object; template?: TwinTemplate; note?: string; dropped: string[] } {
  const name = workloadKey(w);
  const isPlanJob = w.kind === 'Job' && w.metadata.labels?.[JobLabels.plan] !== undefined;
  if (isPlanJob) return { note: `${name}: a Plan's Job (the twin's operator makes its own)`, dropped: [] };
  if (w.kind === 'Job' && !standing?.pods)
    return { note: `${name}: no pod running (a finished Job holds no node)`, dropped: [] };
  const { spec, dropped } = twinPodSpec(w.spec.template.spec, known);
  const annotations =
    w.kind === 'Job'
      ? { ...w.spec.template.metadata.annotations, [KWOK_COMPLETE_DELAY]: TWIN_JOB_RUN }
      : w.spec.template.metadata.annotations;
  const template: TwinTemplate = {
    metadata: defined({
      labels: twinLabels(w.spec.template.metadata.labels),
      annotations: nonEmpty(annotations),
    }),
    spec: w.kind === 'Job' ? { ...spec, restartPolicy: 'Never' } : spec,
  };
  const metadata = defined({
    name: w.metadata.name,
    namespace: w.metadata.namespace,
    labels: w.metadata.labels,
  });
  const common = { apiVersion: w.apiVersion, kind: w.kind, metadata };
  switch (w.kind) {
    case 'Deployment':
    case 'ReplicaSet':
      return {
        manifest: {
          ...common,
          spec: defined({
            replicas: w.spec.replicas,
            selector: twinSelector(w.spec.selector),
            template,
            minReadySeconds: w.spec.minReadySeconds,
            strategy: w.kind === 'Deployment' ? w.spec.strategy : undefined,
          }),
        },
        template,
        dropped,
      };
    case 'StatefulSet':
      return {
        manifest: {
          ...common,
          spec: defined({
            replicas: w.spec.replicas,
            selector: twinSelector(w.spec.selector),
            template,
            serviceName: w.spec.serviceName,
            // Its pods are made at once: a twin need not wait for each before the next.
            podManagementPolicy: 'Parallel',
            // Its seeds carry no revision of its own: a rolling update would replace them, moving them.
            updateStrategy: { type: 'OnDelete' },
            minReadySeconds: w.spec.minReadySeconds,
          }),
        },
        template,
        dropped,
      };
    case 'DaemonSet':
      return {
        manifest: {
          ...common,
          spec: defined({
            selector: twinSelector(w.spec.selector),
            template,
            updateStrategy: w.spec.updateStrategy,
            minReadySeconds: w.spec.minReadySeconds,
          }),
        },
        template,
        dropped,
      };
    case 'Job': {
      // Only its running pods: what is left of the Job is not known, and they are what holds nodes.
      const running = standing?.pods ?? 0;
      return {
        manifest: {
          ...common,
          spec: defined({
            parallelism: running,
            completions: running,
            backoffLimit: w.spec.backoffLimit,
            template,
          }),
        },
        template,
        dropped,
      };
    }
  }
}

function twinPdb(p: PdbObject): object {
  return {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: defined({ name: p.metadata.name, namespace: p.metadata.namespace, labels: p.metadata.labels }),
    spec: p.spec,
  };
}

function twinPod(p: PodObject, known: Known, nodes: Set<string>): TwinSpec & { manifest: object } {
  const onKnownNode = p.spec.nodeName !== undefined && nodes.has(p.spec.nodeName);
  const { spec, dropped } = twinPodSpec(p.spec, known, onKnownNode ? p.spec.nodeName : undefined);
  if (p.spec.nodeName && !onKnownNode) dropped.push(`nodeName ${p.spec.nodeName} (not in the snapshot)`);
  return {
    manifest: {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: defined({
        name: p.metadata.name,
        namespace: p.metadata.namespace,
        labels: twinLabels(p.metadata.labels),
        annotations: p.metadata.annotations,
      }),
      spec,
    },
    spec,
    dropped,
  };
}

const custom = (o: UpdatePolicyObject | PlanObject) => ({
  apiVersion: o.apiVersion,
  kind: o.kind,
  metadata: defined({ name: o.metadata.name, namespace: o.metadata.namespace, labels: o.metadata.labels }),
  spec: o.spec,
});

/** Builds the twin of a snapshot. */
export function buildTwin(s: Snapshot): Twin {
  const notes: string[] = [];
  const known = {
    priorityClasses: new Set([
      ...s.priorityClasses.map((p) => p.metadata.name),
      'system-node-critical',
      'system-cluster-critical',
    ]),
  };
  const owners = new Owners(s.workloads);
  const standings = podStandings(s);
  const namespaces = new Set(s.namespaces.map((n) => n.metadata.name));
  const usedNamespaces = new Set(
    [...s.pods, ...s.workloads, ...s.pdbs, ...s.plans].map((o) => o.metadata.namespace ?? ''),
  );
  const twinNamespaces = [
    ...s.namespaces
      .filter((n) => !BUILT_IN_NAMESPACES.has(n.metadata.name))
      .map((n) => ({
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: defined({ name: n.metadata.name, labels: n.metadata.labels }),
      })),
    ...[...usedNamespaces]
      .filter((ns) => ns && !namespaces.has(ns) && !BUILT_IN_NAMESPACES.has(ns))
      .sort()
      .map((name) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } })),
  ];
  const nodeNames = new Set(s.nodes.map((n) => n.metadata.name));
  const live = livePods(s);
  const seeds: object[] = [];
  const seedReplicaSets: object[] = [];
  const workloads: object[] = [];
  const expectations: TwinExpectation[] = [];
  const noteDropped = (what: string, dropped: string[]) => {
    if (dropped.length > 0) notes.push(`${what}: left out ${dropped.join(', ')}`);
  };
  for (const w of s.workloads) {
    // A ReplicaSet of a Deployment is made by the twin's Deployment.
    if (owners.topOf(w.metadata)) continue;
    const key = workloadKey(w);
    const standing = standings.get(key);
    const built = twinWorkload(w, standing, known);
    if (built.note) notes.push(built.note);
    noteDropped(key, built.dropped);
    if (!built.manifest || !built.template) continue;
    workloads.push(built.manifest);
    const seeded = built.template ? seedsOf(w, built.template, live.get(key) ?? [], nodeNames) : { pods: [] };
    seeds.push(...seeded.pods);
    if (seeded.replicaSet) seedReplicaSets.push(seeded.replicaSet);
    if (standing) expectations.push({ workload: key, standing });
  }
  const pods: object[] = [];
  for (const p of s.pods) {
    if (isTerminal(p) || owners.topOf(p.metadata)) continue;
    const key = owners.keyOf(p);
    if (isMirrorPod(p)) {
      notes.push(
        `${key}: a static pod (a drain skips it; its requests are not held on its node in the twin)`,
      );
      continue;
    }
    const owner = p.metadata.ownerReferences?.find((o) => o.controller);
    if (owner)
      notes.push(
        `${key}: its owner ${owner.kind} ${owner.name} is not a kind a snapshot holds: created as a bare pod on its node`,
      );
    const built = twinPod(p, known, nodeNames);
    noteDropped(key, built.dropped);
    pods.push(built.manifest);
    const standing = standings.get(key);
    if (standing) expectations.push({ workload: key, standing });
  }
  const systemClasses = new Set(['system-node-critical', 'system-cluster-critical']);
  return {
    nodes: s.nodes.map(twinNode),
    namespaces: twinNamespaces,
    priorityClasses: s.priorityClasses
      .filter((p) => !systemClasses.has(p.metadata.name))
      .map((p) =>
        defined({
          apiVersion: 'scheduling.k8s.io/v1',
          kind: 'PriorityClass',
          metadata: { name: p.metadata.name },
          value: p.value,
          globalDefault: p.globalDefault,
          preemptionPolicy: p.preemptionPolicy,
          description: p.description,
        }),
      ),
    updatePolicies: s.updatePolicies.map(custom),
    plans: s.plans.map(custom),
    seeds,
    seedReplicaSets,
    workloads,
    pdbs: s.pdbs.map(twinPdb),
    pods,
    expectations,
    notes,
  };
}
