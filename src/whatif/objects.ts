/**
 * The objects a `nuo whatif` snapshot holds: Kubernetes objects cut down to what scheduling, eviction and
 * nuo's decisions read (keep.ts does the cutting). Each is still a Kubernetes object (apiVersion, kind,
 * metadata, spec, status), so a snapshot file reads like `kubectl get -o yaml` output.
 */
import type {
  V1Affinity,
  V1LabelSelector,
  V1Toleration,
  V1TopologySpreadConstraint,
} from '@kubernetes/client-node';
import type { Plan } from '../api/plan.ts';
import type { UpdatePolicy } from '../api/update-policy.ts';

export type StringMap = Record<string, string>;

/** An owner reference without its uid: within a namespace, kind and name identify the owner. */
export interface OwnerRef {
  apiVersion: string;
  kind: string;
  name: string;
  controller?: boolean;
}

export interface Meta {
  name: string;
  namespace?: string;
  labels?: StringMap;
  annotations?: StringMap;
  ownerReferences?: OwnerRef[];
  creationTimestamp?: string;
}

export interface Condition {
  type: string;
  status: string;
  reason?: string;
  /** Why, in words (the scheduler's reason a pod is not placed). */
  message?: string;
  lastTransitionTime?: string;
}

export interface Taint {
  key: string;
  value?: string;
  effect: string;
}

export interface NodeObject {
  apiVersion: 'v1';
  kind: 'Node';
  metadata: Meta;
  spec: { taints?: Taint[]; unschedulable?: boolean };
  status: {
    capacity?: StringMap;
    allocatable?: StringMap;
    conditions?: Condition[];
    nodeInfo?: StringMap;
  };
}

export interface KeptContainer {
  name: string;
  image?: string;
  resources?: { requests?: StringMap; limits?: StringMap };
  ports?: { containerPort: number; hostPort?: number; protocol?: string; hostIP?: string }[];
  /** An init container's "Always": a sidecar, whose requests count beside the app's. */
  restartPolicy?: string;
}

/**
 * A volume: its name and the kind of its source (`{ name, persistentVolumeClaim: {} }`); an emptyDir
 * keeps its settings, since a drain refuses such pods without --delete-emptydir-data. Other sources'
 * contents are dropped: they name Secrets, ConfigMaps, claims and host paths.
 */
export type KeptVolume = { name: string } & Record<string, unknown>;

/** The parts of a pod's spec the scheduler, a drain and nuo read. */
export interface KeptPodSpec {
  containers: KeptContainer[];
  initContainers?: KeptContainer[];
  nodeName?: string;
  nodeSelector?: StringMap;
  affinity?: V1Affinity;
  tolerations?: V1Toleration[];
  topologySpreadConstraints?: V1TopologySpreadConstraint[];
  priorityClassName?: string;
  priority?: number;
  preemptionPolicy?: string;
  schedulerName?: string;
  terminationGracePeriodSeconds?: number;
  hostNetwork?: boolean;
  overhead?: StringMap;
  volumes?: KeptVolume[];
}

export interface PodTemplate {
  metadata: { labels?: StringMap; annotations?: StringMap };
  spec: KeptPodSpec;
}

export interface PodObject {
  apiVersion: 'v1';
  kind: 'Pod';
  metadata: Meta;
  spec: KeptPodSpec;
  status: { phase?: string; conditions?: Condition[]; startTime?: string };
}

export const WORKLOAD_KINDS = ['Deployment', 'ReplicaSet', 'StatefulSet', 'DaemonSet', 'Job'] as const;
export type WorkloadKind = (typeof WORKLOAD_KINDS)[number];

/** A pod owner: Deployment, ReplicaSet, StatefulSet, DaemonSet or Job. */
export interface WorkloadObject {
  apiVersion: 'apps/v1' | 'batch/v1';
  kind: WorkloadKind;
  metadata: Meta;
  spec: {
    replicas?: number;
    selector?: V1LabelSelector;
    template: PodTemplate;
    minReadySeconds?: number;
    /** Deployment's strategy, StatefulSet's and DaemonSet's updateStrategy, as they were. */
    strategy?: Record<string, unknown>;
    updateStrategy?: Record<string, unknown>;
    serviceName?: string;
    podManagementPolicy?: string;
    parallelism?: number;
    completions?: number;
    backoffLimit?: number;
    completionMode?: string;
  };
  status: Record<string, number>;
}

export interface PdbObject {
  apiVersion: 'policy/v1';
  kind: 'PodDisruptionBudget';
  metadata: Meta;
  spec: {
    minAvailable?: number | string;
    maxUnavailable?: number | string;
    selector?: V1LabelSelector;
    unhealthyPodEvictionPolicy?: string;
  };
  status: {
    currentHealthy?: number;
    desiredHealthy?: number;
    disruptionsAllowed?: number;
    expectedPods?: number;
  };
}

export interface PriorityClassObject {
  apiVersion: 'scheduling.k8s.io/v1';
  kind: 'PriorityClass';
  metadata: Meta;
  value: number;
  globalDefault?: boolean;
  preemptionPolicy?: string;
  description?: string;
}

export interface NamespaceObject {
  apiVersion: 'v1';
  kind: 'Namespace';
  metadata: Meta;
}

export type UpdatePolicyObject = Omit<UpdatePolicy, 'metadata'> & { metadata: Meta };
export type PlanObject = Omit<Plan, 'metadata'> & { metadata: Meta & { namespace: string } };

export type SnapshotObject =
  | NodeObject
  | PodObject
  | WorkloadObject
  | PdbObject
  | PriorityClassObject
  | NamespaceObject
  | UpdatePolicyObject
  | PlanObject;

/** "namespace/name", or "name" for a cluster-scoped object. */
export const objectName = (m: Meta) => (m.namespace ? `${m.namespace}/${m.name}` : m.name);
