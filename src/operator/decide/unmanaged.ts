/**
 * What nuo writes on nodes outside every pool (no policy selects them, or two do): it manages none of
 * them, so it takes its reboot-pending taints off (a taint left behind would steer pods away for good),
 * and a node it managed before, or one two policies claim, says why it is left alone now instead of the
 * reason its last attempt left ("rebooted and healthy").
 */
import type { Action } from './action.ts';
import { outsideAttempt } from './need.ts';
import type { NodeView } from './node-view.ts';

/** Why a node outside every pool is left alone: the policies that both select it, or none does. */
export function unmanagedReason(conflict: readonly string[] | undefined): string {
  return conflict
    ? `left alone: UpdatePolicies ${conflict.join(' and ')} both select it; nuo manages it again once one does`
    : 'left alone: no UpdatePolicy selects it';
}

/**
 * The writes of this pass on nodes outside every pool, one per node at most. A node in an attempt keeps
 * its reason (the attempt's steps write it); an unmatched node nuo never explained gets no annotation.
 */
export function unmanagedWrites(
  nodes: readonly NodeView[],
  plan: { unmatched: readonly string[]; conflicts: ReadonlyMap<string, readonly string[]> },
): Action[] {
  const unmatched = new Set(plan.unmatched);
  const actions: Action[] = [];
  for (const n of nodes) {
    const conflict = plan.conflicts.get(n.name);
    if (!conflict && !unmatched.has(n.name)) continue;
    const reason = unmanagedReason(conflict);
    const explain =
      outsideAttempt(n) &&
      n.stateReason !== reason &&
      (conflict !== undefined || n.stateReason !== undefined);
    const untaint = n.pendingTaints > 0;
    if (explain) actions.push({ type: 'explain', node: n.name, reason, ...(untaint ? { taint: 0 } : {}) });
    else if (untaint) actions.push({ type: 'taint', node: n.name, count: 0 });
  }
  return actions;
}
