/**
 * The soak after a reboot is time the operator itself saw the node Ready in its new boot, on its own
 * clock. The Ready condition's lastTransitionTime is written by the kubelet, on another machine's clock,
 * and may lie in a stretch this operator could not see (the API server or etcd hung, this process
 * paused): a soak counted from it can be over the moment the node is first seen, or, on a clock behind
 * the kubelet's, not begin for minutes. It serves only to notice that the node went NotReady and came
 * back between two looks: a new transition time starts the soak again, from when this process saw it.
 */
import { Phase } from '../../api/phases.ts';
import type { NodeView } from './node-view.ts';

export class SoakClock {
  /** Node → its boot, its Ready transition as reported, and when this process first saw that, at the gate. */
  readonly #seen = new Map<string, { bootId: string; transition: number | undefined; at: number }>();

  /** The view whose readySince is this process's first sight of the node Ready in this boot and transition. */
  view(n: NodeView, now: number): NodeView {
    if (n.state !== Phase.afterReboot || !n.ready) {
      this.#seen.delete(n.name);
      return n;
    }
    const transition = n.readySince?.getTime();
    let seen = this.#seen.get(n.name);
    if (seen?.bootId !== n.bootId || seen.transition !== transition) {
      seen = { bootId: n.bootId, transition, at: now };
      this.#seen.set(n.name, seen);
    }
    return { ...n, readySince: new Date(seen.at) };
  }

  /** Forgets nodes that no longer exist. */
  prune(live: ReadonlySet<string>): void {
    for (const name of this.#seen.keys()) if (!live.has(name)) this.#seen.delete(name);
  }

  /** A new leadership observes afresh: what was seen before it may have changed unseen since. */
  clear(): void {
    this.#seen.clear();
  }
}
