/**
 * A web Deployment of real pods for the VM nodes: nuo's own image (the one the VMs already pulled) running
 * a tiny HTTP server that takes `shutdownMs` to end after SIGTERM, Ready once it listens, spread over the
 * VM nodes and kept off KWOK's (whose nodes run no containers).
 */
import { AppsV1Api, type KubeConfig, PolicyV1Api, type V1Deployment } from '@kubernetes/client-node';
import { VM_NODE_LABEL } from './config-disk.ts';

export interface WebOptions {
  name: string;
  image: string;
  replicas: number;
  shutdownMs: number;
}

const script = (shutdownMs: number) =>
  `require('node:http').createServer((req, res) => res.end('ok')).listen(8080);
process.on('SIGTERM', () => setTimeout(() => process.exit(0), ${shutdownMs}));`;

export function vmWebDeployment(o: WebOptions): V1Deployment {
  const labels = { app: o.name };
  return {
    metadata: { name: o.name, labels },
    spec: {
      replicas: o.replicas,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          nodeSelector: { [VM_NODE_LABEL]: 'true' },
          topologySpreadConstraints: [
            {
              maxSkew: 1,
              topologyKey: 'kubernetes.io/hostname',
              whenUnsatisfiable: 'ScheduleAnyway',
              labelSelector: { matchLabels: labels },
            },
          ],
          containers: [
            {
              name: 'main',
              image: o.image,
              command: ['/usr/local/bin/node', '-e', script(o.shutdownMs)],
              readinessProbe: { httpGet: { path: '/', port: 8080 }, periodSeconds: 2 },
              resources: { requests: { cpu: '10m', memory: '32Mi' } },
            },
          ],
          terminationGracePeriodSeconds: 30,
        },
      },
    },
  };
}

/** Creates the web Deployment in `namespace` and a PDB over it that lets one pod go at a time. */
export async function deployVmWeb(kubeconfig: KubeConfig, namespace: string, o: WebOptions): Promise<void> {
  await kubeconfig
    .makeApiClient(AppsV1Api)
    .createNamespacedDeployment({ namespace, body: vmWebDeployment(o) });
  await kubeconfig.makeApiClient(PolicyV1Api).createNamespacedPodDisruptionBudget({
    namespace,
    body: {
      metadata: { name: o.name },
      spec: { maxUnavailable: 1, selector: { matchLabels: { app: o.name } } },
    },
  });
}

/** Every replica of the web Deployment `name` available. */
export async function webAvailable(apps: AppsV1Api, namespace: string, name: string): Promise<boolean> {
  const d = await apps.readNamespacedDeployment({ name, namespace });
  return d.status?.availableReplicas === d.spec?.replicas;
}
