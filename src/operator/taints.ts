/**
 * The reboot-pending taint: on every node outside an attempt that waits for a reboot, on no other node
 * outside one (nodes in an attempt keep what they had until the write that ends it removes it). It rides
 * on the node's write of this pass where there is one, else it is a write of its own.
 */
import type { Action, DecideConfig } from './decide.ts';
import { needsReboot, nextPlan } from './need.ts';
import type { NodeView } from './node-view.ts';

type Write = Extract<Action, { type: 'pending' | 'explain' | 'transition' }>;

/** Sets `taint` on this pass's writes and returns the taint-only writes still needed. */
export function pendingTaints(
  actions: readonly Action[],
  nodes: readonly NodeView[],
  inAttempt: (name: string) => boolean,
  c: DecideConfig,
  t: number,
): Action[] {
  // Indexed by node: a scan of the actions per node would be quadratic in the cluster's size.
  const admitted = new Set<string>();
  const writes = new Map<string, Write>();
  for (const a of actions) {
    if (a.type === 'admit') admitted.add(a.node);
    else if (a.type === 'pending' || a.type === 'explain' || a.type === 'transition') writes.set(a.node, a);
  }
  const extra: Action[] = [];
  for (const n of nodes) {
    if (inAttempt(n.name) || admitted.has(n.name)) continue;
    const want = c.pendingTaint && !n.paused && waitsForDrain(n, t);
    if (n.pendingTaint === want) continue;
    const write = writes.get(n.name);
    if (write) write.taint = want;
    else extra.push({ type: 'taint', node: n.name, present: want });
  }
  return extra;
}

/** The node's next attempt drains it: a reboot, or a Plan that drains. */
function waitsForDrain(n: NodeView, t: number): boolean {
  const plan = nextPlan(n, t);
  return plan ? plan.prepare === 'drain' : needsReboot(n, t) !== undefined;
}

/**
 * The taint off nodes outside every pool (no policy selects them, or two do): nuo manages none of them,
 * so none waits for a reboot of nuo's, and a taint nuo left on one would steer pods away from it for good.
 */
export function untaintUnmanaged(nodes: readonly NodeView[], unmanaged: ReadonlySet<string>): Action[] {
  return nodes
    .filter((n) => n.pendingTaint && unmanaged.has(n.name))
    .map((n) => ({ type: 'taint', node: n.name, present: false }) as const);
}
