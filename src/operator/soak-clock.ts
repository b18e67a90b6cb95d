/**
 * The soak after a reboot is time the operator itself saw the node Ready in its new boot. The Ready
 * condition's lastTransitionTime is written by the kubelet and may lie in a stretch this operator could
 * not see (the API server or etcd hung, this process paused): a soak counted from it can be over the
 * moment the node is first seen, and then nothing was observed at all.
 */
import { Phase } from '../api/phases.ts';
import type { NodeView } from './node-view.ts';

export class SoakClock {
  /** Node → its boot and when this process first saw it Ready in that boot, at the health gate. */
  readonly #seen = new Map<string, { bootId: string; at: number }>();

  /** The view with readySince no earlier than this process's first sight of the node Ready in this boot. */
  view(n: NodeView, now: number): NodeView {
    if (n.state !== Phase.afterReboot || !n.ready) {
      this.#seen.delete(n.name);
      return n;
    }
    let seen = this.#seen.get(n.name);
    if (seen?.bootId !== n.bootId) {
      seen = { bootId: n.bootId, at: now };
      this.#seen.set(n.name, seen);
    }
    const reported = n.readySince?.getTime();
    return reported !== undefined && reported >= seen.at ? n : { ...n, readySince: new Date(seen.at) };
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
