/**
 * A Plan's version as SUC resolves it: `spec.version`, else what the channel names, with every '+'
 * written '-' (SUC's MungeVersion). The resolved version is the one version everything carries —
 * status.latestVersion, the hash, the image tag, SYSTEM_UPGRADE_PLAN_LATEST_VERSION and its twin,
 * postCompleteLabels — because images written for SUC compare it with versions they munge the same way
 * (k3s-upgrade's `prepare` with the servers' kubelet version) and a tag or label value holds no '+'.
 */
import type { PlanSpec } from '../api/plan.ts';

export const mungeVersion = (version: string): string => version.replaceAll('+', '-');

/** The Plan's resolved version; `channel` reads the channel's URL (only when spec.version is unset). */
export async function resolveVersion(
  spec: Pick<PlanSpec, 'version' | 'channel'>,
  channel: (url: string) => Promise<string>,
): Promise<string> {
  return mungeVersion(spec.version ?? (await channel(spec.channel ?? '')));
}
