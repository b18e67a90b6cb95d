/**
 * The demo's upgrade Plan (`nuo demo --plan`): an OS upgrade Job on every node with `reboot: true`, so
 * each node's attempt is its drain, the Job, nuo's reboot (the one the demo staged) and the health gate,
 * in one slot of the UpdatePolicy's budget. KWOK completes each Job's pod after `jobMs`.
 */
import type { V1Node } from '@kubernetes/client-node';
import { planLabel } from '../api/keys.ts';
import type { PlanSpec } from '../api/plan.ts';
import { SimJobAnnotations } from './job-keys.ts';
import type { PlanObject } from './plans.ts';

export const DEMO_PLAN = { namespace: 'demo-upgrades', name: 'os-upgrade' } as const;
/** "namespace/name", as the checker names the Plan. */
export const DEMO_PLAN_REF = `${DEMO_PLAN.namespace}/${DEMO_PLAN.name}`;

export interface DemoPlanOptions {
  maxUnavailable: number;
  /** How long each Job's pod runs. */
  jobMs: number;
}

/** The Plan's concurrency: the budget's, so the Plan can use every slot (the checker holds it to it). */
export const demoPlanConcurrency = (o: Pick<DemoPlanOptions, 'maxUnavailable'>) => o.maxUnavailable;

export function demoPlan(o: DemoPlanOptions): PlanObject {
  const spec: PlanSpec = {
    concurrency: demoPlanConcurrency(o),
    version: 'v1.1.0',
    drain: { force: true },
    upgrade: { image: 'registry.example/os-upgrade', command: ['/upgrade'] },
    reboot: true,
  };
  return {
    ...DEMO_PLAN,
    annotations: { [SimJobAnnotations.completeDelay]: `${o.jobMs}ms` },
    spec,
  };
}

/** Nodes the Plan is applied on: they carry its label (its hash). */
export const upgraded = (nodes: readonly V1Node[]) =>
  nodes.filter((n) => n.metadata?.labels?.[planLabel(DEMO_PLAN.name)] !== undefined).length;
