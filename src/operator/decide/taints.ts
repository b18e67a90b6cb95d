/**
 * The reboot-pending taints: on every node outside an attempt that waits for a reboot, on no other node
 * outside one (nodes in an attempt keep what they had until the write that ends it removes them). They
 * ride on the node's write of this pass where there is one, else they are a write of their own.
 *
 * As many as make a waiting node's PreferNoSchedule taints the most of any node's. kube-scheduler's
 * TaintToleration scores a node by its soft taints relative to the most any candidate carries, 0 to 100,
 * weight 3; PodTopologySpread scores at most 100, weight 2. A waiting node with the most loses 300 points
 * to an untainted node, which zone spreading cannot make up; with one taint against a node's two it would
 * lose only 150 (decision 0065).
 */
import type { V1Taint } from '@kubernetes/client-node';
import { SLOT_PHASES } from '../../api/phases.ts';
import type { Action } from './action.ts';
import type { DecideConfig } from './decide-input.ts';
import { needsReboot, nextPlan } from './need.ts';
import { isPendingTaint, type NodeView } from './node-view.ts';

/**
 * Whether some node can take evicted pods for good: Ready, schedulable, in no attempt and not waiting for
 * a drain (a paused one counts: it is untainted, and pods go there). While none can, every pod a drain
 * evicts moves again, so the first wave goes to the nodes with the fewest pods (decide.ts firstWavePods).
 */
export function landingExists(nodes: readonly NodeView[], t: number): boolean {
  return nodes.some(
    (n) =>
      n.ready &&
      !n.unschedulable &&
      !(n.state && SLOT_PHASES.has(n.state)) &&
      (n.paused || !waitsForDrain(n, t)),
  );
}

/** The node's PreferNoSchedule taints that are not nuo's. */
function softTaints(taints: readonly V1Taint[]): number {
  return taints.filter((t) => t.effect === 'PreferNoSchedule' && !isPendingTaint(t.key)).length;
}

/** The most PreferNoSchedule taints other than nuo's on any of `nodes` (every node of the cluster). */
export function softTaintsMost(nodes: readonly NodeView[]): number {
  let most = 0;
  for (const n of nodes) most = Math.max(most, softTaints(n.taints));
  return most;
}

/** Reboot-pending taints for a waiting node: its soft taints then number one more than any other node's. */
export function pendingTaintCount(n: NodeView, most: number): number {
  return Math.max(1, most + 1 - softTaints(n.taints));
}

type Write = Extract<Action, { type: 'pending' | 'explain' | 'transition' }>;

/** Sets `taint` (a count) on this pass's writes and returns the taint-only writes still needed. */
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
    const want =
      c.pendingTaint && !n.paused && waitsForDrain(n, t) ? pendingTaintCount(n, c.softTaintsMost ?? 0) : 0;
    if (n.pendingTaints === want) continue;
    const write = writes.get(n.name);
    if (write) write.taint = want;
    else extra.push({ type: 'taint', node: n.name, count: want });
  }
  return extra;
}

/** The node's next attempt drains it: a reboot, or a Plan that drains. */
function waitsForDrain(n: NodeView, t: number): boolean {
  const plan = nextPlan(n, t);
  return plan ? plan.prepare === 'drain' : needsReboot(n, t) !== undefined;
}
