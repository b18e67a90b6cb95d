/** Which informer events are news to the reconcile loop. */
import { needWithdrawnAfterGrant } from './boot-witness.ts';
import type { NodeView } from './node-view.ts';

/**
 * Whether two views differ in anything a decision reads. A kubelet's status heartbeat changes only the
 * resourceVersion and condition heartbeat times: no reason to reconcile the whole cluster again, except
 * for a node whose withdrawn need waits for exactly that post (boot-witness.ts), which nothing else
 * would bring to a pass.
 */
export function sameView(a: NodeView, b: NodeView): boolean {
  const bare = (v: NodeView) =>
    JSON.stringify({ ...v, resourceVersion: '', heartbeat: needWithdrawnAfterGrant(v) ? v.heartbeat : '' });
  return bare(a) === bare(b);
}
