/**
 * A node is back when its kubelet says so (safety rule 11). After a grant, another project's agent (CLUO's,
 * FLUO's) or a FleetLock client (Zincati) may report on the node's new boot — its need withdrawn, its
 * steady-state — before the kubelet there has posted the new boot ID: read then, the need looks withdrawn
 * before any reboot, and ending the attempt would skip the health gate. So a withdrawal after a grant
 * ends the attempt only once the kubelet has posted the node's status again after this leader first saw
 * the withdrawal, Ready, with the boot ID the grant was given on (the node did not reboot); a new boot ID
 * is a reboot, and the health gate follows. What "again" means is a new Ready heartbeat value: compared only
 * with itself, never with a clock. Until then (or the reboot timeout) the attempt waits.
 */
import { Phase } from '../../api/phases.ts';
import type { NodeView } from './node-view.ts';
import { bootChanged } from './step-context.ts';

/** The phases that hold a grant: its own two, and Failed, which keeps it (a reboot timeout passed). */
const GRANT_PHASES: ReadonlySet<Phase | undefined> = new Set([
  Phase.rebootGranted,
  Phase.rebooting,
  Phase.failed,
]);

/**
 * After a grant, the agent of another project (or a FleetLock client) no longer asks for a reboot and
 * marks none, and no new boot ID is posted: its need withdrawn, or its report on a boot the kubelet has
 * not posted yet. A Failed node is among them: a kubelet that confirms the granted boot only after the
 * reboot timeout (its status report comes every five minutes by default) still ends the attempt.
 */
export function needWithdrawnAfterGrant(n: NodeView): boolean {
  return (
    n.protocol !== undefined &&
    GRANT_PHASES.has(n.state) &&
    !n.rebootNeeded &&
    !n.rebootInProgress &&
    !bootChanged(n)
  );
}

export class BootWitness {
  /** Node → its boot and the kubelet's heartbeat when this leader first saw the withdrawal. */
  readonly #first = new Map<string, { bootId: string; heartbeat: string | undefined }>();

  /**
   * The node with `bootConfirmed` once its kubelet posted the same boot after the withdrawal was seen.
   * Whether the need is withdrawn is read in the keys its agent speaks (`spoken`: the view through its
   * protocol); the flag goes on `n`, the view by nuo's keys, which the pass speaks later.
   */
  view(n: NodeView, spoken: NodeView = n): NodeView {
    if (!needWithdrawnAfterGrant(spoken)) {
      this.#first.delete(n.name);
      return n;
    }
    const first = this.#first.get(n.name);
    if (first?.bootId !== n.bootId) {
      this.#first.set(n.name, { bootId: n.bootId, heartbeat: n.heartbeat });
      return n;
    }
    // Only a Ready post confirms the boot: NotReady on it is a machine going down, not staying up.
    return first.heartbeat !== n.heartbeat && n.ready ? { ...n, bootConfirmed: true } : n;
  }

  /** Forgets nodes that no longer exist. */
  prune(live: ReadonlySet<string>): void {
    for (const name of this.#first.keys()) if (!live.has(name)) this.#first.delete(name);
  }

  /** A new leadership observes afresh: a withdrawal seen before may have been followed by anything. */
  clear(): void {
    this.#first.clear();
  }
}
