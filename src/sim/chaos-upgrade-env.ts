/**
 * The chaos runs' upgrade Plans on the cluster: the CRD and namespace before the first run, and after
 * each run its Plan deleted with its Jobs and their pods, so the next run (or a campaign without Plans on
 * the same cluster) starts with no Plan and no Job pod on any node.
 */
import { BatchV1Api, CoreV1Api } from '@kubernetes/client-node';
import { pollUntil } from '../util/poll.ts';
import { UPGRADE_NAME, UPGRADE_NAMESPACE } from './chaos-upgrade.ts';
import type { LocalCluster } from './cluster/cluster.ts';
import { deletePlan, ensureNamespace, installPlanCrd } from './plans.ts';

export async function prepareUpgrades(cluster: LocalCluster): Promise<void> {
  await installPlanCrd(cluster);
  await ensureNamespace(cluster, UPGRADE_NAMESPACE);
  await removeUpgrade(cluster);
}

/** Deletes the run's Plan and every Job of it, and waits until their pods are gone. */
export async function removeUpgrade(cluster: LocalCluster): Promise<void> {
  const batch = cluster.kubeconfig.makeApiClient(BatchV1Api);
  const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
  await deletePlan(cluster, UPGRADE_NAMESPACE, UPGRADE_NAME);
  await batch.deleteCollectionNamespacedJob({
    namespace: UPGRADE_NAMESPACE,
    propagationPolicy: 'Background',
  });
  await pollUntil(
    `the upgrade Plan's Jobs and pods in ${UPGRADE_NAMESPACE} to be gone`,
    async () => {
      const [jobs, pods] = await Promise.all([
        batch.listNamespacedJob({ namespace: UPGRADE_NAMESPACE }),
        core.listNamespacedPod({ namespace: UPGRADE_NAMESPACE }),
      ]);
      return jobs.items.length + pods.items.length === 0 ? true : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 250 },
  );
}
