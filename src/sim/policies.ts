/**
 * UpdatePolicies for the harness (the demo, the benchmarks, the chaos runner, the tests): the CRD as
 * deploy/ ships it, installed once per cluster, and policies created or replaced by name.
 */
import { CustomObjectsApi } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, UPDATE_POLICY } from '../api/crd.ts';
import type { UpdatePolicy, UpdatePolicySpec } from '../api/update-policy.ts';
import { statusCode } from '../kube/errors.ts';
import type { LocalCluster } from './cluster/cluster.ts';
import { installCrd } from './crds.ts';

const REF = { group: API_GROUP, version: API_VERSION, plural: UPDATE_POLICY.plural };

/** Installs the UpdatePolicy CRD from the shipped file, unless it is established already. */
export const installPolicyCrd = (cluster: LocalCluster) =>
  installCrd(cluster, { file: 'updatepolicy-crd.yaml', ...UPDATE_POLICY });

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
