/**
 * Watches a namespace's pods and the nodes' phases during a rollout, for moves.ts: which pods were bound
 * at the start, where each pod placed later landed and when, which were evicted, and when the first node
 * came back from its attempt.
 */
import { CoreV1Api, type KubeConfig, type V1Node, type V1Pod } from '@kubernetes/client-node';
import { Annotations } from '../api/keys.ts';
import { Phase, SLOT_PHASES } from '../api/phases.ts';
import { ResilientInformer } from '../kube/informer.ts';
import { type Moves, moves, type PodSeen } from './moves.ts';

const inAttempt = (node: V1Node) =>
  (SLOT_PHASES as ReadonlySet<string>).has(node.metadata?.annotations?.[Annotations.state] ?? Phase.idle);

export class MovesObserver {
  readonly #pods: ResilientInformer<V1Pod>;
  readonly #nodes: ResilientInformer<V1Node>;
  readonly #seen = new Map<string, PodSeen>();
  #started = false;
  #firstUpdatedAt: number | undefined;

  constructor(kubeconfig: KubeConfig, namespace: string) {
    const core = kubeconfig.makeApiClient(CoreV1Api);
    this.#pods = new ResilientInformer<V1Pod>({
      kubeconfig,
      path: `/api/v1/namespaces/${namespace}/pods`,
      list: (o) => core.listNamespacedPod({ namespace, ...o }),
      name: 'moves-pods',
    });
    this.#nodes = new ResilientInformer<V1Node>({
      kubeconfig,
      path: '/api/v1/nodes',
      list: (o) => core.listNode(o),
      name: 'moves-nodes',
    });
    this.#pods.onEvent((type, pod) => this.#pod(type === 'delete', pod));
    this.#nodes.onEvent((_type, node, old) => {
      if (this.#started && this.#firstUpdatedAt === undefined && old && inAttempt(old) && !inAttempt(node))
        this.#firstUpdatedAt = performance.now();
    });
  }

  /** Lists both; the pods bound now are the rollout's P (call before the first node is staged). */
  async start(): Promise<void> {
    await Promise.all([this.#pods.start(), this.#nodes.start()]);
    this.#started = true;
  }

  #pod(deleted: boolean, pod: V1Pod): void {
    const name = pod.metadata?.name ?? '';
    const node = pod.spec?.nodeName;
    if (!node || pod.metadata?.ownerReferences?.some((o) => o.kind === 'DaemonSet')) return;
    let seen = this.#seen.get(name);
    if (!seen) {
      seen = this.#started ? { node, boundAt: performance.now() } : { node };
      this.#seen.set(name, seen);
    }
    if (seen.evictedAt === undefined && (deleted || pod.metadata?.deletionTimestamp))
      seen.evictedAt = performance.now();
  }

  /** The figures so far, over `nodes` (the nodes the rollout drains) and budget `k`. */
  moves(nodes: readonly string[], k: number): Moves {
    return moves([...this.#seen.values()], nodes, k, this.#firstUpdatedAt);
  }

  async stop(): Promise<void> {
    await Promise.all([this.#pods.stop(), this.#nodes.stop()]);
  }
}
