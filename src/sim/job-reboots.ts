/**
 * Job pods that reboot their node, as the Job of SUC's kernel example runs `reboot` on the host: a pod
 * labelled sim.nuo.dev/job-reboots-host=true reboots its node's simulated host once, when it is first
 * seen running there. The pod itself then completes (or fails) through KWOK's stages.
 */
import { CoreV1Api, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { JobLabels, PREPARE_STAGE } from '../api/keys.ts';
import type { KubeLog } from '../kube/backoff.ts';
import { ResilientInformer } from '../kube/informer.ts';
import { SimJobLabels } from './job-keys.ts';

/** The node whose host `pod` reboots now: it runs there and has not rebooted it yet (`done`: pod UIDs). */
export function hostToReboot(pod: V1Pod, done: ReadonlySet<string>): string | undefined {
  if (pod.metadata?.labels?.[SimJobLabels.rebootsHost] !== 'true') return undefined;
  // The Plan's Job reboots in its upgrade, not in the prepare run before its attempt.
  if (pod.metadata?.labels?.[JobLabels.stage] === PREPARE_STAGE) return undefined;
  if (pod.metadata?.deletionTimestamp || pod.status?.phase !== 'Running') return undefined;
  if (done.has(pod.metadata?.uid ?? '')) return undefined;
  return pod.spec?.nodeName || undefined;
}

export class JobReboots {
  readonly #pods: ResilientInformer<V1Pod>;
  /** UIDs of the pods that rebooted their host (dropped with the pod). */
  readonly #done = new Set<string>();
  readonly #reboot: (node: string, pod: string) => void;

  /** `reboot` reboots the named node's host (the fleet's SimHost), for the pod named `pod`. */
  constructor(kubeconfig: KubeConfig, reboot: (node: string, pod: string) => void, log?: KubeLog) {
    const core = kubeconfig.makeApiClient(CoreV1Api);
    this.#pods = new ResilientInformer<V1Pod>({
      kubeconfig,
      path: '/api/v1/pods',
      list: (o) => core.listPodForAllNamespaces(o),
      labelSelector: `${SimJobLabels.rebootsHost}=true`,
      name: 'job-reboots',
      log,
    });
    this.#reboot = reboot;
  }

  /**
   * Starts watching. Pods already running then rebooted their hosts before this watch began (a fleet
   * starts before its tests' Jobs): they do not again.
   */
  async start(): Promise<void> {
    await this.#pods.start();
    for (const pod of this.#pods.list())
      if (hostToReboot(pod, this.#done)) this.#done.add(pod.metadata?.uid ?? '');
    this.#pods.onEvent((type, pod) => {
      const uid = pod.metadata?.uid ?? '';
      if (type === 'delete') return void this.#done.delete(uid);
      const node = hostToReboot(pod, this.#done);
      if (!node) return;
      this.#done.add(uid);
      this.#reboot(node, `${pod.metadata?.namespace}/${pod.metadata?.name}`);
    });
  }

  async stop(): Promise<void> {
    await this.#pods.stop();
  }
}
