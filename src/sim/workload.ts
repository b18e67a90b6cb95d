/** Sample workloads for the demo and tests: Deployments spread over zones, guarded by PDBs. */
import {
  AppsV1Api,
  CoreV1Api,
  type KubeConfig,
  PolicyV1Api,
  type V1DaemonSet,
  type V1Deployment,
  type V1Pod,
} from '@kubernetes/client-node';
import { pollUntil } from '../util/poll.ts';
import { VM_NODE_LABEL } from './vm/config-disk.ts';

/** These workloads' images exist in no registry: their pods go to KWOK's nodes, never to a VM node. */
const offVmNodes = {
  nodeAffinity: {
    requiredDuringSchedulingIgnoredDuringExecution: {
      nodeSelectorTerms: [{ matchExpressions: [{ key: VM_NODE_LABEL, operator: 'DoesNotExist' }] }],
    },
  },
};

export function deployment(namespace: string, name: string, replicas: number): V1Deployment {
  const labels = { app: name };
  return {
    metadata: { name, namespace, labels },
    spec: {
      replicas,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          affinity: offVmNodes,
          containers: [
            { name, image: 'registry.example/nuo-demo:1', resources: { requests: { cpu: '10m' } } },
          ],
          topologySpreadConstraints: [
            {
              maxSkew: 1,
              topologyKey: 'topology.kubernetes.io/zone',
              whenUnsatisfiable: 'ScheduleAnyway',
              labelSelector: { matchLabels: labels },
            },
          ],
          terminationGracePeriodSeconds: 1,
        },
      },
    },
  };
}

/** A DaemonSet on every node, tolerating every taint (like a log shipper or the nuo agent itself). */
export function daemonSet(namespace: string, name: string): V1DaemonSet {
  const labels = { app: name };
  return {
    metadata: { name, namespace, labels },
    spec: {
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          affinity: offVmNodes,
          tolerations: [{ operator: 'Exists' }],
          containers: [{ name, image: 'registry.example/nuo-demo-daemon:1' }],
        },
      },
    },
  };
}

/** Waits until the Deployment reports all replicas available. */
export async function waitAvailable(apps: AppsV1Api, namespace: string, name: string, timeoutMs = 120_000) {
  await pollUntil(
    `deployment ${namespace}/${name} to become available`,
    async () => {
      const d = await apps.readNamespacedDeployment({ name, namespace });
      const want = d.spec?.replicas ?? 0;
      return d.status?.availableReplicas === want && d.status?.updatedReplicas === want ? true : undefined;
    },
    { timeoutMs, intervalMs: 200 },
  );
}

/**
 * A pod pinned to `node` that no drain can evict: one replica whose PodDisruptionBudget allows no
 * disruption, in `namespace` (made if need be), available before this returns.
 */
export async function undrainablePod(kc: KubeConfig, namespace: string, node: string): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  await core.createNamespace({ body: { metadata: { name: namespace } } }).catch(() => {});
  await pollUntil(`default ServiceAccount in ${namespace}`, () =>
    core.readNamespacedServiceAccount({ name: 'default', namespace }).then(() => true),
  );
  const pinned = deployment(namespace, 'pinned', 1);
  if (pinned.spec?.template.spec) pinned.spec.template.spec.nodeSelector = { 'kubernetes.io/hostname': node };
  await apps.createNamespacedDeployment({ namespace, body: pinned });
  await kc.makeApiClient(PolicyV1Api).createNamespacedPodDisruptionBudget({
    namespace,
    body: {
      metadata: { name: 'pinned' },
      spec: { maxUnavailable: 0, selector: { matchLabels: { app: 'pinned' } } },
    },
  });
  await waitAvailable(apps, namespace, 'pinned');
}

export async function deployDemoWorkload(
  kubeconfig: KubeConfig,
  { namespace = 'demo', replicasPerApp }: { namespace?: string; replicasPerApp: number },
): Promise<string> {
  const core = kubeconfig.makeApiClient(CoreV1Api);
  const apps = kubeconfig.makeApiClient(AppsV1Api);
  const policy = kubeconfig.makeApiClient(PolicyV1Api);
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  const apps_ = [
    { name: 'web', replicas: replicasPerApp },
    { name: 'api', replicas: Math.max(2, Math.ceil(replicasPerApp / 2)) },
  ];
  for (const app of apps_) {
    await apps.createNamespacedDeployment({ namespace, body: deployment(namespace, app.name, app.replicas) });
    await policy.createNamespacedPodDisruptionBudget({
      namespace,
      body: {
        metadata: { name: app.name, namespace },
        spec: { maxUnavailable: 1, selector: { matchLabels: { app: app.name } } },
      },
    });
  }
  for (const app of apps_) await waitAvailable(apps, namespace, app.name);
  const pods = await core.listNamespacedPod({ namespace });
  const nodes = new Set(pods.items.map((p) => p.spec?.nodeName).filter(Boolean));
  return apps_
    .map((a) => `  deployment ${namespace}/${a.name}: ${a.replicas} replicas available, PDB maxUnavailable=1`)
    .concat(`  ${pods.items.length} pods placed by kube-scheduler on ${nodes.size} nodes`)
    .join('\n');
}

/**
 * Where an app's pods are, node by node in `nodes`' order ("node-0 1 · node-1 0 · node-2 3"), pods on
 * no listed node last: a run's starting placement, which decides how long its PDB-held drains take.
 */
export function placementSummary(nodes: readonly string[], pods: readonly V1Pod[]): string {
  const count = new Map<string, number>(nodes.map((n) => [n, 0]));
  let elsewhere = 0;
  for (const pod of pods) {
    const node = pod.spec?.nodeName;
    if (node !== undefined && count.has(node)) count.set(node, (count.get(node) ?? 0) + 1);
    else elsewhere++;
  }
  const parts = [...count].map(([node, n]) => `${node} ${n}`);
  if (elsewhere > 0) parts.push(`unscheduled or elsewhere ${elsewhere}`);
  return parts.join(' · ');
}
