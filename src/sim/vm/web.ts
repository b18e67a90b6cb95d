/**
 * A web Deployment of real pods for the VM nodes: nuo's own image (the one the VMs already pulled) running
 * a tiny HTTP server that takes `shutdownMs` to end after SIGTERM, Ready once it listens, spread over the
 * VM nodes and kept off KWOK's (whose nodes run no containers).
 */
import type { V1Deployment } from '@kubernetes/client-node';
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
