/**
 * The Events a Plan's status change is worth, as SUC writes them on its Plans (handle_upgrade.go), so that
 * SUC's users and their tooling read the same story in place: Validated / ValidateFailed when the spec
 * turns valid or not, Resolved when the version to apply changes, SyncJob when the nodes applying it
 * change, JobFailed for each node's new failure, Complete when every selected node has it. Pure.
 */
import { PlanConditions, type PlanStatus } from '../../api/plan.ts';

export interface PlanEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

const condition = (s: PlanStatus | undefined, type: string) => s?.conditions?.find((c) => c.type === type);
const isTrue = (s: PlanStatus | undefined, type: string) => condition(s, type)?.status === 'True';
const isFalse = (s: PlanStatus | undefined, type: string) => condition(s, type)?.status === 'False';

export function planEvents(
  previous: PlanStatus | undefined,
  status: PlanStatus,
  /** Where the version comes from: "Spec.Version" or "Spec.Channel". */
  source: string,
): PlanEvent[] {
  const out: PlanEvent[] = [];
  const { validated, latestResolved, complete } = PlanConditions;
  if (isFalse(status, validated) && !isFalse(previous, validated))
    out.push({
      type: 'Warning',
      reason: 'ValidateFailed',
      message: `Failed to validate plan: ${condition(status, validated)?.message ?? ''}`,
    });
  if (isTrue(status, validated) && !isTrue(previous, validated))
    out.push({ type: 'Normal', reason: 'Validated', message: 'Plan is valid' });
  const version = status.latestVersion;
  if (
    version !== undefined &&
    isTrue(status, latestResolved) &&
    (!isTrue(previous, latestResolved) || previous?.latestVersion !== version)
  )
    out.push({
      type: 'Normal',
      reason: 'Resolved',
      message: `Resolved latest version from ${source}: ${version}`,
    });
  const applying = status.applying ?? [];
  if (applying.length > 0 && applying.join(',') !== (previous?.applying ?? []).join(','))
    out.push({
      type: 'Normal',
      reason: 'SyncJob',
      message: `Jobs synced for version ${version ?? ''} on Nodes ${applying.join(',')}. Hash: ${status.latestHash ?? ''}`,
    });
  const before = new Set((previous?.failed ?? []).map((f) => `${f.node} ${f.at}`));
  for (const f of status.failed ?? [])
    if (!before.has(`${f.node} ${f.at}`))
      out.push({ type: 'Warning', reason: 'JobFailed', message: `on node ${f.node}: ${f.error}` });
  if (isTrue(status, complete) && !isTrue(previous, complete))
    out.push({ type: 'Normal', reason: 'Complete', message: condition(status, complete)?.message ?? '' });
  return out;
}
