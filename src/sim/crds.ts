/**
 * nuo's CRDs installed in the harness's cluster as deploy/ ships them, once per cluster: with kubectl from
 * the shipped file (the typed client's create would drop its x-kubernetes-* keys, its CEL rules among
 * them), then waited for until the API server serves the resource.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ApiextensionsV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, PLAN } from '../api/crd.ts';
import { statusCode } from '../kube/errors.ts';
import { pollUntil } from '../util/poll.ts';
import type { LocalCluster } from './cluster/cluster.ts';

export interface ShippedCrd {
  /** The file under deploy/base. */
  file: string;
  kind: string;
  plural: string;
}

export const crdPath = (crd: ShippedCrd) =>
  fileURLToPath(new URL(`../../deploy/base/${crd.file}`, import.meta.url));

/** Installs the CRD unless it is established already, and waits until its resource is served. */
export async function installCrd(cluster: LocalCluster, crd: ShippedCrd): Promise<void> {
  const name = `${crd.plural}.${API_GROUP}`;
  const crds = cluster.kubeconfig.makeApiClient(ApiextensionsV1Api);
  const established = async () => {
    const live = await crds.readCustomResourceDefinition({ name }).catch((err: unknown) => {
      if (statusCode(err) === 404) return undefined;
      throw err;
    });
    return live?.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')
      ? true
      : undefined;
  };
  if (await established()) return;
  const applied = spawnSync(
    cluster.binaries.path.kubectl,
    [`--kubeconfig=${cluster.kubeconfigPath}`, 'apply', '-f', crdPath(crd)],
    { encoding: 'utf8' },
  );
  if (applied.status !== 0) throw new Error(`installing the ${crd.kind} CRD failed: ${applied.stderr}`);
  await pollUntil(`the ${crd.kind} CRD to be established`, established);
  // Established is not yet served: the resource's handler comes a moment later (404 until then, 429
  // while its storage initialises).
  const custom = cluster.kubeconfig.makeApiClient(CustomObjectsApi);
  await pollUntil(`${crd.kind} objects to be served`, () =>
    custom.listClusterCustomObject({ group: API_GROUP, version: API_VERSION, plural: crd.plural }).then(
      () => true,
      (err: unknown) => {
        if (statusCode(err) === 404 || statusCode(err) === 429) return undefined;
        throw err;
      },
    ),
  );
}

/** Installs the Plan CRD from the shipped file, unless it is established already. */
export const installPlanCrd = (cluster: LocalCluster) =>
  installCrd(cluster, { file: 'plan-crd.yaml', ...PLAN });
