/**
 * What a slot holder's step reads besides its node (the pool's settings, the time, the drains and health
 * readings of this process, its slot), and the small actions every phase's step builds the same way.
 */
import { Phase } from '../../api/phases.ts';
import type { Action } from './action.ts';
import type { DecideConfig } from './decide-input.ts';
import type { Health } from './health-gate.ts';
import { needsWork } from './need.ts';
import type { NodeView } from './node-view.ts';
import type { Slot } from './slot.ts';

export interface StepContext {
  config: DecideConfig;
  now: Date;
  /** Nodes with a drain running in this process. */
  draining: ReadonlySet<string>;
  health: ReadonlyMap<string, Health>;
  /** Asks for the next look at `at` (ms), when a soak or a timeout ends. */
  wake: (at: number) => void;
  /** The node's slot in the ledger (what its attempt is: a reboot, or which Plan). */
  slotOf: (node: string) => Slot | undefined;
}

/** A reason written only when it changed. */
export const explain = (n: NodeView, reason: string): Action[] =>
  n.stateReason === reason ? [] : [{ type: 'explain', node: n.name, reason }];

/** The agent's reboot mark names an earlier boot: the node rebooted. */
export const bootChanged = (n: NodeView) => Boolean(n.bootIdBefore) && n.bootId !== n.bootIdBefore;

/**
 * The agent marks a reboot still under the boot it started from: the node may be rebooting now. A mark
 * under a changed boot ID is a reboot over (the agent keeps it while the node is Failed).
 */
export const mayBeRebooting = (n: NodeView) => n.rebootInProgress && !bootChanged(n);

/** The attempt ends with nuo's cordon undone, no failure counted: Pending while work is left, else Idle. */
export const endAttempt = (n: NodeView, ctx: StepContext, reason: string): Action => ({
  type: 'end',
  node: n.name,
  reason,
  to: needsWork(n, ctx.now.getTime()) ? Phase.pending : Phase.idle,
});
