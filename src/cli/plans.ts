/**
 * What the people-facing commands read of the Plans: every Plan with the version and hash its status
 * names (the operator resolves channels and secrets; a command only reads what it wrote), and the Plans'
 * Jobs, so a pass is decided here as the operator decides it.
 */
import { BatchV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, PLAN } from '../api/crd.ts';
import { JobLabels } from '../api/keys.ts';
import { type Plan, PlanConditions } from '../api/plan.ts';
import { SUC_PLANS } from '../api/plan-groups.ts';
import { statusCode } from '../kube/errors.ts';
import type { JobView } from '../operator/decide/plan-work.ts';
import { jobView } from '../operator/plans/plan-jobs.ts';
import { type PlanEntry, planEntries } from '../operator/plans/plan-resolve.ts';

export interface PlansRead {
  /** The Plan CRD is not installed. */
  crdMissing: boolean;
  entries: PlanEntry[];
  jobs: Map<string, JobView[]>;
}

/** The CLI's flag naming the namespace whose SUC Plans the operator runs (its own setting of that name). */
export const sucPlansFlag = { 'suc-plans-namespace': { type: 'string' } } as const;
export const sucPlansUsage =
  "  --suc-plans-namespace NS   read SUC's upgrade.cattle.io Plans of NS too, as the operator's setting (default $NUO_SUC_PLANS_NAMESPACE)";

/** The flag's value, else the operator's environment variable; empty: SUC's Plans are not read. */
export function sucPlansNamespace(values: {
  'suc-plans-namespace'?: string | undefined;
}): string | undefined {
  return values['suc-plans-namespace'] || process.env.NUO_SUC_PLANS_NAMESPACE || undefined;
}

/** SUC's Plans of the namespace; none while SUC's CRD is not installed. */
async function sucPlans(kc: KubeConfig, namespace: string): Promise<Plan[]> {
  try {
    const list = (await kc
      .makeApiClient(CustomObjectsApi)
      .listNamespacedCustomObject({ ...SUC_PLANS, namespace, plural: PLAN.plural })) as { items: Plan[] };
    return list.items.map((p) => ({ ...p, apiVersion: 'upgrade.cattle.io/v1' }));
  } catch (err) {
    if (statusCode(err) !== 404) throw err;
    return [];
  }
}

export async function readPlans(kc: KubeConfig, sucNamespace?: string): Promise<PlansRead> {
  let plans: Plan[];
  try {
    const list = (await kc
      .makeApiClient(CustomObjectsApi)
      .listClusterCustomObject({ group: API_GROUP, version: API_VERSION, plural: PLAN.plural })) as {
      items: Plan[];
    };
    plans = [...list.items, ...(sucNamespace === undefined ? [] : await sucPlans(kc, sucNamespace))];
  } catch (err) {
    if (statusCode(err) !== 404) throw err;
    return { crdMissing: true, entries: [], jobs: new Map() };
  }
  const jobs = new Map<string, JobView[]>();
  if (plans.length > 0) {
    const listed = await kc
      .makeApiClient(BatchV1Api)
      .listJobForAllNamespaces({ labelSelector: JobLabels.plan });
    for (const job of listed.items) {
      const node = job.metadata?.labels?.[JobLabels.node];
      const view = jobView(job);
      if (node && view) jobs.set(node, [...(jobs.get(node) ?? []), view]);
    }
  }
  return { crdMissing: false, entries: entriesOf(plans), jobs };
}

/** Plans as the operator last resolved them (their status), checked as it checks them. */
export function entriesOf(plans: readonly Plan[]): PlanEntry[] {
  return planEntries(plans, (p) => {
    const resolved = p.status?.conditions?.find((c) => c.type === PlanConditions.latestResolved);
    return {
      ...(p.status?.latestVersion ? { version: p.status.latestVersion } : {}),
      ...(p.status?.latestHash ? { hash: p.status.latestHash } : {}),
      ...(p.status?.sucLatestHash ? { sucHash: p.status.sucLatestHash } : {}),
      ...(resolved?.status === 'False' ? { resolveError: resolved.message } : {}),
    };
  });
}
