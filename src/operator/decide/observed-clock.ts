/**
 * One clock per decision (safety rule 10): every wait and timeout is measured on this process's own
 * monotonic clock, from when it first saw the state it waits on. A time written on an object is another
 * process's clock — a phase's state-since by another leader, a Ready transition by a kubelet, the ledger's
 * last grant by the leader before — and tells only that something changed: a new value starts the wait
 * afresh, from when this process saw it. A new leader starts every wait afresh too. That only ever makes
 * a wait longer, which is safe: a soak, a backoff, a grant spacing or a rate window is a minimum, and a
 * timeout that fires later keeps the node in its slot (fail closed).
 *
 * Times are kept on the monotonic clock and given back as wall times of the pass deciding (`now` less the
 * monotonic time since), so a wall clock stepped back or forth (NTP, a VM resumed) moves no wait.
 */
import { Annotations } from '../../api/keys.ts';
import { Phase } from '../../api/phases.ts';
import type { NodeView } from './node-view.ts';

/**
 * When the deciding process first saw `key` hold `mark` (ms, wall time of the pass). `written` is the
 * time its writer wrote, which only AS_WRITTEN uses: for readers that observe nothing over time (a
 * person's `nuo status`), never for the operator's decisions.
 */
export type Observed = (key: string, mark: string, written: number) => number;
export const AS_WRITTEN: Observed = (_key, _mark, written) => written;

/** A pass's two clocks: the wall clock decisions read calendars by, and the monotonic one waits count on. */
export interface PassClock {
  /** Wall clock, ms since the epoch. */
  now: number;
  /** Monotonic clock, ms (performance.now()). */
  mono: number;
}

export class ObservedClock {
  /** Key → the value it was first seen holding, and when (monotonic ms). */
  readonly #seen = new Map<string, { mark: string; at: number }>();
  /** Keys looked at since the last sweep. */
  #touched = new Set<string>();

  /**
   * When this process first saw `key` hold `mark`, as a wall time of the pass at `clock`: a new mark
   * starts afresh now.
   */
  since(key: string, mark: string, clock: PassClock): number {
    this.#touched.add(key);
    let seen = this.#seen.get(key);
    if (seen?.mark !== mark) {
      seen = { mark, at: clock.mono };
      this.#seen.set(key, seen);
    }
    return clock.now - (clock.mono - seen.at);
  }

  /**
   * The node with its times on this clock: its phase's since when this process first saw the phase (as
   * written: the phase and its state-since), and, at the health gate, its Ready since when this process
   * first saw it Ready in its boot and transition (the kubelet's transition time serves only to notice
   * that it went NotReady and back between two looks). Elsewhere Ready is not tracked: NotReady, or
   * another phase, forgets it, so the soak starts over.
   */
  view(n: NodeView, clock: PassClock): NodeView {
    const written = n.annotations[Annotations.stateSince];
    const stateSince =
      written === undefined || n.stateSince === undefined
        ? n.stateSince
        : new Date(this.since(`phase/${n.name}`, `${n.state ?? ''}|${written}`, clock));
    const atGate = n.state === Phase.afterReboot && n.ready;
    const readySince = atGate
      ? new Date(this.since(`ready/${n.name}`, `${n.bootId}|${n.readySince?.getTime()}`, clock))
      : n.readySince;
    return { ...n, ...(stateSince ? { stateSince } : {}), ...(readySince ? { readySince } : {}) };
  }

  /** This clock as an Observed for the pass at `clock`. */
  observed(clock: PassClock): Observed {
    return (key, mark) => this.since(key, mark, clock);
  }

  /** Forgets every key not looked at since the last sweep (nodes deleted, phases left, records gone). */
  sweep(): void {
    for (const key of this.#seen.keys()) if (!this.#touched.has(key)) this.#seen.delete(key);
    this.#touched = new Set();
  }

  /** A new leadership observes afresh: what was seen before it may have changed unseen since. */
  clear(): void {
    this.#seen.clear();
    this.#touched = new Set();
  }
}
