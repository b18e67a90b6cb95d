/**
 * UpdatePolicies for the harness (the demo, the benchmarks, the chaos runner, the tests): the CRD as
 * deploy/ ships it, installed once per cluster, and policies created or replaced by name.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ApiextensionsV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, UPDATE_POLICY } from '../api/crd.ts';
import type { UpdatePolicy, UpdatePolicySpec } from '../api/update-policy.ts';
import { statusCode } from '../kube/errors.ts';
import { pollUntil } from '../util/poll.ts';
import type { LocalCluster } from './cluster/cluster.ts';

export const CRD_FILE = fileURLToPath(new URL('../../deploy/base/updatepolicy-crd.yaml', import.meta.url));
const CRD_NAME = `${UPDATE_POLICY.plural}.${API_GROUP}`;
const REF = { group: API_GROUP, version: API_VERSION, plural: UPDATE_POLICY.plural };

/**
 * Installs the UpdatePolicy CRD with kubectl from the shipped file, unless it is established already
 * (the typed client's create would drop its x-kubernetes-* keys, its CEL rules among them).
 */
export async function installPolicyCrd(cluster: LocalCluster): Promise<void> {
  const crds = cluster.kubeconfig.makeApiClient(ApiextensionsV1Api);
  const established = async () => {
    const crd = await crds.readCustomResourceDefinition({ name: CRD_NAME }).catch((err: unknown) => {
      if (statusCode(err) === 404) return undefined;
      throw err;
    });
    return crd?.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')
      ? true
      : undefined;
  };
  if (await established()) return;
  const applied = spawnSync(
    cluster.binaries.path.kubectl,
    [`--kubeconfig=${cluster.kubeconfigPath}`, 'apply', '-f', CRD_FILE],
    { encoding: 'utf8' },
  );
  if (applied.status !== 0) throw new Error(`installing the UpdatePolicy CRD failed: ${applied.stderr}`);
  await pollUntil('the UpdatePolicy CRD to be established', established);
  // Established is not yet served: the resource's handler comes a moment later (404 until then, 429
  // while its storage initialises).
  const custom = cluster.kubeconfig.makeApiClient(CustomObjectsApi);
  await pollUntil('UpdatePolicies to be served', () =>
    custom.listClusterCustomObject(REF).then(
      () => true,
      (err: unknown) => {
        if (statusCode(err) === 404 || statusCode(err) === 429) return undefined;
        throw err;
      },
    ),
  );
}

/** Creates the policy, or replaces the spec of the one by that name. */
export async function applyPolicy(
  cluster: LocalCluster,
  name: string,
  spec: UpdatePolicySpec,
): Promise<void> {
  const custom = cluster.kubeconfig.makeApiClient(CustomObjectsApi);
  const body = {
    apiVersion: `${API_GROUP}/${API_VERSION}`,
    kind: UPDATE_POLICY.kind,
    metadata: { name },
    spec,
  };
  try {
    await custom.createClusterCustomObject({ ...REF, body });
  } catch (err) {
    if (statusCode(err) !== 409) throw err;
    const live = (await custom.getClusterCustomObject({ ...REF, name })) as UpdatePolicy;
    const replaced = { ...body, metadata: { name, resourceVersion: live.metadata.resourceVersion } };
    await custom.replaceClusterCustomObject({ ...REF, name, body: replaced });
  }
}

/** Deletes the policies named (all of them when none is named); a policy already gone is fine. */
export async function deletePolicies(cluster: LocalCluster, names?: readonly string[]): Promise<void> {
  const custom = cluster.kubeconfig.makeApiClient(CustomObjectsApi);
  const all =
    names ??
    ((await custom.listClusterCustomObject(REF)) as { items: UpdatePolicy[] }).items.map(
      (p) => p.metadata.name,
    );
  for (const name of all) {
    await custom.deleteClusterCustomObject({ ...REF, name }).catch((err: unknown) => {
      if (statusCode(err) !== 404) throw err;
    });
  }
}
