/** The phases the independent checker reads from `nuo.dev/state`, as it judges them (checker.ts). */
import type { V1Node } from '@kubernetes/client-node';
import {
  Annotations,
  LIFECYCLE_CONDITIONS,
  LifecycleConditions,
  NUO_REASON_PREFIX,
  SCALE_DOWN_PROTECTION,
} from '../api/keys.ts';
import { Phase } from '../api/phases.ts';

/**
 * The phases in which nuo's cordon may stand: it is written with Draining (or Upgrading, when a Plan
 * cordons) and undone in the write that ends the attempt (Idle, or Pending after an abort). Seen anywhere
 * else, something cordoned late. (A `nuo drain` by hand records its cordon as nuo's too; the runs a
 * checker watches make none.)
 */
export const CORDONED_PHASES: ReadonlySet<string> = new Set([
  Phase.draining,
  Phase.upgrading,
  Phase.rebootGranted,
  Phase.rebooting,
  Phase.afterReboot,
  Phase.failed,
]);

/** Phases of an attempt, a reboot's or a Plan's: the node holds a slot of the budget. */
export const ATTEMPT_PHASES: ReadonlySet<string> = new Set([Phase.beforeReboot, ...CORDONED_PHASES]);

/** Whether the node's recorded phase is one of an attempt. */
export const inAttemptPhase = (n: V1Node | undefined): boolean =>
  ATTEMPT_PHASES.has(n?.metadata?.annotations?.[Annotations.state] ?? '');

/**
 * nuo's lifecycle conditions (reason prefixed `Nuo`) that the node's phase does not allow: in an attempt
 * any; outside one only MaintenancePlanned, and only while the node waits (Pending) or needs a reboot.
 * Anything else was left behind when an attempt ended.
 */
export function lifecycleLeft(n: V1Node): string[] {
  if (inAttemptPhase(n)) return [];
  const a = n.metadata?.annotations ?? {};
  const waits =
    a[Annotations.state] === Phase.pending ||
    a[Annotations.rebootNeeded] === 'true' ||
    a[Annotations.rebootRequested] !== undefined;
  return (n.status?.conditions ?? [])
    .filter((c) => (LIFECYCLE_CONDITIONS as readonly string[]).includes(c.type))
    .filter((c) => c.reason?.startsWith(NUO_REASON_PREFIX))
    .filter((c) => !(waits && c.type === LifecycleConditions.maintenancePlanned))
    .map((c) => `${c.type}=${c.status} (${c.reason})`);
}

/**
 * The autoscalers' protection left on a node outside an attempt: nuo's record of what it set, and each
 * protection annotation the node did not carry when the checker first saw it (`before`: someone else's).
 */
export function protectionLeft(n: V1Node, before: ReadonlySet<string>): string[] {
  if (inAttemptPhase(n)) return [];
  const a = n.metadata?.annotations ?? {};
  return [Annotations.scaleDownProtection, ...SCALE_DOWN_PROTECTION].filter(
    (k) => a[k] !== undefined && !before.has(k),
  );
}
