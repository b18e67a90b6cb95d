/** What a chaos run reports besides the checker's verdict: what blocked it, and how its drains went. */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PolicyV1Api } from '@kubernetes/client-node';
import type { Env } from './chaos-env.ts';
import { CHAOS_NAMESPACE } from './chaos-faults.ts';
import type { LocalCluster } from './cluster/cluster.ts';
import { isReady } from './cluster/nodes.ts';
/** Pods, PDB and nodes as they are, for a run that did not finish or failed (what blocks a drain is usually here). */
export async function workloadReport(cluster: LocalCluster, env: Env): Promise<string> {
  const policy = cluster.kubeconfig.makeApiClient(PolicyV1Api);
  const pods = (await env.core.listNamespacedPod({ namespace: CHAOS_NAMESPACE })).items.map((p) => {
    const ready = p.status?.conditions?.find((c) => c.type === 'Ready');
    return `    pod ${p.metadata?.name} on ${p.spec?.nodeName ?? '-'}: ${p.status?.phase} ready=${ready?.status}${ready?.reason ? `(${ready.reason})` : ''}${p.metadata?.deletionTimestamp ? ' DELETING' : ''}`;
  });
  const pdb = await policy.readNamespacedPodDisruptionBudget({ name: 'web', namespace: CHAOS_NAMESPACE });
  const nodes = (await env.core.listNode()).items.map(
    (n) =>
      `    node ${n.metadata?.name}: ready=${isReady(n)} unschedulable=${n.spec?.unschedulable === true} taints=${(n.spec?.taints ?? []).map((t) => t.key).join(',') || '-'}`,
  );
  const s = pdb.status;
  const disrupted = Object.entries(s?.disruptedPods ?? {})
    .map(([pod, at]) => `${pod} since ${new Date(at as unknown as string).toISOString()}`)
    .join(', ');
  const repaired = join(cluster.dir, 'logs', 'pod-readiness.log');
  const repairs = existsSync(repaired) ? readFileSync(repaired, 'utf8').trim().split('\n').slice(-10) : [];
  return [
    `  workload now: PDB web healthy ${s?.currentHealthy}/${s?.desiredHealthy} allowed ${s?.disruptionsAllowed}; disruptedPods: ${disrupted || 'none'}`,
    ...pods,
    ...nodes,
    `  pods the harness made Ready again, as a kubelet would (last ${repairs.length}):`,
    ...repairs.map((l) => `    ${l}`),
  ].join('\n');
}

/** Pods the harness has made Ready again so far (pod-readiness.ts): how often KWOK's gap mattered. */
export function readinessRepairs(cluster: LocalCluster): number {
  const file = join(cluster.dir, 'logs', 'pod-readiness.log');
  if (!existsSync(file)) return 0;
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.includes(': Ready again')).length;
}

/** What the operators logged about drains: the slowest one, and attempts aborted (and why). */
export interface DrainSummary {
  slowestMs: number;
  aborted: string[];
}

/** Drains as the run's operator replicas logged them (attempt-writes.ts: "reboot granted", "attempt aborted"). */
export function drainSummary(cluster: LocalCluster, identities: string[]): DrainSummary {
  let slowestMs = 0;
  const aborted: string[] = [];
  for (const id of identities) {
    const file = join(cluster.dir, 'logs', `operator-${id}.log`);
    if (!existsSync(file)) continue;
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (!line.startsWith('{')) continue;
      const entry = JSON.parse(line) as { msg?: string; node?: string; drain?: string; reason?: string };
      const took = entry.msg === 'reboot granted' ? entry.drain?.match(/ in ([\d.]+)s/) : null;
      if (took?.[1]) slowestMs = Math.max(slowestMs, Number(took[1]) * 1000);
      if (entry.msg === 'attempt aborted; slot released')
        aborted.push(`${id} ${entry.node}: ${entry.reason}`);
    }
  }
  return { slowestMs, aborted };
}
