/**
 * A twin's pod specs, labels and selectors: the snapshot's, less what a twin cannot run or a controller
 * writes anew (pure helpers of the twin's builders, twin.ts and seeds.ts).
 */
import type { V1LabelSelector } from '@kubernetes/client-node';
import type { KeptContainer, KeptPodSpec, StringMap } from './objects.ts';
import { defined } from './raw.ts';

/** The image of every twin container: KWOK runs no container, and the source's registries are not reached. */
export const TWIN_IMAGE = 'registry.example/nuo-whatif-twin:1';

/** Labels the API server or a controller writes on pods and templates: a twin's own get new values. */
const GENERATED_LABELS = new Set([
  'pod-template-hash',
  'controller-revision-hash',
  'statefulset.kubernetes.io/pod-name',
  'apps.kubernetes.io/pod-index',
  'controller-uid',
  'job-name',
  'batch.kubernetes.io/controller-uid',
  'batch.kubernetes.io/job-name',
  'batch.kubernetes.io/job-completion-index',
]);

/** The priority classes a twin has: a pod naming another loses its class (and says so). */
export interface Known {
  priorityClasses: Set<string>;
}

export const nonEmpty = <T extends object>(o: T | undefined): T | undefined =>
  o && Object.keys(o).length > 0 ? o : undefined;

export function twinLabels(labels: StringMap | undefined): StringMap | undefined {
  if (!labels) return undefined;
  return nonEmpty(Object.fromEntries(Object.entries(labels).filter(([k]) => !GENERATED_LABELS.has(k))));
}

/** A selector without the generated labels (a ReplicaSet's pod-template-hash): the twin's differ. */
export function twinSelector(selector: V1LabelSelector | undefined): V1LabelSelector | undefined {
  if (!selector) return undefined;
  return defined({
    matchLabels: twinLabels(selector.matchLabels),
    matchExpressions: selector.matchExpressions?.filter((e) => !GENERATED_LABELS.has(e.key)),
  });
}

function twinContainer(c: KeptContainer): object {
  return defined({
    name: c.name,
    image: TWIN_IMAGE,
    resources: c.resources,
    ports: c.ports,
    restartPolicy: c.restartPolicy,
  });
}

/** Why a pod spec could not be kept whole in a twin, and the spec it gets. */
export interface TwinSpec {
  spec: object;
  dropped: string[];
}

/** A pod spec for the twin; `nodeName` binds it to that node (a bare pod's, kept as it was). */
export function twinPodSpec(spec: KeptPodSpec, known: Known, nodeName?: string): TwinSpec {
  const dropped: string[] = [];
  const unknownClass =
    spec.priorityClassName !== undefined && !known.priorityClasses.has(spec.priorityClassName);
  if (unknownClass) dropped.push(`priorityClassName ${spec.priorityClassName} (not in the snapshot)`);
  const otherScheduler = spec.schedulerName !== undefined && spec.schedulerName !== 'default-scheduler';
  if (otherScheduler) dropped.push(`schedulerName ${spec.schedulerName} (the twin runs kube-scheduler only)`);
  if (spec.overhead) dropped.push('overhead (its RuntimeClass is not in a snapshot)');
  const volumes = spec.volumes?.filter((v) => 'emptyDir' in v);
  return {
    spec: defined({
      containers: spec.containers.map(twinContainer),
      initContainers: spec.initContainers?.map(twinContainer),
      nodeName,
      nodeSelector: spec.nodeSelector,
      affinity: spec.affinity,
      tolerations: spec.tolerations,
      topologySpreadConstraints: spec.topologySpreadConstraints,
      priorityClassName: unknownClass ? undefined : spec.priorityClassName,
      terminationGracePeriodSeconds: spec.terminationGracePeriodSeconds,
      hostNetwork: spec.hostNetwork,
      volumes: volumes?.length ? volumes : undefined,
      automountServiceAccountToken: false,
    }),
    dropped,
  };
}
