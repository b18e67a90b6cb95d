/**
 * Seeds: a twin's pods of ReplicaSets, Deployments and StatefulSets made on the nodes where the snapshot
 * had them, before their owners, which adopt them (decision 0069). Where a workload's pods sit decides
 * which nodes a PDB that allows nothing holds, and which nodes drain first; a scheduler placing them anew
 * picks other nodes. A pure builder: the harness creates what it returns (src/sim/whatif-twin.ts).
 */
import type { PodObject, StringMap, WorkloadObject } from './objects.ts';
import { defined } from './raw.ts';
import { twinSelector } from './twin-spec.ts';

/** The label a Deployment's ReplicaSet selects its own pods by. */
const TEMPLATE_HASH = 'pod-template-hash';

/** A workload's pod template as the twin makes it. */
export interface TwinTemplate {
  metadata: { labels?: StringMap; annotations?: StringMap };
  spec: object;
}

export interface Seeded {
  /** Pods bound to their snapshot nodes, with the labels their owner selects. */
  pods: object[];
  /**
   * A Deployment's ReplicaSet, made before the Deployment: it adopts the seeds, and the Deployment adopts
   * it as its current one (its template equals the Deployment's but for the hash label), so the
   * Deployment makes no ReplicaSet of its own to replace them.
   */
  replicaSet?: object;
}

/** The hash label most of the pods carry, else one of the twin's own. */
function commonHash(pods: readonly PodObject[]): string {
  const counts = new Map<string, number>();
  for (const p of pods) {
    const hash = p.metadata.labels?.[TEMPLATE_HASH];
    if (hash) counts.set(hash, (counts.get(hash) ?? 0) + 1);
  }
  const [best] = [...counts].sort(([a, x], [b, y]) => y - x || a.localeCompare(b));
  return best?.[0] ?? 'twin';
}

/** The placed pods to seed, at most `replicas` of them, by name (a StatefulSet's by its ordinals). */
function chosen(w: WorkloadObject, pods: readonly PodObject[], nodes: ReadonlySet<string>): PodObject[] {
  const replicas = w.spec.replicas ?? 1;
  const placed = pods
    .filter((p) => p.spec.nodeName !== undefined && nodes.has(p.spec.nodeName))
    .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
  if (w.kind !== 'StatefulSet') return placed.slice(0, replicas);
  // The StatefulSet adopts a pod by its name: one of its ordinals below replicas.
  const ordinal = new RegExp(`^${w.metadata.name.replace(/[.]/g, '\\.')}-(0|[1-9][0-9]*)$`);
  return placed.filter((p) => Number(ordinal.exec(p.metadata.name)?.[1] ?? replicas) < replicas);
}

function seedPod(p: PodObject, template: TwinTemplate, labels: StringMap | undefined): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: defined({
      name: p.metadata.name,
      namespace: p.metadata.namespace,
      labels,
      annotations: template.metadata.annotations,
    }),
    spec: { ...template.spec, nodeName: p.spec.nodeName },
  };
}

/** The seeds of a top-level owner of the snapshot, from its live pods there; none for other kinds. */
export function seedsOf(
  w: WorkloadObject,
  template: TwinTemplate,
  pods: readonly PodObject[],
  nodes: ReadonlySet<string>,
): Seeded {
  if (w.kind !== 'Deployment' && w.kind !== 'ReplicaSet' && w.kind !== 'StatefulSet') return { pods: [] };
  const seeds = chosen(w, pods, nodes);
  if (seeds.length === 0) return { pods: [] };
  if (w.kind !== 'Deployment')
    return { pods: seeds.map((p) => seedPod(p, template, template.metadata.labels)) };
  const hash = commonHash(seeds);
  const labels = { ...template.metadata.labels, [TEMPLATE_HASH]: hash };
  const selector = twinSelector(w.spec.selector);
  const owner = seeds
    .map((p) => p.metadata.ownerReferences?.find((o) => o.controller && o.kind === 'ReplicaSet')?.name)
    .find((name) => name?.endsWith(`-${hash}`));
  return {
    pods: seeds.map((p) => seedPod(p, template, labels)),
    replicaSet: {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: defined({
        name: owner ?? `${w.metadata.name}-${hash}`,
        namespace: w.metadata.namespace,
        labels,
      }),
      spec: defined({
        replicas: w.spec.replicas ?? 1,
        selector: { ...selector, matchLabels: { ...selector?.matchLabels, [TEMPLATE_HASH]: hash } },
        template: { metadata: { ...template.metadata, labels }, spec: template.spec },
        minReadySeconds: w.spec.minReadySeconds,
      }),
    },
  };
}
