/**
 * What `nuo whatif run` (whatif-run.ts) reads off the twin as it rolls, pure: the checker's budgets from
 * the policies, a pod's workload, the PDB that refused an eviction in the audit log.
 */
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { budgetSlots } from '../operator/decide/budget.ts';
import type { ResolvedPolicy } from '../policy/resolve.ts';
import type { Budget } from './checker.ts';
import type { AuditEvent } from './cluster/audit.ts';

/** The checker's budget of each valid policy: its nodes by selector, its slots, its zones'. */
export function policyBudgets(policies: readonly ResolvedPolicy[], nodes: readonly V1Node[]): Budget[] {
  return policies.map((p) => {
    const eligible = nodes.filter((n) => p.selects(n.metadata?.labels ?? {})).length;
    return {
      name: p.name,
      selects: (labels) => p.selects(labels),
      max: budgetSlots(p.maxUnavailable, eligible),
      ...(p.maxUnavailablePerZone
        ? { zones: { label: p.zoneLabel, max: budgetSlots(p.maxUnavailablePerZone, eligible) } }
        : {}),
      protocol: p.agentProtocol,
    };
  });
}

/** "namespace/Kind/name" of a pod's top-level owner: a ReplicaSet's Deployment by its template hash. */
export function workloadOf(pod: V1Pod): string | undefined {
  const owner =
    pod.metadata?.ownerReferences?.find((o) => o.controller) ?? pod.metadata?.ownerReferences?.[0];
  if (!owner) return undefined;
  const ns = pod.metadata?.namespace ?? '';
  const hash = pod.metadata?.labels?.['pod-template-hash'];
  if (owner.kind === 'ReplicaSet' && hash && owner.name.endsWith(`-${hash}`))
    return `${ns}/Deployment/${owner.name.slice(0, -hash.length - 1)}`;
  return `${ns}/${owner.kind}/${owner.name}`;
}

/** The audit log's fields of an eviction's answer (Metadata level keeps the Status's message and causes). */
export type EvictionAudit = AuditEvent & {
  responseStatus?: { code?: number; details?: { causes?: { reason?: string; message?: string }[] } };
};

/** "The disruption budget web needs 2 healthy pods and has 2 currently" → "web" (the drain engine's reading). */
export const refusingPdb = (e: EvictionAudit) =>
  e.responseStatus?.details?.causes
    ?.find((c) => c.reason === 'DisruptionBudget')
    ?.message?.match(/disruption budget (\S+)/)?.[1];
