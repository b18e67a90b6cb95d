/**
 * What a drain reads before it plans: the node's pods, the DaemonSets that still own some of them, and
 * the namespaces' labels a waitFor rule may select by. Reads only; the plan itself is plan.ts.
 */
import type { AppsV1Api, ConfigurationOptions, CoreV1Api, V1Pod } from '@kubernetes/client-node';
import { describeError, statusCode } from '../kube/errors.ts';
import { DEFAULT_DRAIN_OPTIONS, type DrainOptions } from './options.ts';

/**
 * Lists a node's pods with a field selector (never a cluster-wide list), page by page; `options` may
 * bound each request (request-signal.ts).
 */
export async function podsOnNode(
  core: CoreV1Api,
  node: string,
  labelSelector = '',
  chunkSize = DEFAULT_DRAIN_OPTIONS.chunkSize,
  options?: ConfigurationOptions,
): Promise<V1Pod[]> {
  const pods: V1Pod[] = [];
  let _continue: string | undefined;
  do {
    const page = await core.listPodForAllNamespaces(
      {
        fieldSelector: `spec.nodeName=${node}`,
        labelSelector: labelSelector || undefined,
        limit: chunkSize,
        _continue,
      },
      options,
    );
    pods.push(...page.items);
    _continue = page.metadata?._continue || undefined;
  } while (_continue);
  return pods;
}

/** "namespace/name" of each DaemonSet that controls one of the pods and still exists. */
export async function existingDaemonSets(apps: AppsV1Api, pods: V1Pod[]): Promise<Set<string>> {
  const wanted = new Set<string>();
  for (const pod of pods) {
    const ref = pod.metadata?.ownerReferences?.find((r) => r.controller && r.kind === 'DaemonSet');
    if (ref) wanted.add(`${pod.metadata?.namespace}/${ref.name}`);
  }
  const found = new Set<string>();
  await Promise.all(
    [...wanted].map(async (key) => {
      const [namespace, name] = key.split('/') as [string, string];
      try {
        await apps.readNamespacedDaemonSet({ namespace, name });
        found.add(key);
      } catch (err) {
        if (statusCode(err) !== 404) throw err;
      }
    }),
  );
  return found;
}

/** Labels of every namespace, when a waitFor rule selects pods by their namespace's labels. */
export async function namespaceLabels(
  core: CoreV1Api,
  options: DrainOptions,
): Promise<Map<string, Record<string, string>>> {
  const labels = new Map<string, Record<string, string>>();
  if (!options.waitFor.some((r) => r.namespaceSelector)) return labels;
  let _continue: string | undefined;
  do {
    const page = await core.listNamespace({ limit: options.chunkSize, _continue }).catch((err: unknown) => {
      throw new Error(`reading Namespaces for drain.waitFor's namespaceSelector: ${describeError(err)}`);
    });
    for (const ns of page.items) labels.set(ns.metadata?.name ?? '', ns.metadata?.labels ?? {});
    _continue = page.metadata?._continue || undefined;
  } while (_continue);
  return labels;
}
