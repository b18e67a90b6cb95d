/**
 * One page of a list of custom resources, in every namespace or one, for an informer: the list answered
 * says whether the CRD is installed (a 404 says it is not, and is thrown on for the informer's backoff).
 */
import type { CustomObjectsApi } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION } from '../../api/crd.ts';
import { statusCode } from '../../kube/errors.ts';
import type { InformerListOptions } from '../../kube/informer.ts';

export interface CustomResources {
  plural: string;
  /** nuo's group and version unless given. */
  group?: string;
  version?: string;
  /** Every namespace unless given. */
  namespace?: string;
}

type Page<T> = { metadata?: { resourceVersion?: string; _continue?: string }; items: T[] };

/**
 * The list's 404: the resource is not served, its CRD not installed. Its owner says so once (the
 * informer retries quietly), and picks the resource up when the CRD appears.
 */
export class CrdNotInstalled extends Error {}

/** For an informer's expectedFailure: a CRD not installed is no failure to warn about on every retry. */
export const crdNotInstalled = (err: unknown) => err instanceof CrdNotInstalled;

export async function listCustomPage<T>(
  api: CustomObjectsApi,
  what: CustomResources,
  opts: InformerListOptions,
  answered: (crdMissing: boolean) => void,
): Promise<Page<T>> {
  const { plural, group = API_GROUP, version = API_VERSION, namespace } = what;
  try {
    const page =
      namespace === undefined
        ? await api.listClusterCustomObject({ group, version, plural, ...opts })
        : await api.listNamespacedCustomObject({ group, version, namespace, plural, ...opts });
    answered(false);
    return page as Page<T>;
  } catch (err) {
    if (statusCode(err) !== 404) throw err;
    answered(true);
    throw new CrdNotInstalled(`${plural}.${group}/${version} is not served: its CRD is not installed`, {
      cause: err,
    });
  }
}
