/** Objects as `kubectl get -o yaml` shows them (noise and secrets included), for the whatif tests. */

export const rawNode = (name: string, zone: string, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: {
    name,
    uid: `uid-${name}`,
    resourceVersion: '123',
    creationTimestamp: '2026-01-01T00:00:00Z',
    labels: { 'kubernetes.io/hostname': name, 'topology.kubernetes.io/zone': zone, pool: 'web' },
    annotations: {
      'nuo.dev/paused': 'true',
      'node.alpha.kubernetes.io/ttl': '0',
      'volumes.kubernetes.io/controller-managed-attach-detach': 'true',
    },
    managedFields: [{ manager: 'kubelet', operation: 'Update', fieldsV1: {} }],
  },
  spec: {
    podCIDR: '10.244.1.0/24',
    providerID: 'aws:///eu-west-1a/i-0123',
    taints: [{ key: 'dedicated', value: 'web', effect: 'NoSchedule', timeAdded: '2026-01-01T00:00:00Z' }],
  },
  status: {
    capacity: { cpu: '4', memory: '16Gi', pods: '110' },
    allocatable: { cpu: '3800m', memory: '15Gi', pods: '110' },
    conditions: [
      {
        type: 'Ready',
        status: 'True',
        reason: 'KubeletReady',
        message: 'kubelet is posting ready status',
        lastHeartbeatTime: '2026-01-02T00:00:00Z',
        lastTransitionTime: '2026-01-01T00:00:00Z',
      },
    ],
    nodeInfo: {
      machineID: 'abc',
      systemUUID: 'def',
      bootID: 'boot-1',
      kernelVersion: '6.1.0',
      osImage: 'Flatcar',
      kubeletVersion: 'v1.37.1',
      architecture: 'amd64',
      operatingSystem: 'linux',
      containerRuntimeVersion: 'containerd://2.0',
    },
    addresses: [{ type: 'InternalIP', address: '10.0.0.1' }],
    images: [{ names: ['registry/app:1'], sizeBytes: 1 }],
  },
  ...extra,
});

export const rawPodSpec = () => ({
  serviceAccountName: 'web',
  nodeSelector: { pool: 'web' },
  tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'web', effect: 'NoSchedule' }],
  affinity: {
    podAntiAffinity: {
      preferredDuringSchedulingIgnoredDuringExecution: [
        {
          weight: 1,
          podAffinityTerm: {
            topologyKey: 'kubernetes.io/hostname',
            labelSelector: { matchLabels: { app: 'web' } },
          },
        },
      ],
    },
  },
  topologySpreadConstraints: [
    {
      maxSkew: 1,
      topologyKey: 'topology.kubernetes.io/zone',
      whenUnsatisfiable: 'DoNotSchedule',
      labelSelector: { matchLabels: { app: 'web' } },
    },
  ],
  priorityClassName: 'high',
  priority: 1000,
  terminationGracePeriodSeconds: 30,
  containers: [
    {
      name: 'web',
      image: 'registry.internal/web:1.2.3',
      command: ['/web', '--token=s3cr3t-flag'],
      env: [
        { name: 'DB_PASSWORD', value: 'hunter2' },
        { name: 'API_KEY', valueFrom: { secretKeyRef: { name: 'api', key: 'key' } } },
      ],
      envFrom: [{ secretRef: { name: 'web-env' } }],
      resources: { requests: { cpu: '250m', memory: '256Mi' }, limits: { memory: '512Mi' } },
      ports: [
        { containerPort: 8080, protocol: 'TCP' },
        { containerPort: 9100, hostPort: 9100, protocol: 'TCP' },
      ],
      readinessProbe: { httpGet: { path: '/ready', port: 8080 } },
      volumeMounts: [{ name: 'creds', mountPath: '/creds' }],
    },
  ],
  volumes: [
    { name: 'creds', secret: { secretName: 'web-creds' } },
    { name: 'cache', emptyDir: { sizeLimit: '1Gi' } },
    { name: 'config', configMap: { name: 'web-config' } },
  ],
});

export const rawPod = (
  name: string,
  node: string | undefined,
  o: { ready?: boolean; owner?: { kind: string; name: string }; phase?: string; namespace?: string } = {},
) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    name,
    namespace: o.namespace ?? 'shop',
    uid: `uid-${name}`,
    resourceVersion: '9',
    labels: { app: 'web', 'pod-template-hash': 'abc123' },
    annotations: {
      'nuo.dev/do-not-disrupt': '4h',
      'kubectl.kubernetes.io/last-applied-configuration':
        '{"env":[{"name":"DB_PASSWORD","value":"hunter2"}]}',
    },
    ...(o.owner
      ? {
          ownerReferences: [
            {
              apiVersion: 'apps/v1',
              kind: o.owner.kind,
              name: o.owner.name,
              uid: 'uid-owner',
              controller: true,
              blockOwnerDeletion: true,
            },
          ],
        }
      : {}),
    managedFields: [{ manager: 'kube-controller-manager' }],
  },
  spec: { ...rawPodSpec(), ...(node ? { nodeName: node } : {}) },
  status: {
    phase: o.phase ?? (node ? 'Running' : 'Pending'),
    podIP: '10.244.1.7',
    startTime: '2026-01-02T00:00:00Z',
    conditions: node
      ? [
          { type: 'PodScheduled', status: 'True' },
          {
            type: 'Ready',
            status: o.ready === false ? 'False' : 'True',
            reason: o.ready === false ? 'ContainersNotReady' : undefined,
          },
        ]
      : [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable' }],
    containerStatuses: [{ name: 'web', ready: o.ready !== false, restartCount: 0, image: 'x', imageID: 'y' }],
  },
});

export const rawWorkload = (
  kind: string,
  name: string,
  spec: Record<string, unknown> = {},
  status: Record<string, unknown> = {},
) => ({
  apiVersion: kind === 'Job' ? 'batch/v1' : 'apps/v1',
  kind,
  metadata: { name, namespace: 'shop', uid: `uid-${name}`, generation: 3, labels: { app: name } },
  spec: {
    ...(kind === 'Job' ? {} : { selector: { matchLabels: { app: 'web' } } }),
    template: {
      metadata: { labels: { app: 'web' }, annotations: { 'checksum/config': 'abc' } },
      spec: rawPodSpec(),
    },
    ...spec,
  },
  status: { observedGeneration: 3, ...status },
});

export const rawPdb = (
  name: string,
  spec: Record<string, unknown>,
  status: Record<string, unknown> = {},
) => ({
  apiVersion: 'policy/v1',
  kind: 'PodDisruptionBudget',
  metadata: { name, namespace: 'shop', uid: 'u' },
  spec: { selector: { matchLabels: { app: 'web' } }, ...spec },
  status: {
    currentHealthy: 2,
    desiredHealthy: 2,
    disruptionsAllowed: 0,
    expectedPods: 3,
    observedGeneration: 1,
    ...status,
  },
});
