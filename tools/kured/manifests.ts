/**
 * kured's manifests as they ship at the pinned tag (build.ts's source): kured-rbac.yaml (its
 * ServiceAccount's ClusterRole, Role and bindings) and kured-ds.yaml (its ServiceAccount and DaemonSet,
 * which runs with the host's PID namespace, privileged, the host's /var/run mounted at /sentinel).
 */
import { type Manifest, pinnedManifests } from '../manifests.ts';
import { KURED } from './build.ts';

/** kured's objects, read from its pinned source. Throws if a file is missing or does not parse. */
export function kuredManifests(log: (line: string) => void = () => {}): Promise<Manifest[]> {
  return pinnedManifests(KURED, ['kured-rbac.yaml', 'kured-ds.yaml'], log);
}
