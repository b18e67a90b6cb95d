/**
 * The chaos runs' cluster: the namespaces and workload the drains must respect, and the clean slate
 * every run starts from.
 */
import { AppsV1Api, CoordinationV1Api, CoreV1Api, PolicyV1Api } from '@kubernetes/client-node';
import { AgentProtocol, Annotations, Labels, protocolKeys, SCALE_DOWN_PROTECTION } from '../api/keys.ts';
import { statusCode } from '../kube/errors.ts';
import { mergePatch, strategicMergePatch } from '../kube/patch.ts';
import { pollUntil } from '../util/poll.ts';
import { CHAOS_NAMESPACE, LEASE, OPERATOR_NAMESPACE, PDB } from './chaos-faults.ts';
import { KWOK_CUSTOM_STATUS, type LocalCluster } from './cluster/cluster.ts';
import { isReady } from './cluster/nodes.ts';
import { daemonSet, deployment, waitAvailable } from './workload.ts';

const LEDGER = 'nuo-slots';
/** FLUO's keys nuo writes in the place of FLUO's operator (a run that ended mid-grant leaves them). */
const FLUO = protocolKeys(AgentProtocol.flatcar);
const ignore =
  (...codes: number[]) =>
  (err: unknown) => {
    if (!codes.includes(statusCode(err) ?? 0)) throw err;
  };

export interface Env {
  core: CoreV1Api;
  apps: AppsV1Api;
  coordination: CoordinationV1Api;
  policy: PolicyV1Api;
}

/** Namespaces and a workload the drains must respect: a Deployment under a PDB, and a DaemonSet. */
export async function prepare(cluster: LocalCluster, names: string[]): Promise<Env> {
  const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
  const apps = cluster.kubeconfig.makeApiClient(AppsV1Api);
  const policy = cluster.kubeconfig.makeApiClient(PolicyV1Api);
  const coordination = cluster.kubeconfig.makeApiClient(CoordinationV1Api);
  const present = new Set((await core.listNode()).items.map((n) => n.metadata?.name ?? ''));
  const missing = names.filter((n) => !present.has(n));
  if (missing.length > 0 || present.size !== names.length) {
    throw new Error(
      `the cluster must have exactly the nodes ${names.join(', ')}; it has ${[...present].join(', ')}`,
    );
  }
  for (const name of [OPERATOR_NAMESPACE, CHAOS_NAMESPACE]) {
    await core.createNamespace({ body: { metadata: { name } } }).catch(ignore(409));
  }
  await pollUntil(`default ServiceAccount in ${CHAOS_NAMESPACE}`, () =>
    core.readNamespacedServiceAccount({ name: 'default', namespace: CHAOS_NAMESPACE }).then(() => true),
  );
  await apps
    .createNamespacedDeployment({
      namespace: CHAOS_NAMESPACE,
      body: deployment(CHAOS_NAMESPACE, 'web', names.length),
    })
    .catch(ignore(409));
  await policy
    .createNamespacedPodDisruptionBudget({
      namespace: CHAOS_NAMESPACE,
      body: {
        metadata: { name: PDB },
        spec: { maxUnavailable: 1, selector: { matchLabels: { app: 'web' } } },
      },
    })
    .catch(ignore(409));
  await apps
    .createNamespacedDaemonSet({ namespace: CHAOS_NAMESPACE, body: daemonSet(CHAOS_NAMESPACE, 'node-agent') })
    .catch(ignore(409));
  await waitAvailable(apps, CHAOS_NAMESPACE, 'web');
  return { core, apps, coordination, policy };
}

/**
 * A clean slate before each run (as rollout-faults.test.ts does): no nuo key, autoscaler protection, hook
 * label or nuo cordon on any node, nor FLUO's grant or hook labels, nor a cordon FLUO's agent made; no ledger, no Lease; and every node Ready under KWOK again — a node that never returned in
 * the last run is still NotReady with its status held by its simulated host.
 */
export async function resetNodes(env: Env): Promise<void> {
  const { core } = env;
  for (const n of (await core.listNode()).items) {
    const name = n.metadata?.name ?? '';
    const a = n.metadata?.annotations ?? {};
    if (a[KWOK_CUSTOM_STATUS] !== undefined || !isReady(n)) {
      const now = new Date().toISOString();
      await core.patchNodeStatus(
        {
          name,
          body: {
            status: {
              conditions: [
                {
                  type: 'Ready',
                  status: 'True',
                  reason: 'KubeletReady',
                  message: 'chaos runner: reset between runs',
                  lastHeartbeatTime: now,
                  lastTransitionTime: now,
                },
              ],
            },
          },
        },
        strategicMergePatch,
      );
    }
    const clear: Record<string, null> = {};
    for (const key of Object.keys(a))
      if (
        key.includes('nuo.dev/') ||
        key === KWOK_CUSTOM_STATUS ||
        key === FLUO.rebootOk ||
        SCALE_DOWN_PROTECTION.includes(key)
      )
        clear[key] = null;
    const uncordon = a[Annotations.cordonedByNuo] === 'true' || a[FLUO.agentMadeUnschedulable] === 'true';
    await core.patchNode(
      {
        name,
        body: {
          metadata: {
            annotations: clear,
            labels: {
              [Labels.beforeReboot]: null,
              [Labels.afterReboot]: null,
              [FLUO.beforeReboot]: null,
              [FLUO.afterReboot]: null,
            },
          },
          ...(uncordon ? { spec: { unschedulable: false } } : {}),
        },
      },
      mergePatch,
    );
  }
  await core.deleteNamespacedConfigMap({ name: LEDGER, namespace: OPERATOR_NAMESPACE }).catch(ignore(404));
  await env.coordination
    .deleteNamespacedLease({ name: LEASE, namespace: OPERATOR_NAMESPACE })
    .catch(ignore(404));
  await pollUntil(
    'every node Ready and schedulable',
    async () => {
      const nodes = (await core.listNode()).items;
      return nodes.every((n) => isReady(n) && !n.spec?.unschedulable) ? true : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 200 },
  );
  await waitAvailable(env.apps, CHAOS_NAMESPACE, 'web');
}
