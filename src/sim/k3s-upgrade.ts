/**
 * rancher/k3s-upgrade's contract, played for the Jobs that run that image, so a test checks what the
 * image's scripts need of the Jobs nuo builds: `prepare <plan>` (in the prepare Job nuo runs before the
 * attempt) waits until that Plan (in the pod's namespace) applies on no node and every control-plane
 * node's kubelet version, '+' written '-', is SYSTEM_UPGRADE_PLAN_LATEST_VERSION; `upgrade` replaces
 * k3s, whose kubelet then reports the version of the image's tag ('-k3s' read '+k3s', as k3s names its
 * releases). The Plans' pods must stay Running under KWOK until this completes them (a long
 * pod-complete.stage.kwok.x-k8s.io/delay on the Plan).
 */
import { CoreV1Api, CustomObjectsApi, type V1Node, type V1Pod } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, PLAN } from '../api/crd.ts';
import { JobLabels } from '../api/keys.ts';
import type { Plan } from '../api/plan.ts';
import { sleep } from '../kube/backoff.ts';
import { mergePatch } from '../kube/patch.ts';
import { mungeVersion } from '../plan/version.ts';
import type { LocalCluster } from './cluster/cluster.ts';

const IMAGE = 'rancher/k3s-upgrade:';
const CONTROL_PLANE = 'node-role.kubernetes.io/control-plane';
/** The image's scripts poll every 5 s; the test double polls faster, to the same effect. */
const POLL_MS = 500;

/** The kubelet version k3s reports once the image tagged `image` installed it (undefined: not k3s-upgrade). */
export function kubeletVersionOf(image: string): string | undefined {
  if (!image.startsWith(IMAGE)) return undefined;
  const tag = image.slice(IMAGE.length);
  const at = tag.lastIndexOf('-k3s');
  return at < 0 ? tag : `${tag.slice(0, at)}+${tag.slice(at + 1)}`;
}

/** The value the container sees of a variable: the last of that name wins, as the kubelet sets them. */
export const envOf = (pod: V1Pod, container: string, name: string): string | undefined =>
  [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]
    .find((c) => c.name === container)
    ?.env?.findLast((e) => e.name === name)?.value;

/** The pod's `prepare` container: the only one of a prepare Job's pod, or an init container. */
const prepareOf = (pod: V1Pod) =>
  [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].find((c) => c.name === 'prepare');

/** What `prepare <plan>` still waits for (undefined: nothing, it exits 0). */
export function prepareWaits(
  pod: V1Pod,
  plan: Plan | undefined,
  nodes: readonly V1Node[],
): string | undefined {
  const args = prepareOf(pod)?.args ?? [];
  if (args[0] !== 'prepare') return undefined;
  if (!plan) return `Plan ${args[1]} does not exist`;
  if ((plan.status?.applying ?? []).length > 0) return `Plan ${args[1]} applies on ${plan.status?.applying}`;
  const servers = nodes.filter((n) => n.metadata?.labels?.[CONTROL_PLANE] !== undefined);
  const versions = [...new Set(servers.map((n) => mungeVersion(n.status?.nodeInfo?.kubeletVersion ?? '')))];
  const want = envOf(pod, 'prepare', 'SYSTEM_UPGRADE_PLAN_LATEST_VERSION');
  if (versions.length === 1 && versions[0] === want) return undefined;
  return `control-plane nodes at ${versions.sort().join(', ')}, not ${want}`;
}

/** A pod's prepare as it ended: the version it was given and the servers' versions it compared. */
export interface Prepared {
  node: string;
  given: string | undefined;
  servers: string[];
}

export class K3sUpgradeImage {
  readonly #core: CoreV1Api;
  readonly #custom: CustomObjectsApi;
  readonly #stop = new AbortController();
  #loop: Promise<void> | undefined;
  /** Pods completed, by UID. */
  readonly #done = new Set<string>();
  /** What each agent's prepare saw when its wait ended. */
  readonly prepared: Prepared[] = [];
  /** Why each waiting pod waits now, by pod name. */
  readonly waiting = new Map<string, string>();

  readonly namespace: string;

  constructor(cluster: LocalCluster, namespace: string) {
    this.namespace = namespace;
    this.#core = cluster.kubeconfig.makeApiClient(CoreV1Api);
    this.#custom = cluster.kubeconfig.makeApiClient(CustomObjectsApi);
  }

  start(): void {
    this.#loop = this.#run();
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#loop;
  }

  /** The last API error, kept for a failing test's message; the next round tries again. */
  lastError: string | undefined;

  async #run(): Promise<void> {
    while (!this.#stop.signal.aborted) {
      await this.#step().catch((err: Error) => {
        this.lastError = err.message;
      });
      await sleep(POLL_MS, this.#stop.signal);
    }
  }

  async #step(): Promise<void> {
    const pods = await this.#core.listNamespacedPod({
      namespace: this.namespace,
      labelSelector: JobLabels.plan,
    });
    for (const pod of pods.items) {
      const uid = pod.metadata?.uid ?? '';
      const main = pod.spec?.containers[0];
      const version = kubeletVersionOf(main?.image ?? '');
      const node = pod.spec?.nodeName;
      if (!version || !node || pod.status?.phase !== 'Running' || this.#done.has(uid)) continue;
      const nodes = (await this.#core.listNode()).items;
      const planName = prepareOf(pod)?.args?.[1];
      const plan = planName ? await this.#plan(planName) : undefined;
      const waits = prepareWaits(pod, plan, nodes);
      if (waits) {
        this.waiting.set(pod.metadata?.name ?? '', waits);
        continue;
      }
      this.waiting.delete(pod.metadata?.name ?? '');
      if (planName)
        this.prepared.push({
          node,
          given: envOf(pod, 'prepare', 'SYSTEM_UPGRADE_PLAN_LATEST_VERSION'),
          servers: nodes
            .filter((n) => n.metadata?.labels?.[CONTROL_PLANE] !== undefined)
            .map((n) => n.status?.nodeInfo?.kubeletVersion ?? ''),
        });
      // The upgrade container installs k3s; a prepare alone installs nothing.
      if (main?.name === 'upgrade')
        await this.#core.patchNodeStatus(
          { name: node, body: { status: { nodeInfo: { kubeletVersion: version } } } },
          mergePatch,
        );
      await this.#complete(pod);
      this.#done.add(uid);
    }
  }

  async #plan(name: string): Promise<Plan | undefined> {
    const ref = { group: API_GROUP, version: API_VERSION, plural: PLAN.plural, namespace: this.namespace };
    return (await this.#custom.getNamespacedCustomObject({ ...ref, name }).catch(() => undefined)) as
      | Plan
      | undefined;
  }

  /** The pod's containers exit 0: the Job succeeds. */
  async #complete(pod: V1Pod): Promise<void> {
    const now = new Date().toISOString();
    const terminated = (name: string, image: string) => ({
      name,
      image,
      imageID: '',
      ready: false,
      restartCount: 0,
      state: { terminated: { exitCode: 0, reason: 'Completed', startedAt: now, finishedAt: now } },
    });
    await this.#core.patchNamespacedPodStatus(
      {
        name: pod.metadata?.name ?? '',
        namespace: this.namespace,
        body: {
          status: {
            phase: 'Succeeded',
            initContainerStatuses: (pod.spec?.initContainers ?? []).map((c) =>
              terminated(c.name, c.image ?? ''),
            ),
            containerStatuses: (pod.spec?.containers ?? []).map((c) => terminated(c.name, c.image ?? '')),
          },
        },
      },
      mergePatch,
    );
  }
}
