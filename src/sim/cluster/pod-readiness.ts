/**
 * What a kubelet's status manager does and KWOK does not: re-assert that a running pod is Ready.
 *
 * The node-lifecycle controller marks pods NotReady (MarkPodsNotReady) when it sees their node stop
 * renewing its Lease, and also when a pod is bound to a node it last saw NotReady: its view of a node
 * is refreshed only every node-monitor-period (5 s), so a node that has just come back from a reboot
 * and been uncordoned still counts as NotReady for a few seconds. A real kubelet repairs the mark on its
 * next status sync. KWOK's pod stages only make Pending pods Ready, so under KWOK the pod stays NotReady
 * for good: every PDB over it then refuses all evictions, and a rollout stalls on a simulation artefact.
 * This keeper plays the kubelet's part for pods on Ready nodes; pods on NotReady nodes are left alone,
 * as a kubelet that is down cannot report either.
 */
import { appendFileSync } from 'node:fs';
import { CoreV1Api, type KubeConfig, type V1Node, type V1Pod } from '@kubernetes/client-node';
import type { KubeLog } from '../../kube/backoff.ts';
import { describeError, statusCode } from '../../kube/errors.ts';
import { ResilientInformer } from '../../kube/informer.ts';
import { strategicMergePatch } from '../../kube/patch.ts';
import { KWOK_NODE } from './component-args.ts';
import { isReady } from './nodes.ts';

/**
 * A pod labelled so ("true") stays NotReady: it plays a replica that fails its readiness probe (a
 * `nuo whatif` twin's copy of a pod that was unready in its snapshot).
 */
export const STAY_UNREADY_LABEL = 'sim.nuo.dev/stay-unready';

/**
 * Whether a kubelet would report this pod Ready again: running, not deleted, marked NotReady, on a Ready
 * KWOK node (a VM node's real kubelet reports for itself), and not playing an unready replica.
 */
export function needsReadyAgain(pod: V1Pod, node: V1Node | undefined): boolean {
  if (pod.metadata?.deletionTimestamp || pod.status?.phase !== 'Running' || !node) return false;
  if (node.metadata?.annotations?.[KWOK_NODE] !== 'fake') return false;
  if (pod.metadata?.labels?.[STAY_UNREADY_LABEL] === 'true') return false;
  const ready = pod.status?.conditions?.find((c) => c.type === 'Ready');
  return ready?.status === 'False' && isReady(node);
}

/** Only what needsReadyAgain reads: thousands of cached pods stay small. */
function slimPod(p: V1Pod): V1Pod {
  const ready = p.status?.conditions?.find((c) => c.type === 'Ready');
  return {
    metadata: {
      name: p.metadata?.name,
      namespace: p.metadata?.namespace,
      resourceVersion: p.metadata?.resourceVersion,
      ...(p.metadata?.labels?.[STAY_UNREADY_LABEL]
        ? { labels: { [STAY_UNREADY_LABEL]: p.metadata.labels[STAY_UNREADY_LABEL] } }
        : {}),
      ...(p.metadata?.deletionTimestamp ? { deletionTimestamp: p.metadata.deletionTimestamp } : {}),
    },
    spec: { nodeName: p.spec?.nodeName, containers: [] },
    status: { phase: p.status?.phase, ...(ready ? { conditions: [ready] } : {}) },
  };
}

function slimNode(n: V1Node): V1Node {
  return {
    metadata: {
      name: n.metadata?.name,
      resourceVersion: n.metadata?.resourceVersion,
      annotations: { [KWOK_NODE]: n.metadata?.annotations?.[KWOK_NODE] ?? '' },
    },
    status: { conditions: (n.status?.conditions ?? []).filter((c) => c.type === 'Ready') },
  };
}

const RETRY_MS = 500;

export class PodReadinessKeeper {
  readonly #core: CoreV1Api;
  readonly #pods: ResilientInformer<V1Pod>;
  readonly #nodes: ResilientInformer<V1Node>;
  readonly #logFile: string;
  /** Pods being patched, so a burst of events for one pod sends one patch. */
  readonly #inFlight = new Set<string>();
  #stopped = false;

  /** `logFile` gets one line per pod made Ready again, beside the components' logs. */
  constructor(kubeconfig: KubeConfig, logFile: string) {
    const core = kubeconfig.makeApiClient(CoreV1Api);
    this.#core = core;
    this.#logFile = logFile;
    const log: KubeLog = (level, msg, fields) => {
      if (level === 'warn' || level === 'error')
        this.#log(`${level} ${msg}${fields ? ` ${JSON.stringify(fields)}` : ''}`);
    };
    this.#pods = new ResilientInformer<V1Pod>({
      kubeconfig,
      path: '/api/v1/pods',
      list: (o) => core.listPodForAllNamespaces(o),
      transform: slimPod,
      name: 'pod-readiness-pods',
      log,
    });
    this.#nodes = new ResilientInformer<V1Node>({
      kubeconfig,
      path: '/api/v1/nodes',
      list: (o) => core.listNode(o),
      transform: slimNode,
      name: 'pod-readiness-nodes',
      log,
    });
    this.#pods.onEvent((type, pod) => {
      if (type !== 'delete') this.#check(pod);
    });
    this.#nodes.onEvent((type, node, old) => {
      if (type === 'delete' || !isReady(node) || (old && isReady(old))) return;
      // The node has just become Ready: its marked pods are due now.
      for (const pod of this.#pods.list()) if (pod.spec?.nodeName === node.metadata?.name) this.#check(pod);
    });
  }

  async start(): Promise<void> {
    await Promise.all([this.#nodes.start(), this.#pods.start()]);
    for (const pod of this.#pods.list()) this.#check(pod);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await Promise.all([this.#pods.stop(), this.#nodes.stop()]);
  }

  #check(pod: V1Pod): void {
    const nodeName = pod.spec?.nodeName;
    const name = pod.metadata?.name ?? '';
    const namespace = pod.metadata?.namespace ?? '';
    const key = `${namespace}/${name}`;
    if (!nodeName || this.#stopped || this.#inFlight.has(key)) return;
    if (!needsReadyAgain(pod, this.#nodes.get(nodeName))) return;
    this.#inFlight.add(key);
    const now = new Date();
    this.#core
      .patchNamespacedPodStatus(
        {
          name,
          namespace,
          body: {
            metadata: { resourceVersion: pod.metadata?.resourceVersion },
            status: { conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: now }] },
          },
        },
        strategicMergePatch,
      )
      .then(
        () => this.#log(`${key} on ${nodeName}: Ready again (a kubelet's status sync)`),
        (err) => {
          if (statusCode(err) === 404) return;
          // 409: the pod changed since the cached read, and that change's event came while this patch was
          // in flight; other errors (an API server restarting): look again at the cached pod soon.
          if (statusCode(err) !== 409) {
            this.#log(`${key} on ${nodeName}: making it Ready again failed: ${describeError(err)}; retrying`);
          }
          setTimeout(() => {
            const latest = this.#pods.get(name, namespace);
            if (latest) this.#check(latest);
          }, RETRY_MS).unref();
        },
      )
      .finally(() => this.#inFlight.delete(key));
  }

  #log(line: string): void {
    appendFileSync(this.#logFile, `${new Date().toISOString()} ${line}\n`);
  }
}
