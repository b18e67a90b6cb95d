/**
 * Which of a twin's pods are made unready, so that a workload has as many unready pods as in its
 * snapshot (they are what holds its PDB): those on the snapshot's unready pods' nodes first, then in
 * their zones, then any, each pod once.
 */
import type { PodStanding } from './workloads.ts';

export interface PlacedPod {
  name: string;
  node: string;
  zone: string;
}

export function unreadyPicks(
  standing: Pick<PodStanding, 'unreadyNodes'>,
  zoneOf: (node: string) => string,
  pods: readonly PlacedPod[],
): string[] {
  const left = [...pods].sort((a, b) => a.name.localeCompare(b.name));
  const picks: string[] = [];
  const take = (match: (p: PlacedPod) => boolean) => {
    const i = left.findIndex(match);
    if (i < 0) return false;
    picks.push((left.splice(i, 1)[0] as PlacedPod).name);
    return true;
  };
  for (const node of standing.unreadyNodes) {
    const zone = zoneOf(node);
    if (!take((p) => p.node === node) && !take((p) => p.zone === zone)) take(() => true);
  }
  return picks;
}
