/** KWOK nodes: Node objects that the kwok controller keeps Ready and whose pods it "runs". */
import type { V1Node, V1Taint } from '@kubernetes/client-node';
import { inParallel } from '../../util/parallel.ts';
import { KWOK_NODE } from './component-args.ts';
import { type RawApi, Tally } from './raw-api.ts';

/** The zone of the i-th node of a cluster spread round-robin over `zones` zones: zone-a, zone-b… */
export const zoneName = (i: number, zones: number) => `zone-${String.fromCharCode(97 + (i % zones))}`;

export interface NodeSpec {
  name: string;
  /** Labelled topology.kubernetes.io/zone; no zone label when undefined. */
  zone: string | undefined;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  taints?: V1Taint[];
  unschedulable?: boolean;
  /** Default CAPACITY; allocatable defaults to the capacity. */
  capacity?: Record<string, string>;
  allocatable?: Record<string, string>;
}

/** Room for kubelet's default 110 pods, and enough CPU and memory that pods count, not resources. */
const CAPACITY = { cpu: '32', memory: '256Gi', pods: '110', 'ephemeral-storage': '500Gi' };

export function kwokNode(spec: NodeSpec): V1Node {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: spec.name,
      annotations: { [KWOK_NODE]: 'fake', 'node.alpha.kubernetes.io/ttl': '0', ...spec.annotations },
      labels: {
        'kubernetes.io/arch': 'amd64',
        'kubernetes.io/os': 'linux',
        'kubernetes.io/hostname': spec.name,
        ...(spec.zone === undefined ? {} : { 'topology.kubernetes.io/zone': spec.zone }),
        ...spec.labels,
        // What createNodes waits for the nodes by.
        type: 'kwok',
      },
    },
    ...(spec.taints?.length || spec.unschedulable
      ? {
          spec: {
            ...(spec.taints?.length ? { taints: spec.taints } : {}),
            ...(spec.unschedulable ? { unschedulable: true } : {}),
          },
        }
      : {}),
    status: {
      capacity: spec.capacity ?? CAPACITY,
      allocatable: spec.allocatable ?? spec.capacity ?? CAPACITY,
    },
  };
}

/** Taints the node-lifecycle controller keeps on a node until it has seen the node Ready. */
const NOT_READY_TAINTS = new Set(['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable']);

/** Ready, and the scheduler can see it: no not-ready/unreachable taint left from before it was Ready. */
function isSchedulable(node: V1Node): boolean {
  return isReady(node) && !(node.spec?.taints ?? []).some((t) => NOT_READY_TAINTS.has(t.key));
}

export function isReady(node: V1Node): boolean {
  return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

/**
 * Creates the nodes (`parallel` requests in flight, default 50) and waits until every one of them is
 * Ready, as a watch reports it; returns when the last was created and when the last was Ready. Unless
 * `readyOnly`, Ready also means schedulable: the node-lifecycle controller removes the not-ready taint
 * only after it sees the Ready condition (at thousands of nodes, tens of seconds later), and a pod
 * scheduled meanwhile avoids the node (a test once saw its pods spread over 2 zones of 3). (a poll that lists thousands of nodes every quarter second costs more
 * CPU than the nodes it waits for).
 */
export async function createNodes(
  api: RawApi,
  specs: NodeSpec[],
  {
    timeoutMs = 300_000,
    parallel = 50,
    readyOnly = false,
  }: { timeoutMs?: number; parallel?: number; readyOnly?: boolean } = {},
): Promise<{ createdMs: number; readyMs: number }> {
  const started = performance.now();
  const tally = new Tally<V1Node>(
    api,
    '/api/v1/nodes',
    'labelSelector=type%3Dkwok',
    readyOnly ? isReady : isSchedulable,
  );
  await tally.start();
  try {
    const ready = tally.waitFor(
      specs.map((s) => s.name),
      timeoutMs,
      `${specs.length} nodes to become Ready${readyOnly ? '' : ' and lose their not-ready taints'}`,
    );
    // A failed creation must not leave the wait's rejection unhandled.
    ready.catch(() => {});
    await inParallel(specs, parallel, async (spec) => {
      await api.request('POST', '/api/v1/nodes', kwokNode(spec));
    });
    const createdMs = performance.now() - started;
    await ready;
    return { createdMs, readyMs: performance.now() - started };
  } finally {
    await tally.stop();
  }
}
