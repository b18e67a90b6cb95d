/**
 * What the operator's /healthz (liveness) and /readyz (readiness) answer. Liveness: the process is not
 * wedged — its node informer keeps making progress (events, bookmarks, lists, or failures it retries)
 * and its leader election is still running; an unreachable API server is not a reason to restart it.
 * Readiness: its node cache is synced and fresh, so a replica that would decide on a stale cache does
 * not count as ready.
 */
import type { InformerStats } from '../kube/informer.ts';

export interface ProbeInput {
  /** Date.now(). */
  now: number;
  informer: Pick<
    InformerStats,
    'synced' | 'events' | 'errors' | 'relists' | 'watchdogFires' | 'lastEventTime' | 'lastSyncTime'
  >;
  /** The informer's watchdog: a watch silent this long is replaced. */
  watchdogMs: number;
  /** The leader election loop has ended while the process runs on (it ends only at shutdown). */
  electionEnded: boolean;
}

/** Remembers when the informer last made progress, to tell a quiet loop from a stuck one. */
export class Progress {
  #count = -1;
  #at = 0;

  /** The time (ms) of the last change of `count`, updated with `now`. */
  observe(count: number, now: number): number {
    if (count !== this.#count) {
      this.#count = count;
      this.#at = now;
    }
    return this.#at;
  }
}

/** Why the process is not live; empty when it is. */
export function liveness(i: ProbeInput, lastProgressAt: number): string[] {
  const problems: string[] = [];
  if (i.electionEnded) problems.push('leader election is not running');
  const still = i.now - lastProgressAt;
  // The watchdog replaces a silent watch, so a loop that runs changes its counters at least that often.
  if (still > 3 * i.watchdogMs)
    problems.push(`the node informer made no progress for ${Math.round(still / 1000)}s`);
  return problems;
}

/** Why the replica is not ready; empty when it is. */
export function readiness(i: ProbeInput): string[] {
  if (!i.informer.synced) return ['the node cache has not synced yet'];
  const heard = Math.max(i.informer.lastEventTime ?? 0, i.informer.lastSyncTime ?? 0);
  const silence = i.now - heard;
  return silence > 2 * i.watchdogMs
    ? [`the node cache heard nothing from the API server for ${Math.round(silence / 1000)}s`]
    : [];
}

/** The count whose changes show the informer's loop at work. */
export const informerProgress = (s: ProbeInput['informer']) =>
  s.events + s.errors + s.relists + s.watchdogFires;
