/**
 * The volumes a drain waits to see detached before it counts as done: a node that reboots (or is
 * replaced) while a CSI driver still holds a volume of an evicted pod attached can leave that volume
 * unusable elsewhere until its attachment times out (Karpenter waits the same way before terminating).
 * Volumes of pods that stay on the node (DaemonSet pods, pods the drain skipped) are not waited for.
 */
import type { V1Pod, V1VolumeAttachment } from '@kubernetes/client-node';

/**
 * "namespace/claim" of every PersistentVolumeClaim the pods mount: those they name, and those their
 * generic ephemeral volumes own, which Kubernetes names `<pod>-<volume>` (the ephemeral volume
 * controller's rule, KEP-1698).
 */
export function claimsOf(pods: readonly V1Pod[]): string[] {
  const claims = new Set<string>();
  for (const pod of pods) {
    const ns = pod.metadata?.namespace;
    for (const v of pod.spec?.volumes ?? []) {
      if (v.persistentVolumeClaim) claims.add(`${ns}/${v.persistentVolumeClaim.claimName}`);
      if (v.ephemeral) claims.add(`${ns}/${pod.metadata?.name}-${v.name}`);
    }
  }
  return [...claims].sort();
}

/** The node's attachments of the given PersistentVolumes that are not gone yet. */
export function stillAttached(
  attachments: readonly V1VolumeAttachment[],
  node: string,
  volumes: ReadonlySet<string>,
): V1VolumeAttachment[] {
  return attachments.filter((va) => {
    const pv = va.spec.source.persistentVolumeName;
    return va.spec.nodeName === node && pv !== undefined && volumes.has(pv);
  });
}

/** "pv-a (VolumeAttachment csi-1), …", for a drain's message. */
export function describeAttached(attachments: readonly V1VolumeAttachment[]): string {
  return attachments
    .map((va) => `${va.spec.source.persistentVolumeName} (VolumeAttachment ${va.metadata?.name})`)
    .join(', ');
}
