/**
 * Reads what a policy's health checks judge: the objects of each object check (any kind, through the
 * API's discovery) and the samples of each PromQL query, each bounded by `signal` (the policy's
 * readings.timeout). Every failure becomes the check's reading, never an exception: a check that cannot
 * be read, or not in time, fails closed. The operator reads the objects with its own ServiceAccount,
 * which the admin grants get and list on them.
 */
import type { KubernetesObject, KubernetesObjectApi } from '@kubernetes/client-node';
import { describeError, statusCode } from '../../kube/errors.ts';
import { settledBy } from '../../kube/request-signal.ts';
import {
  type HealthReading,
  type ObjectCheck,
  type ObjectsRead,
  objectVerdict,
  prometheusVerdict,
  type ResolvedHealthCheck,
} from '../../policy/health-checks.ts';
import { queryPrometheus } from '../../policy/prometheus-query.ts';

/** What the object checks use of the Kubernetes client (KubernetesObjectApi). */
export type ObjectReader = Pick<KubernetesObjectApi, 'list'>;

export async function readHealth(
  checks: readonly ResolvedHealthCheck[],
  objects: ObjectReader,
  signal: AbortSignal,
  now: () => number = Date.now,
): Promise<HealthReading> {
  const results = await Promise.all(
    checks.map(async (c) =>
      c.type === 'object'
        ? objectVerdict(c, await readObjects(c, objects, signal))
        : prometheusVerdict(c, await queryPrometheus(c.url, c.query, signal)),
    ),
  );
  return { at: now(), checks: results };
}

/**
 * The objects a check names, listed: by name (a field selector) or by label selector, in its namespace, or
 * in every namespace when it names none. A name is listed rather than read so that a namespaced kind
 * without a namespace means the same to the operator and to `nuo policy explain` (a read would take each
 * one's own default namespace), and a missing object is an empty list, not an error.
 */
async function readObjects(c: ObjectCheck, api: ObjectReader, signal: AbortSignal): Promise<ObjectsRead> {
  const byName = 'name' in c.target ? `metadata.name=${c.target.name}` : undefined;
  const byLabels = 'selector' in c.target ? c.target.selector : undefined;
  try {
    // KubernetesObjectApi takes no signal: the reading ends at the deadline, the request when it will.
    const list = await settledBy(
      api.list<KubernetesObject>(
        c.apiVersion,
        c.kind,
        c.namespace,
        undefined,
        undefined,
        undefined,
        byName,
        byLabels,
      ),
      signal,
    );
    return { objects: list.items };
  } catch (err) {
    if (signal.aborted) return { error: 'no answer within readings.timeout' };
    return readError(c, statusCode(err), describeError(err));
  }
}

/** A failed read in words: forbidden says what the admin must grant. */
export function readError(c: ObjectCheck, code: number | undefined, described: string): ObjectsRead {
  if (code === 403) {
    const where = c.namespace ? ` in namespace ${c.namespace}` : '';
    return {
      error: `forbidden: grant the operator's ServiceAccount get and list on ${c.kind} (${c.apiVersion})${where}: ${described}`,
    };
  }
  return { error: described };
}
