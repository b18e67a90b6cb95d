/**
 * What a snapshot keeps of each object, and the check that it has what a twin needs: one function per
 * kind, from the object as the API server or a `kubectl get -o yaml` file has it. Kept: names, labels,
 * the scheduling and eviction parts of pod specs, replicas, readiness and PDB status. Dropped: uids,
 * resourceVersions, managedFields, environment values, commands, probes, and volume sources (they can
 * hold or name secrets; docs/decisions/0047-what-a-twin-keeps.md).
 */
import { Kubernetes } from '../api/keys.ts';
import type {
  Condition,
  KeptContainer,
  KeptPodSpec,
  KeptVolume,
  Meta,
  NamespaceObject,
  NodeObject,
  OwnerRef,
  PdbObject,
  PlanObject,
  PodObject,
  PodTemplate,
  PriorityClassObject,
  StringMap,
  Taint,
  UpdatePolicyObject,
  WorkloadKind,
  WorkloadObject,
} from './objects.ts';
import {
  booleanAt,
  defined,
  ItemError,
  intOrStringAt,
  numberAt,
  type Raw,
  rawAt,
  rawListAt,
  requiredRaw,
  requiredString,
  stringAt,
  stringMapAt,
} from './raw.ts';

/**
 * Annotations a snapshot keeps: nuo's own (nuo.dev/do-not-disrupt among them) and the mirror-pod mark a
 * drain reads; others can hold anything (kubectl's last-applied-configuration holds whole env lists).
 */
function keptAnnotation(key: string): boolean {
  return key.startsWith('nuo.dev/') || key === Kubernetes.mirrorPod;
}

function keptAnnotations(a: StringMap | undefined): StringMap | undefined {
  if (!a) return undefined;
  const kept = Object.entries(a).filter(([k]) => keptAnnotation(k));
  return kept.length > 0 ? Object.fromEntries(kept) : undefined;
}

function keepMeta(raw: Raw, namespaced: boolean): Meta {
  const m = requiredRaw(raw, 'metadata', 'metadata');
  const name = requiredString(m, 'name', 'metadata.name');
  const namespace = stringAt(m, 'namespace', 'metadata.namespace');
  if (namespaced && !namespace) throw new ItemError('metadata.namespace is missing');
  const owners = rawListAt(m, 'ownerReferences', 'metadata.ownerReferences')?.map(
    (o, i): OwnerRef =>
      defined({
        apiVersion: requiredString(o, 'apiVersion', `metadata.ownerReferences[${i}].apiVersion`),
        kind: requiredString(o, 'kind', `metadata.ownerReferences[${i}].kind`),
        name: requiredString(o, 'name', `metadata.ownerReferences[${i}].name`),
        controller: booleanAt(o, 'controller', `metadata.ownerReferences[${i}].controller`),
      }),
  );
  const created = m.creationTimestamp;
  return defined({
    name,
    namespace: namespaced ? namespace : undefined,
    labels: stringMapAt(m, 'labels', 'metadata.labels'),
    annotations: keptAnnotations(stringMapAt(m, 'annotations', 'metadata.annotations')),
    ownerReferences: owners && owners.length > 0 ? owners : undefined,
    creationTimestamp: typeof created === 'string' ? created : undefined,
  });
}

function keepConditions(o: Raw, path: string): Condition[] | undefined {
  return rawListAt(o, 'conditions', path)?.map((c, i) =>
    defined({
      type: requiredString(c, 'type', `${path}[${i}].type`),
      status: requiredString(c, 'status', `${path}[${i}].status`),
      reason: stringAt(c, 'reason', `${path}[${i}].reason`),
      message: stringAt(c, 'message', `${path}[${i}].message`),
      lastTransitionTime: typeof c.lastTransitionTime === 'string' ? c.lastTransitionTime : undefined,
    }),
  );
}

/** nodeInfo without the machine's identifiers (machineID, systemUUID). */
const NODE_INFO = [
  'architecture',
  'bootID',
  'containerRuntimeVersion',
  'kernelVersion',
  'kubeProxyVersion',
  'kubeletVersion',
  'operatingSystem',
  'osImage',
];

export function keepNode(raw: Raw): NodeObject {
  const spec = rawAt(raw, 'spec', 'spec') ?? {};
  const status = rawAt(raw, 'status', 'status') ?? {};
  const taints = rawListAt(spec, 'taints', 'spec.taints')?.map(
    (t, i): Taint =>
      defined({
        key: requiredString(t, 'key', `spec.taints[${i}].key`),
        value: stringAt(t, 'value', `spec.taints[${i}].value`),
        effect: requiredString(t, 'effect', `spec.taints[${i}].effect`),
      }),
  );
  const info = stringMapAt(status, 'nodeInfo', 'status.nodeInfo');
  const nodeInfo = info
    ? Object.fromEntries(NODE_INFO.filter((k) => k in info).map((k) => [k, info[k] ?? '']))
    : undefined;
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: keepMeta(raw, false),
    spec: defined({
      taints: taints && taints.length > 0 ? taints : undefined,
      unschedulable: booleanAt(spec, 'unschedulable', 'spec.unschedulable') || undefined,
    }),
    status: defined({
      capacity: stringMapAt(status, 'capacity', 'status.capacity'),
      allocatable: stringMapAt(status, 'allocatable', 'status.allocatable'),
      conditions: keepConditions(status, 'status.conditions'),
      nodeInfo,
    }),
  };
}

function keepContainer(c: Raw, path: string): KeptContainer {
  const resources = rawAt(c, 'resources', `${path}.resources`);
  const ports = rawListAt(c, 'ports', `${path}.ports`)?.map((p, i) => {
    const containerPort = numberAt(p, 'containerPort', `${path}.ports[${i}].containerPort`);
    if (containerPort === undefined) throw new ItemError(`${path}.ports[${i}].containerPort is missing`);
    return defined({
      containerPort,
      hostPort: numberAt(p, 'hostPort', `${path}.ports[${i}].hostPort`),
      protocol: stringAt(p, 'protocol', `${path}.ports[${i}].protocol`),
      hostIP: stringAt(p, 'hostIP', `${path}.ports[${i}].hostIP`),
    });
  });
  const requests = resources && stringMapAt(resources, 'requests', `${path}.resources.requests`);
  const limits = resources && stringMapAt(resources, 'limits', `${path}.resources.limits`);
  return defined({
    name: requiredString(c, 'name', `${path}.name`),
    image: stringAt(c, 'image', `${path}.image`),
    resources: requests || limits ? defined({ requests, limits }) : undefined,
    // Only the ports a scheduler counts: host ports.
    ports: ports?.some((p) => p.hostPort) ? ports.filter((p) => p.hostPort) : undefined,
    restartPolicy: stringAt(c, 'restartPolicy', `${path}.restartPolicy`),
  });
}

function keepVolume(v: Raw, path: string): KeptVolume {
  const name = requiredString(v, 'name', `${path}.name`);
  const source = Object.keys(v).find((k) => k !== 'name');
  if (source === 'emptyDir') {
    const e = rawAt(v, 'emptyDir', `${path}.emptyDir`) ?? {};
    return {
      name,
      emptyDir: defined({ medium: stringAt(e, 'medium', `${path}.emptyDir.medium`), sizeLimit: e.sizeLimit }),
    };
  }
  return source ? { name, [source]: {} } : { name };
}

/** A list field kept as it is (affinity terms, tolerations): the API server checks them when applied. */
function rawList<T>(o: Raw, key: string, path: string): T[] | undefined {
  const list = rawListAt(o, key, path);
  return list && list.length > 0 ? (list as T[]) : undefined;
}

function keepPodSpec(spec: Raw, path: string): KeptPodSpec {
  const containers = rawListAt(spec, 'containers', `${path}.containers`);
  if (!containers || containers.length === 0) throw new ItemError(`${path}.containers is missing`);
  const init = rawListAt(spec, 'initContainers', `${path}.initContainers`);
  const volumes = rawListAt(spec, 'volumes', `${path}.volumes`);
  return defined({
    containers: containers.map((c, i) => keepContainer(c, `${path}.containers[${i}]`)),
    initContainers: init?.length
      ? init.map((c, i) => keepContainer(c, `${path}.initContainers[${i}]`))
      : undefined,
    nodeName: stringAt(spec, 'nodeName', `${path}.nodeName`),
    nodeSelector: stringMapAt(spec, 'nodeSelector', `${path}.nodeSelector`),
    affinity: rawAt(spec, 'affinity', `${path}.affinity`),
    tolerations: rawList(spec, 'tolerations', `${path}.tolerations`),
    topologySpreadConstraints: rawList(
      spec,
      'topologySpreadConstraints',
      `${path}.topologySpreadConstraints`,
    ),
    priorityClassName: stringAt(spec, 'priorityClassName', `${path}.priorityClassName`),
    priority: numberAt(spec, 'priority', `${path}.priority`),
    preemptionPolicy: stringAt(spec, 'preemptionPolicy', `${path}.preemptionPolicy`),
    schedulerName: stringAt(spec, 'schedulerName', `${path}.schedulerName`),
    terminationGracePeriodSeconds: numberAt(
      spec,
      'terminationGracePeriodSeconds',
      `${path}.terminationGracePeriodSeconds`,
    ),
    hostNetwork: booleanAt(spec, 'hostNetwork', `${path}.hostNetwork`) || undefined,
    overhead: stringMapAt(spec, 'overhead', `${path}.overhead`),
    volumes: volumes?.length ? volumes.map((v, i) => keepVolume(v, `${path}.volumes[${i}]`)) : undefined,
  });
}

export function keepPod(raw: Raw): PodObject {
  const status = rawAt(raw, 'status', 'status') ?? {};
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: keepMeta(raw, true),
    spec: keepPodSpec(requiredRaw(raw, 'spec', 'spec'), 'spec'),
    status: defined({
      phase: stringAt(status, 'phase', 'status.phase'),
      conditions: keepConditions(status, 'status.conditions'),
      startTime: typeof status.startTime === 'string' ? status.startTime : undefined,
    }),
  };
}

function keepTemplate(spec: Raw): PodTemplate {
  const template = requiredRaw(spec, 'template', 'spec.template');
  const meta = rawAt(template, 'metadata', 'spec.template.metadata') ?? {};
  return {
    metadata: defined({
      labels: stringMapAt(meta, 'labels', 'spec.template.metadata.labels'),
      annotations: keptAnnotations(stringMapAt(meta, 'annotations', 'spec.template.metadata.annotations')),
    }),
    spec: keepPodSpec(requiredRaw(template, 'spec', 'spec.template.spec'), 'spec.template.spec'),
  };
}

/** The counts in a workload's status (replicas, readyReplicas, numberReady, active, …). */
function statusCounts(raw: Raw): Record<string, number> {
  const status = rawAt(raw, 'status', 'status') ?? {};
  return Object.fromEntries(
    Object.entries(status).filter(
      (e): e is [string, number] => typeof e[1] === 'number' && Number.isInteger(e[1]),
    ),
  );
}

export function keepWorkload(kind: WorkloadKind, raw: Raw): WorkloadObject {
  const spec = requiredRaw(raw, 'spec', 'spec');
  const selector = rawAt(spec, 'selector', 'spec.selector');
  // A Job's selector is generated by the API server unless it says manualSelector.
  if (!selector && kind !== 'Job') throw new ItemError('spec.selector is missing');
  return {
    apiVersion: kind === 'Job' ? 'batch/v1' : 'apps/v1',
    kind,
    metadata: keepMeta(raw, true),
    spec: defined({
      replicas: numberAt(spec, 'replicas', 'spec.replicas'),
      selector,
      template: keepTemplate(spec),
      minReadySeconds: numberAt(spec, 'minReadySeconds', 'spec.minReadySeconds'),
      strategy: rawAt(spec, 'strategy', 'spec.strategy'),
      updateStrategy: rawAt(spec, 'updateStrategy', 'spec.updateStrategy'),
      serviceName: stringAt(spec, 'serviceName', 'spec.serviceName'),
      podManagementPolicy: stringAt(spec, 'podManagementPolicy', 'spec.podManagementPolicy'),
      parallelism: numberAt(spec, 'parallelism', 'spec.parallelism'),
      completions: numberAt(spec, 'completions', 'spec.completions'),
      backoffLimit: numberAt(spec, 'backoffLimit', 'spec.backoffLimit'),
      completionMode: stringAt(spec, 'completionMode', 'spec.completionMode'),
    }),
    status: statusCounts(raw),
  };
}

export function keepPdb(raw: Raw): PdbObject {
  const spec = rawAt(raw, 'spec', 'spec') ?? {};
  const status = rawAt(raw, 'status', 'status') ?? {};
  const minAvailable = intOrStringAt(spec, 'minAvailable', 'spec.minAvailable');
  const maxUnavailable = intOrStringAt(spec, 'maxUnavailable', 'spec.maxUnavailable');
  if (minAvailable !== undefined && maxUnavailable !== undefined)
    throw new ItemError('spec.minAvailable and spec.maxUnavailable are both set (the API allows one)');
  return {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: keepMeta(raw, true),
    spec: defined({
      minAvailable,
      maxUnavailable,
      selector: rawAt(spec, 'selector', 'spec.selector'),
      unhealthyPodEvictionPolicy: stringAt(
        spec,
        'unhealthyPodEvictionPolicy',
        'spec.unhealthyPodEvictionPolicy',
      ),
    }),
    status: defined({
      currentHealthy: numberAt(status, 'currentHealthy', 'status.currentHealthy'),
      desiredHealthy: numberAt(status, 'desiredHealthy', 'status.desiredHealthy'),
      disruptionsAllowed: numberAt(status, 'disruptionsAllowed', 'status.disruptionsAllowed'),
      expectedPods: numberAt(status, 'expectedPods', 'status.expectedPods'),
    }),
  };
}

export function keepPriorityClass(raw: Raw): PriorityClassObject {
  const value = numberAt(raw, 'value', 'value');
  if (value === undefined || !Number.isInteger(value)) throw new ItemError('value is missing (an integer)');
  return defined({
    apiVersion: 'scheduling.k8s.io/v1' as const,
    kind: 'PriorityClass' as const,
    metadata: keepMeta(raw, false),
    value,
    globalDefault: booleanAt(raw, 'globalDefault', 'globalDefault') || undefined,
    preemptionPolicy: stringAt(raw, 'preemptionPolicy', 'preemptionPolicy'),
    description: stringAt(raw, 'description', 'description'),
  });
}

export function keepNamespace(raw: Raw): NamespaceObject {
  return { apiVersion: 'v1', kind: 'Namespace', metadata: keepMeta(raw, false) };
}

export function keepUpdatePolicy(raw: Raw): UpdatePolicyObject {
  const spec = requiredRaw(raw, 'spec', 'spec');
  const status = rawAt(raw, 'status', 'status');
  return defined({
    apiVersion: 'nuo.dev/v1alpha1' as const,
    kind: 'UpdatePolicy' as const,
    metadata: keepMeta(raw, false),
    spec: spec as UpdatePolicyObject['spec'],
    status: status as UpdatePolicyObject['status'],
  });
}

/** A Plan's containers without their environment (values can be secrets, as in a pod template). */
function withoutEnv(container: unknown): unknown {
  if (!container || typeof container !== 'object') return container;
  const { env: _env, envFrom: _envFrom, ...rest } = container as Raw;
  return rest;
}

export function keepPlan(raw: Raw): PlanObject {
  const spec = requiredRaw(raw, 'spec', 'spec');
  const status = rawAt(raw, 'status', 'status');
  const metadata = keepMeta(raw, true);
  const kept = { ...spec };
  for (const key of ['upgrade', 'prepare']) if (key in kept) kept[key] = withoutEnv(kept[key]);
  return defined({
    apiVersion: 'nuo.dev/v1alpha1' as const,
    kind: 'Plan' as const,
    metadata: { ...metadata, namespace: metadata.namespace ?? '' },
    spec: kept as PlanObject['spec'],
    status: status as PlanObject['status'],
  });
}
