/** The phases the independent checker reads from `nuo.dev/state`, as it judges them (checker.ts). */
import type { V1Node } from '@kubernetes/client-node';
import { Annotations } from '../api/keys.ts';
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
