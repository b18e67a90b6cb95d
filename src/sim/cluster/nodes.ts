/** KWOK nodes: Node objects that the kwok controller keeps Ready and whose pods it "runs". */
import type { CoreV1Api, V1Node } from '@kubernetes/client-node';
import { pollUntil } from '../../util/poll.ts';

export interface NodeSpec {
  name: string;
  zone: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** Room for kubelet's default 110 pods, and enough CPU and memory that pods count, not resources. */
const CAPACITY = { cpu: '32', memory: '256Gi', pods: '110', 'ephemeral-storage': '500Gi' };

export function kwokNode(spec: NodeSpec): V1Node {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: spec.name,
      annotations: { 'kwok.x-k8s.io/node': 'fake', 'node.alpha.kubernetes.io/ttl': '0', ...spec.annotations },
      labels: {
        'kubernetes.io/arch': 'amd64',
        'kubernetes.io/os': 'linux',
        'kubernetes.io/hostname': spec.name,
        'topology.kubernetes.io/zone': spec.zone,
        type: 'kwok',
        ...spec.labels,
      },
    },
    status: { capacity: CAPACITY, allocatable: CAPACITY },
  };
}

export function isReady(node: V1Node): boolean {
  return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

async function inParallel<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++] as T;
      await fn(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** Creates the nodes (50 requests in flight) and waits until every one of them is Ready. */
export async function createNodes(core: CoreV1Api, specs: NodeSpec[], timeoutMs = 300_000): Promise<void> {
  await inParallel(specs, 50, async (spec) => {
    await core.createNode({ body: kwokNode(spec) });
  });
  const wanted = new Set(specs.map((s) => s.name));
  await pollUntil(
    `${specs.length} nodes to become Ready`,
    async () => {
      const list = await core.listNode({ labelSelector: 'type=kwok' });
      const ready = list.items.filter((n) => wanted.has(n.metadata?.name ?? '') && isReady(n)).length;
      return ready === wanted.size ? true : undefined;
    },
    { timeoutMs, intervalMs: 250 },
  );
}
