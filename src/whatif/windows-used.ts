/**
 * The maintenance windows a `nuo whatif run` rolled in, on its (simulated) calendar: each pool's open
 * stretches that overlap the run, and the attempts that began in each. Pure.
 *
 * Rules, each with its reason:
 * - A stretch is a run of windows open back to back (windowState's changesAt says where it may end; a
 *   change that leaves it open continues it): what the operator sees as one opening.
 * - Stretches are followed from LOOKBACK_MS before the run, longer than any window (a cron window lasts at
 *   most 7 days), so one already open when the run began shows when it opened; one open for all the
 *   lookback has no known opening.
 * - At most MAX_STEPS changes are followed: a window every minute over a long run stays bounded.
 */
import { windowState } from '../policy/windows.ts';
import type { ParsedWindows } from '../policy/windows-parse.ts';

const DAY_MS = 86_400_000;
const LOOKBACK_MS = 8 * DAY_MS;
const MAX_STEPS = 10_000;

/** An open stretch, in calendar epoch ms: `opens` unknown when open all the lookback, `closes` when never. */
export interface Stretch {
  opens?: number;
  closes?: number;
}

/** The open stretches of `windows` that overlap the calendar span [from, to]. */
export function openStretches(windows: ParsedWindows, from: number, to: number): Stretch[] {
  const out: Stretch[] = [];
  const first = from - LOOKBACK_MS;
  let t = first;
  let opened: number | undefined;
  for (let step = 0; step < MAX_STEPS && t <= to; step++) {
    const state = windowState(windows, new Date(t));
    if (state.open && opened === undefined) opened = t;
    if (!state.open && opened !== undefined) {
      out.push({ ...(opened > first ? { opens: opened } : {}), closes: t });
      opened = undefined;
    }
    const next = state.changesAt?.getTime();
    if (next === undefined || next <= t) {
      t = Number.POSITIVE_INFINITY;
      break;
    }
    t = next;
  }
  if (opened !== undefined)
    out.push({ ...(opened > first ? { opens: opened } : {}), ...(Number.isFinite(t) ? { closes: t } : {}) });
  return out.filter(
    (s) => (s.opens ?? Number.NEGATIVE_INFINITY) <= to && (s.closes ?? Number.POSITIVE_INFINITY) > from,
  );
}

/** Whether the calendar instant `at` falls in the stretch (half-open, as windows are). */
export const inStretch = (s: Stretch, at: number): boolean =>
  (s.opens ?? Number.NEGATIVE_INFINITY) <= at && at < (s.closes ?? Number.POSITIVE_INFINITY);
