/**
 * One page of a list of nuo's custom resources in every namespace, for an informer: the list answered
 * says whether the CRD is installed (a 404 says it is not, and is thrown on for the informer's backoff).
 */
import type { CustomObjectsApi } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION } from '../api/crd.ts';
import { statusCode } from '../kube/errors.ts';
import type { InformerListOptions } from '../kube/informer.ts';

export async function listCustomPage<T>(
  api: CustomObjectsApi,
  plural: string,
  opts: InformerListOptions,
  answered: (crdMissing: boolean) => void,
): Promise<{ metadata?: { resourceVersion?: string; _continue?: string }; items: T[] }> {
  try {
    const page = await api.listClusterCustomObject({
      group: API_GROUP,
      version: API_VERSION,
      plural,
      ...opts,
    });
    answered(false);
    return page as { metadata?: { resourceVersion?: string; _continue?: string }; items: T[] };
  } catch (err) {
    if (statusCode(err) === 404) answered(true);
    throw err;
  }
}
