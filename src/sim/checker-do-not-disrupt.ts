/**
 * The independent checker's guard of pods annotated `nuo.dev/do-not-disrupt` (checker-gates.ts): it
 * watches them on its own, and a pod that is deleted (or evicted: its deletionTimestamp set) while it
 * still carries the annotation breaks the rule. Whoever ends such a pod on purpose (the chaos runner, as
 * the application's owner) removes the annotation first.
 */
import { CoreV1Api, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { PodAnnotations } from '../api/keys.ts';
import { ResilientInformer } from '../kube/informer.ts';

/** The pods guarded: those `labelSelector` matches in `namespace`. */
export interface DoNotDisruptPods {
  namespace: string;
  labelSelector: string;
}

/** A detail when `pod`, in this event, is going or gone while it still asks not to be disrupted. */
export function disruptedOptOut(type: string, pod: V1Pod): string | undefined {
  const value = pod.metadata?.annotations?.[PodAnnotations.doNotDisrupt];
  if (value === undefined) return undefined;
  if (type !== 'delete' && !pod.metadata?.deletionTimestamp) return undefined;
  return `pod ${pod.metadata?.namespace}/${pod.metadata?.name} on ${pod.spec?.nodeName ?? '(no node)'} was ${type === 'delete' ? 'deleted' : 'deleted (or evicted)'} while it carried ${PodAnnotations.doNotDisrupt}="${value}"`;
}

export class DoNotDisruptGuard {
  readonly breaches: string[] = [];
  readonly #informer: ResilientInformer<V1Pod>;
  /** Pods already reported (by UID): the delete that follows a deletionTimestamp is the same breach. */
  readonly #reported = new Set<string>();

  constructor(kubeconfig: KubeConfig, pods: DoNotDisruptPods) {
    const core = kubeconfig.makeApiClient(CoreV1Api);
    this.#informer = new ResilientInformer<V1Pod>({
      kubeconfig,
      path: `/api/v1/namespaces/${pods.namespace}/pods`,
      list: (o) => core.listNamespacedPod({ ...o, namespace: pods.namespace }),
      labelSelector: pods.labelSelector,
      name: 'checker-do-not-disrupt',
    });
    this.#informer.onEvent((type, pod) => {
      const uid = pod.metadata?.uid ?? '';
      const breach = disruptedOptOut(type, pod);
      if (!breach || this.#reported.has(uid)) return;
      this.#reported.add(uid);
      this.breaches.push(breach);
    });
  }

  start(): Promise<void> {
    return this.#informer.start();
  }

  stop(): Promise<void> {
    return this.#informer.stop();
  }
}
