/**
 * A snapshot read from a live cluster: list requests only (get/list, never a write), in pages of
 * PAGE_SIZE as kubectl does, so 5,000 nodes and 50,000 pods are read without one huge answer. Secrets and
 * ConfigMaps are never requested. Each page is cut down as it arrives (keep.ts).
 */
import {
  AppsV1Api,
  BatchV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  PolicyV1Api,
  SchedulingV1Api,
} from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, PLAN, UPDATE_POLICY } from '../api/crd.ts';
import { statusCode } from '../kube/errors.ts';
import { type Snapshot, SnapshotCollector, SnapshotError } from './snapshot.ts';

const PAGE_SIZE = 500;

/** One page of a list: its items (as JSON) and the token for the next, if any. */
export interface ListPage {
  items: unknown[];
  continueToken?: string;
}

/** Fetches one page of a list. */
export type PageFetcher = (limit: number, continueToken: string | undefined) => Promise<ListPage>;

/** A resource a snapshot lists. */
export interface ListSource {
  kind: string;
  apiVersion: string;
  /** The plural a person knows it by, for messages. */
  resource: string;
  fetch: PageFetcher;
  /** A CRD that may not be installed: 404 means none. */
  optional?: boolean;
}

/**
 * Lists every page of `source` into `collector` (items get their kind and apiVersion, which list
 * answers leave out). Returns false when an optional resource is not served.
 */
export async function listInto(
  source: ListSource,
  collector: SnapshotCollector,
  pageSize = PAGE_SIZE,
): Promise<boolean> {
  let token: string | undefined;
  let page = 0;
  do {
    let answer: ListPage;
    try {
      answer = await source.fetch(pageSize, token);
    } catch (err) {
      if (source.optional && page === 0 && statusCode(err) === 404) return false;
      if (statusCode(err) === 410)
        throw new SnapshotError(
          `listing ${source.resource} took longer than the API server keeps a list's version (410 Gone after ${page} pages of ${pageSize}): run again`,
        );
      throw err;
    }
    page++;
    answer.items.forEach((item, i) => {
      const object = { apiVersion: source.apiVersion, kind: source.kind, ...(item as object) };
      collector.add(object, `${source.resource} page ${page} item ${i + 1}`);
    });
    token = answer.continueToken || undefined;
  } while (token);
  return true;
}

/** The typed client's objects as the API server sent them: plain JSON, timestamps as strings. */
const plain = (items: readonly unknown[]): unknown[] => JSON.parse(JSON.stringify(items)) as unknown[];

type Typed = (o: { limit: number; _continue?: string }) => Promise<{
  items: unknown[];
  metadata?: { _continue?: string };
}>;

const typed =
  (list: Typed): PageFetcher =>
  async (limit, token) => {
    const answer = await list({ limit, ...(token ? { _continue: token } : {}) });
    const continueToken = answer.metadata?._continue;
    return { items: plain(answer.items), ...(continueToken ? { continueToken } : {}) };
  };

/** Every resource a snapshot lists from a cluster: no Secret, no ConfigMap. */
export function clusterSources(kc: KubeConfig): ListSource[] {
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  const batch = kc.makeApiClient(BatchV1Api);
  const policy = kc.makeApiClient(PolicyV1Api);
  const scheduling = kc.makeApiClient(SchedulingV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const crd =
    (plural: string): PageFetcher =>
    async (limit, token) => {
      const answer = (await custom.listClusterCustomObject({
        group: API_GROUP,
        version: API_VERSION,
        plural,
        limit,
        ...(token ? { _continue: token } : {}),
      })) as { items: unknown[]; metadata?: { continue?: string } };
      const continueToken = answer.metadata?.continue;
      return { items: answer.items, ...(continueToken ? { continueToken } : {}) };
    };
  const nuo = `${API_GROUP}/${API_VERSION}`;
  return [
    {
      kind: 'Namespace',
      apiVersion: 'v1',
      resource: 'namespaces',
      fetch: typed((o) => core.listNamespace(o)),
    },
    {
      kind: 'PriorityClass',
      apiVersion: 'scheduling.k8s.io/v1',
      resource: 'priorityclasses',
      fetch: typed((o) => scheduling.listPriorityClass(o)),
    },
    { kind: 'Node', apiVersion: 'v1', resource: 'nodes', fetch: typed((o) => core.listNode(o)) },
    {
      kind: 'Deployment',
      apiVersion: 'apps/v1',
      resource: 'deployments',
      fetch: typed((o) => apps.listDeploymentForAllNamespaces(o)),
    },
    {
      kind: 'ReplicaSet',
      apiVersion: 'apps/v1',
      resource: 'replicasets',
      fetch: typed((o) => apps.listReplicaSetForAllNamespaces(o)),
    },
    {
      kind: 'StatefulSet',
      apiVersion: 'apps/v1',
      resource: 'statefulsets',
      fetch: typed((o) => apps.listStatefulSetForAllNamespaces(o)),
    },
    {
      kind: 'DaemonSet',
      apiVersion: 'apps/v1',
      resource: 'daemonsets',
      fetch: typed((o) => apps.listDaemonSetForAllNamespaces(o)),
    },
    {
      kind: 'Job',
      apiVersion: 'batch/v1',
      resource: 'jobs',
      fetch: typed((o) => batch.listJobForAllNamespaces(o)),
    },
    {
      kind: 'PodDisruptionBudget',
      apiVersion: 'policy/v1',
      resource: 'poddisruptionbudgets',
      fetch: typed((o) => policy.listPodDisruptionBudgetForAllNamespaces(o)),
    },
    { kind: 'Pod', apiVersion: 'v1', resource: 'pods', fetch: typed((o) => core.listPodForAllNamespaces(o)) },
    {
      kind: UPDATE_POLICY.kind,
      apiVersion: nuo,
      resource: UPDATE_POLICY.plural,
      fetch: crd(UPDATE_POLICY.plural),
      optional: true,
    },
    { kind: PLAN.kind, apiVersion: nuo, resource: PLAN.plural, fetch: crd(PLAN.plural), optional: true },
  ];
}

/**
 * Reads a snapshot from the sources, one after another (a 2-core API server need not serve them at
 * once), `pageSize` objects a request.
 */
export async function readSnapshotFrom(
  sources: readonly ListSource[],
  pageSize = PAGE_SIZE,
): Promise<{ snapshot: Snapshot; notes: string[] }> {
  const collector = new SnapshotCollector();
  const missing: string[] = [];
  for (const source of sources) {
    if (!(await listInto(source, collector, pageSize))) missing.push(source.resource);
  }
  const notes = collector.notes();
  if (missing.length > 0) notes.push(`not served by this cluster (CRD not installed): ${missing.join(', ')}`);
  return { snapshot: collector.finish(), notes };
}
