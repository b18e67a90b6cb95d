/**
 * The two API groups whose Plans nuo runs: its own, and SUC's `upgrade.cattle.io/v1` when the operator
 * adopts SUC's Plans in place (--suc-plans-namespace). A Plan's ref names its group when it is SUC's, so
 * a Plan of each group by one namespace and name are two Plans.
 */
import { API_GROUP, API_VERSION } from './crd.ts';

export interface PlanGroup {
  group: string;
  version: string;
}

export const NUO_PLANS: PlanGroup = { group: API_GROUP, version: API_VERSION };
export const SUC_PLANS: PlanGroup = { group: 'upgrade.cattle.io', version: 'v1' };

export const apiVersionOf = (g: PlanGroup) => `${g.group}/${g.version}`;

/** The group of a Plan by its apiVersion: nuo's unless it is SUC's. */
export const planGroupOf = (apiVersion: string | undefined): PlanGroup =>
  apiVersion?.split('/')[0] === SUC_PLANS.group ? SUC_PLANS : NUO_PLANS;

const SUC_REF_PREFIX = `${SUC_PLANS.group}:`;

/** "namespace/name" for nuo's Plans, "upgrade.cattle.io:namespace/name" for SUC's. */
export const planRefOf = (g: PlanGroup, namespace: string, name: string) =>
  `${g === SUC_PLANS ? SUC_REF_PREFIX : ''}${namespace}/${name}`;

/** The group a ref names. */
export const groupOfRef = (ref: string): PlanGroup =>
  ref.startsWith(SUC_REF_PREFIX) ? SUC_PLANS : NUO_PLANS;
