/**
 * Maintenance windows: when nuo may start updating nodes, answered for the windows that parseWindows
 * (windows-parse.ts) returns. Pure: every answer is a function of the spec and the `now` passed in, never
 * of the machine's clock or time zone.
 *
 * Rules, each with its reason:
 * - No weekly and no cron window means always open: a window list restricts, an empty one restricts nothing.
 * - Open iff some window contains now and no exclusion does: an exclusion is a freeze, it beats every window.
 * - Every interval is half-open [start, end): back-to-back windows neither overlap nor leave a gap.
 * - Weekly times are wall-clock times in the window's zone (default UTC): "02:00" moves with DST as the
 *   people who chose it do. Times DST skips or repeats are resolved as wall-clock.ts says.
 * - A weekly end at or before its start is on the next day ("22:00"-"02:00"); equal times mean 24 hours.
 * - A cron window opens at each fire time and stays open `duration` (at most 7 days, see
 *   windows-parse.ts). Fire times are cron-parser's; near a DST change it skips or repeats a fire time
 *   depending on where iteration starts, so iteration always starts CRON_WARMUP_MS early, before any
 *   change that could matter, and every answer agrees.
 * - changesAt while open is where the stretch of overlapping or touching windows ends or an exclusion
 *   starts, whichever is first; while closed it is nextOpen, or past the 366-day search the first instant
 *   the search did not examine. Long chains (a window every minute) are followed only so far, so
 *   changesAt may come early, never late: the caller just asks again.
 * - A window that closes does not stop attempts already in progress: that is the caller's job.
 */
import { CronExpressionParser } from 'cron-parser';
import { type CalendarDay, localDays, wallClock } from './wall-clock.ts';
import type {
  ParsedCron,
  ParsedExclusion,
  ParsedWeekly,
  ParsedWindow,
  ParsedWindows,
} from './windows-parse.ts';

export interface WindowState {
  open: boolean;
  reason: string;
  /** The next instant at which `open` may flip: sleep until then. */
  changesAt?: Date;
  /** When closed: the next instant it is open, if within 366 days. */
  nextOpen?: Date;
}

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const HORIZON_MS = 366 * DAY_MS;
/** Longer than any DST shift (1 h today, 2 h historically): cron iteration starts this much earlier. */
const CRON_WARMUP_MS = 3 * HOUR_MS;
/** Overlapping fire times of one cron window followed to find where its open stretch ends. */
const CHAIN_LIMIT = 256;
/** Hand-overs from window to window followed to find where an open stretch ends. */
const UNION_STEPS = 64;

// ---- evaluation ----------------------------------------------------------------------------------

/** Whether updates may start at `now`, why, and when that may change. */
export function windowState(w: ParsedWindows, now: Date): WindowState {
  const t = now.getTime();
  if (Number.isNaN(t)) throw new RangeError('windowState: now is not a valid Date');
  const freeze = w.exclusions.find((e) => e.start <= t && t < e.end);
  if (freeze) return frozenState(w, t, freeze);
  if (w.windows.length === 0) return openState(w, t, 'no maintenance windows: always open');
  const cover = coverAt(w.windows, t);
  return cover ? openState(w, t, `inside window ${cover.label}`) : closedState(w, t);
}

function openState(w: ParsedWindows, t: number, reason: string): WindowState {
  const candidates = [nextFreezeStart(w.exclusions, t)];
  if (w.windows.length > 0) candidates.push(openUntil(w.windows, t));
  const changesAt = earliest(candidates);
  return changesAt === undefined
    ? { open: true, reason }
    : { open: true, reason, changesAt: new Date(changesAt) };
}

function frozenState(w: ParsedWindows, t: number, freeze: ParsedExclusion): WindowState {
  const until = new Date(freezeEnd(w.exclusions, t) ?? freeze.end).toISOString();
  return closed(searchOpen(w, t), `excluded until ${until}${freeze.reason ? `: ${freeze.reason}` : ''}`);
}

function closedState(w: ParsedWindows, t: number): WindowState {
  const search = searchOpen(w, t);
  const next = search.open ? `next opens ${new Date(search.at).toISOString()}` : 'none opens within 366 days';
  return closed(search, `outside every maintenance window; ${next}`);
}

function closed(search: Search, reason: string): WindowState {
  const state: WindowState = { open: false, reason };
  if (search.at !== undefined) state.changesAt = new Date(search.at);
  if (search.open) state.nextOpen = new Date(search.at);
  return state;
}

type Search = { open: true; at: number } | { open: false; at?: number };

/**
 * The first open instant at or after `t`, stepping from freeze ends to window starts; past the horizon,
 * the first instant not examined (open: false). Each step jumps a freeze or returns, so it ends.
 */
function searchOpen(w: ParsedWindows, t: number): Search {
  let at = t;
  while (at - t <= HORIZON_MS) {
    const thawed = freezeEnd(w.exclusions, at);
    if (thawed !== undefined) {
      at = thawed;
      continue;
    }
    if (w.windows.length === 0 || coverAt(w.windows, at)) return { open: true, at };
    const start = earliest(w.windows.map((win) => nextStart(win, at)));
    if (start === undefined) return { open: false };
    at = start;
  }
  return { open: false, at };
}

/** Where the stretch of overlapping or touching windows that contains `t` ends (early past the limits). */
function openUntil(windows: readonly ParsedWindow[], t: number): number {
  let at = t;
  for (let step = 0; step < UNION_STEPS && at - t <= HORIZON_MS; step++) {
    const cover = coverAt(windows, at);
    if (!cover) return at;
    at = cover.end;
    if (cover.capped) return at;
  }
  return at;
}

interface Cover {
  /** The first window, in spec order, that contains the instant. */
  label: string;
  /** The latest end among the windows that contain it. */
  end: number;
  capped: boolean;
}

function coverAt(windows: readonly ParsedWindow[], t: number): Cover | undefined {
  let cover: Cover | undefined;
  for (const win of windows) {
    const found = win.kind === 'weekly' ? weeklyCover(win, t) : cronCover(win, t);
    if (!found) continue;
    cover = cover
      ? { label: cover.label, end: Math.max(cover.end, found.end), capped: cover.capped || found.capped }
      : { label: win.label, ...found };
  }
  return cover;
}

function nextStart(win: ParsedWindow, t: number): number | undefined {
  return win.kind === 'weekly' ? weeklyNextStart(win, t) : cronFires(win, t).next().value;
}

function earliest(instants: readonly (number | undefined)[]): number | undefined {
  const defined = instants.filter((x): x is number => x !== undefined);
  return defined.length > 0 ? Math.min(...defined) : undefined;
}

// ---- exclusions ----------------------------------------------------------------------------------

/** Where the freeze covering `t` ends, following exclusions that overlap or touch; undefined if none does. */
function freezeEnd(exclusions: readonly ParsedExclusion[], t: number): number | undefined {
  let end: number | undefined;
  for (let at = t; ; ) {
    const covering = exclusions.filter((e) => e.start <= at && at < e.end);
    if (covering.length === 0) return end;
    end = Math.max(...covering.map((e) => e.end));
    at = end;
  }
}

function nextFreezeStart(exclusions: readonly ParsedExclusion[], t: number): number | undefined {
  return earliest(exclusions.map((e) => (e.start > t ? e.start : undefined)));
}

// ---- weekly windows ------------------------------------------------------------------------------

/** The end of the occurrence that contains `t`: one starting on t's local date or the day before. */
function weeklyCover(win: ParsedWeekly, t: number): { end: number; capped: false } | undefined {
  for (const { weekday, ...day } of localDays(win.zone, t, -1, 0)) {
    if (!win.weekdays.has(weekday)) continue;
    const { start, end } = weeklyOccurrence(win, day);
    if (start <= t && t < end) return { end, capped: false };
  }
  return undefined;
}

/** The first non-empty occurrence starting after `t`; eight days ahead hold every weekday. */
function weeklyNextStart(win: ParsedWeekly, t: number): number | undefined {
  for (const { weekday, ...day } of localDays(win.zone, t, -1, 8)) {
    if (!win.weekdays.has(weekday)) continue;
    const { start, end } = weeklyOccurrence(win, day);
    if (start > t && end > start) return start;
  }
  return undefined;
}

function weeklyOccurrence(win: ParsedWeekly, day: CalendarDay): { start: number; end: number } {
  const wraps = win.endMinute <= win.startMinute;
  return {
    start: wallClock(win.zone, day, win.startMinute),
    end: wallClock(win.zone, day, win.endMinute + (wraps ? 24 * 60 : 0)),
  };
}

// ---- cron windows --------------------------------------------------------------------------------

/** Fire times after `after`, ascending; iteration starts CRON_WARMUP_MS earlier (see the rules above). */
function* cronFires(win: ParsedCron, after: number): Generator<number, undefined> {
  const currentDate = new Date(after - CRON_WARMUP_MS);
  const expression = CronExpressionParser.parse(win.schedule, { currentDate, tz: win.zone.name });
  for (;;) {
    let fire: number;
    try {
      fire = expression.next().getTime();
    } catch {
      return undefined; // cron-parser gives up on a schedule that no longer fires
    }
    if (fire > after) yield fire;
  }
}

/** The end of the stretch of this window's overlapping occurrences that contains `t`. */
function cronCover(win: ParsedCron, t: number): { end: number; capped: boolean } | undefined {
  const fires = cronFires(win, t - win.durationMs);
  let fire = fires.next();
  if (fire.done || fire.value > t) return undefined;
  let end = fire.value + win.durationMs;
  for (let n = 0; n < CHAIN_LIMIT; n++) {
    fire = fires.next();
    if (fire.done || fire.value > end) return { end, capped: false };
    end = fire.value + win.durationMs;
  }
  return { end, capped: true };
}
