/**
 * Maintenance windows: when nuo may start updating nodes. Pure: every answer is a function of the spec
 * and the `now` passed in, never of the machine's clock or time zone.
 *
 * Rules, each with its reason:
 * - No weekly and no cron window means always open: a window list restricts, an empty one restricts nothing.
 * - Open iff some window contains now and no exclusion does: an exclusion is a freeze, it beats every window.
 * - Every interval is half-open [start, end): back-to-back windows neither overlap nor leave a gap.
 * - Weekly times are wall-clock times in the window's zone (default UTC): "02:00" moves with DST as the
 *   people who chose it do.
 * - A weekly end at or before its start is on the next day ("22:00"-"02:00"); equal times mean 24 hours.
 * - A wall-clock time a spring-forward skips moves forward by the gap (RFC 5545): 02:30 on 2026-03-29 in
 *   Europe/Berlin is 03:30 CEST, so 02:30-04:00 opens at 03:30 and 02:00-03:00 is empty that day: a
 *   window never opens at a time its zone's clocks never show.
 * - A wall-clock time a fall-back repeats is its first occurrence (RFC 5545): 02:00-03:00 on 2026-10-25
 *   in Europe/Berlin lasts the two hours the clocks read 02:xx, the same answer on every machine (luxon's
 *   DateTime.fromObject picks by the offset at the real current time, so it is not used for this).
 * - A cron window opens at each fire time and stays open `duration` (at most 7 days: a window must close
 *   within a week). Fire times are cron-parser's; near a DST change it skips or repeats a fire time
 *   depending on where iteration starts, so iteration always starts CRON_WARMUP_MS early, before any
 *   change that could matter, and every answer agrees.
 * - Exclusion dates without a time mean midnight in the exclusion's zone; the end is exclusive.
 * - changesAt while open is where the stretch of overlapping or touching windows ends or an exclusion
 *   starts, whichever is first; while closed it is nextOpen, or past the 366-day search the first instant
 *   the search did not examine. Long chains (a window every minute) are followed only so far, so
 *   changesAt may come early, never late: the caller just asks again.
 * - A window that closes does not stop attempts already in progress: that is the caller's job.
 */
import { CronExpressionParser } from 'cron-parser';
import { DateTime, IANAZone } from 'luxon';
import { parseDuration } from '../util/duration.ts';

export const DAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] as const;
export type Day = (typeof DAYS)[number];

/**
 * A weekly window: on `days` (Mon..Sun, three-letter, e.g. "Mon"), from `start` to `end` ("HH:MM", 24 h)
 * in `timeZone` (IANA). end <= start wraps midnight: it ends the next day.
 */
export interface WeeklyWindow {
  days: Day[];
  start: string;
  end: string;
  /** Default "UTC". */
  timeZone?: string;
}
/**
 * A cron window: opens at each fire time of `schedule` (5-field cron) in `timeZone`, stays open
 * `duration` (Go-style "90m", "2h30m", "1h").
 */
export interface CronWindow {
  schedule: string;
  duration: string;
  timeZone?: string;
}
/**
 * Nothing starts from `start` to `end` (RFC 3339 date-times, or dates "YYYY-MM-DD" meaning midnight in
 * timeZone; end exclusive).
 */
export interface Exclusion {
  start: string;
  end: string;
  timeZone?: string;
  reason?: string;
}
export interface WindowSpec {
  weekly?: WeeklyWindow[];
  cron?: CronWindow[];
  exclusions?: Exclusion[];
}

export interface FieldError {
  field: string;
  message: string;
}
export type ParseResult = { ok: true; windows: Windows } | { ok: false; errors: FieldError[] };

/** A weekly window ready to evaluate: ISO weekdays (1 = Mon) and minutes after local midnight. */
export interface ParsedWeekly {
  kind: 'weekly';
  label: string;
  zone: IANAZone;
  weekdays: ReadonlySet<number>;
  startMinute: number;
  endMinute: number;
}
export interface ParsedCron {
  kind: 'cron';
  label: string;
  zone: IANAZone;
  schedule: string;
  durationMs: number;
}
export type ParsedWindow = ParsedWeekly | ParsedCron;
/** Epoch milliseconds, end exclusive. */
export interface ParsedExclusion {
  start: number;
  end: number;
  reason?: string;
}
export interface Windows {
  windows: readonly ParsedWindow[];
  exclusions: readonly ParsedExclusion[];
}

export interface WindowState {
  open: boolean;
  reason: string;
  /** The next instant at which `open` may flip: sleep until then. */
  changesAt?: Date;
  /** When closed: the next instant it is open, if within 366 days. */
  nextOpen?: Date;
}

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;
const MAX_DURATION_MS = 7 * DAY_MS;
const HORIZON_MS = 366 * DAY_MS;
/** Longer than any DST shift (1 h today, 2 h historically): cron iteration starts this much earlier. */
const CRON_WARMUP_MS = 3 * HOUR_MS;
/** Overlapping fire times of one cron window followed to find where its open stretch ends. */
const CHAIN_LIMIT = 256;
/** Hand-overs from window to window followed to find where an open stretch ends. */
const UNION_STEPS = 64;
const CLOCK = /^([01]\d|2[0-3]):([0-5]\d)$/;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;
const CRON_FIELDS = 'minute hour day-of-month month day-of-week';

// ---- parsing -------------------------------------------------------------------------------------

/** Validates the whole spec at once: every error, each with the path of the field it is about. */
export function parseWindows(spec: WindowSpec): ParseResult {
  const errors: FieldError[] = [];
  const windows: ParsedWindow[] = [];
  const exclusions: ParsedExclusion[] = [];
  (spec.weekly ?? []).forEach((w, i) => {
    const parsed = parseWeekly(w, `windows.weekly[${i}]`, errors);
    if (parsed) windows.push(parsed);
  });
  (spec.cron ?? []).forEach((c, i) => {
    const parsed = parseCron(c, `windows.cron[${i}]`, errors);
    if (parsed) windows.push(parsed);
  });
  (spec.exclusions ?? []).forEach((e, i) => {
    const parsed = parseExclusion(e, `windows.exclusions[${i}]`, errors);
    if (parsed) exclusions.push(parsed);
  });
  return errors.length > 0 ? { ok: false, errors } : { ok: true, windows: { windows, exclusions } };
}

function parseWeekly(w: WeeklyWindow, path: string, errors: FieldError[]): ParsedWeekly | undefined {
  const zone = parseZone(w.timeZone, `${path}.timeZone`, errors);
  const weekdays = parseDays(w.days, `${path}.days`, errors);
  const startMinute = parseClock(w.start, `${path}.start`, errors);
  const endMinute = parseClock(w.end, `${path}.end`, errors);
  if (!zone || !weekdays || startMinute === undefined || endMinute === undefined) return undefined;
  const label = `${dayRanges(weekdays)} ${w.start}-${w.end} ${zone.name}`;
  return { kind: 'weekly', label, zone, weekdays, startMinute, endMinute };
}

function parseCron(c: CronWindow, path: string, errors: FieldError[]): ParsedCron | undefined {
  const zone = parseZone(c.timeZone, `${path}.timeZone`, errors);
  const schedule = parseSchedule(c.schedule, zone, `${path}.schedule`, errors);
  const durationMs = parseWindowDuration(c.duration, `${path}.duration`, errors);
  if (!zone || schedule === undefined || durationMs === undefined) return undefined;
  const label = `cron "${schedule}" for ${c.duration} ${zone.name}`;
  return { kind: 'cron', label, zone, schedule, durationMs };
}

function parseExclusion(e: Exclusion, path: string, errors: FieldError[]): ParsedExclusion | undefined {
  const zone = parseZone(e.timeZone, `${path}.timeZone`, errors);
  const start = parseInstant(e.start, zone, `${path}.start`, errors);
  const end = parseInstant(e.end, zone, `${path}.end`, errors);
  if (start === undefined || end === undefined) return undefined;
  if (end <= start) {
    const message =
      `end ${show(e.end)} is not after start ${show(e.start)}: ` +
      'an exclusion must end after it starts (the end is exclusive)';
    errors.push({ field: `${path}.end`, message });
    return undefined;
  }
  return typeof e.reason === 'string' && e.reason !== '' ? { start, end, reason: e.reason } : { start, end };
}

/** An IANA zone; absent means UTC. Offsets such as "+01:00" are refused: they never follow DST. */
function parseZone(value: unknown, field: string, errors: FieldError[]): IANAZone | undefined {
  if (value === undefined) return IANAZone.create('UTC');
  if (typeof value === 'string' && /^[A-Za-z]/.test(value) && IANAZone.isValidZone(value)) {
    return IANAZone.create(value);
  }
  errors.push({
    field,
    message: `unknown time zone ${show(value)}: use an IANA name such as "Europe/Berlin"`,
  });
  return undefined;
}

/** ISO weekdays (1 = Mon); an empty list, an unknown name or a repeated day is an error. */
function parseDays(value: unknown, field: string, errors: FieldError[]): Set<number> | undefined {
  const accepted = `list one or more of ${DAYS.join(', ')}`;
  if (!Array.isArray(value) || value.length === 0) {
    errors.push({ field, message: `no days given (got ${show(value)}): ${accepted}` });
    return undefined;
  }
  const weekdays = new Set<number>();
  const before = errors.length;
  value.forEach((day: unknown, i) => {
    const weekday = (DAYS as readonly unknown[]).indexOf(day) + 1;
    if (weekday === 0) {
      errors.push({
        field: `${field}[${i}]`,
        message: `unknown day ${show(day)}: use one of ${DAYS.join(', ')}`,
      });
    } else if (weekdays.has(weekday)) {
      errors.push({
        field: `${field}[${i}]`,
        message: `day ${show(day)} is listed twice: list each day once`,
      });
    } else {
      weekdays.add(weekday);
    }
  });
  return errors.length === before ? weekdays : undefined;
}

/** "HH:MM" (24 h) as minutes after midnight. */
function parseClock(value: unknown, field: string, errors: FieldError[]): number | undefined {
  const match = typeof value === 'string' ? CLOCK.exec(value) : null;
  if (match) return Number(match[1]) * 60 + Number(match[2]);
  errors.push({ field, message: `invalid time ${show(value)}: use 24-hour "HH:MM" from "00:00" to "23:59"` });
  return undefined;
}

/**
 * A standard 5-field schedule, as cron-parser reads it. Its 6-field (seconds) form and @-macros are
 * refused to keep the spec's meaning plain; so is H, which cron-parser fills with a random value.
 */
function parseSchedule(value: unknown, zone: IANAZone | undefined, field: string, errors: FieldError[]) {
  const hint = `use 5 fields (${CRON_FIELDS}), e.g. "30 1 * * *"`;
  const fields = typeof value === 'string' ? value.trim().split(/\s+/).filter(Boolean) : [];
  let message: string | undefined;
  if (fields.length !== 5) {
    message = `cron schedule ${show(value)} has ${fields.length} fields: ${hint}`;
  } else if (fields.some((f) => /(^|,)H/.test(f))) {
    message = `cron schedule ${show(value)} uses H, which stands for a random value: use explicit values`;
  } else {
    try {
      CronExpressionParser.parse(fields.join(' '), { currentDate: new Date(0), tz: zone?.name ?? 'UTC' });
      return fields.join(' ');
    } catch (err) {
      message = `invalid cron schedule ${show(value)} (${(err as Error).message}): ${hint}`;
    }
  }
  errors.push({ field, message });
  return undefined;
}

/** A Go duration, more than zero and at most 7 days. */
function parseWindowDuration(value: unknown, field: string, errors: FieldError[]): number | undefined {
  const text = typeof value === 'string' ? value : '';
  const sign = /^[-+]/.test(text) ? text.charAt(0) : '';
  let ms: number;
  try {
    ms = parseDuration(text.slice(sign.length));
  } catch {
    const message = `invalid duration ${show(value)}: use a Go duration such as "90m", "2h30m" or "1h"`;
    errors.push({ field, message });
    return undefined;
  }
  if (sign === '-' || ms === 0) {
    errors.push({ field, message: `duration ${show(value)} is not positive: use a length such as "1h"` });
  } else if (ms > MAX_DURATION_MS) {
    errors.push({ field, message: `duration ${show(value)} is longer than 7 days: use at most "168h"` });
  } else {
    return ms;
  }
  return undefined;
}

/** An RFC 3339 date-time, or a date meaning midnight in `zone` (undefined when the zone was invalid). */
function parseInstant(value: unknown, zone: IANAZone | undefined, field: string, errors: FieldError[]) {
  if (typeof value === 'string') {
    const date = DATE.exec(value);
    if (date) {
      const day = { year: Number(date[1]), month: Number(date[2]), day: Number(date[3]) };
      if (DateTime.utc(day.year, day.month, day.day).isValid) return zone && wallClock(zone, day, 0);
    } else if (DATE_TIME.test(value)) {
      const parsed = DateTime.fromISO(value.toUpperCase(), { setZone: true });
      if (parsed.isValid) return parsed.toMillis();
    }
  }
  const accepted = 'use an RFC 3339 date-time such as "2026-12-24T00:00:00Z" or a date such as "2026-12-24"';
  errors.push({ field, message: `invalid date ${show(value)}: ${accepted}` });
  return undefined;
}

function show(value: unknown): string {
  return value === undefined ? '(missing)' : JSON.stringify(value);
}

/** "Mon-Fri", "Sat,Sun", "Mon,Wed-Fri": runs of three or more days as ranges. */
function dayRanges(weekdays: ReadonlySet<number>): string {
  const name = (weekday: number) => DAYS[weekday - 1] ?? '?';
  const runs: string[] = [];
  for (let first = 1; first <= 7; first++) {
    if (!weekdays.has(first) || weekdays.has(first - 1)) continue;
    let last = first;
    while (weekdays.has(last + 1)) last++;
    const sep = last - first >= 2 ? '-' : ',';
    runs.push(last === first ? name(first) : `${name(first)}${sep}${name(last)}`);
  }
  return runs.join(',');
}

// ---- evaluation ----------------------------------------------------------------------------------

/** Whether updates may start at `now`, why, and when that may change. */
export function windowState(w: Windows, now: Date): WindowState {
  const t = now.getTime();
  if (Number.isNaN(t)) throw new RangeError('windowState: now is not a valid Date');
  const freeze = w.exclusions.find((e) => e.start <= t && t < e.end);
  if (freeze) return frozenState(w, t, freeze);
  if (w.windows.length === 0) return openState(w, t, 'no maintenance windows: always open');
  const cover = coverAt(w.windows, t);
  return cover ? openState(w, t, `inside window ${cover.label}`) : closedState(w, t);
}

function openState(w: Windows, t: number, reason: string): WindowState {
  const candidates = [nextFreezeStart(w.exclusions, t)];
  if (w.windows.length > 0) candidates.push(openUntil(w.windows, t));
  const changesAt = earliest(candidates);
  return changesAt === undefined
    ? { open: true, reason }
    : { open: true, reason, changesAt: new Date(changesAt) };
}

function frozenState(w: Windows, t: number, freeze: ParsedExclusion): WindowState {
  const until = new Date(freezeEnd(w.exclusions, t) ?? freeze.end).toISOString();
  return closed(searchOpen(w, t), `excluded until ${until}${freeze.reason ? `: ${freeze.reason}` : ''}`);
}

function closedState(w: Windows, t: number): WindowState {
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
function searchOpen(w: Windows, t: number): Search {
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

interface CalendarDay {
  year: number;
  month: number;
  day: number;
}

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

type LocalDay = CalendarDay & { weekday: number };

/** Calendar dates from `from` to `to` days after t's local date in `zone`, with ISO weekdays. */
function localDays(zone: IANAZone, t: number, from: number, to: number): LocalDay[] {
  const local = DateTime.fromMillis(t, { zone });
  const base = DateTime.utc(local.year, local.month, local.day);
  const days: LocalDay[] = [];
  for (let k = from; k <= to; k++) {
    const d = base.plus({ days: k });
    days.push({ year: d.year, month: d.month, day: d.day, weekday: d.weekday });
  }
  return days;
}

/**
 * The instant at which clocks in `zone` show `minutes` after midnight of `day` (past 24 h runs into the
 * next days): a repeated time is its first occurrence, a skipped one uses the offset before the gap,
 * which moves it forward by the gap (RFC 5545). Offsets a day either side are the candidates.
 */
function wallClock(zone: IANAZone, day: CalendarDay, minutes: number): number {
  const local = Date.UTC(day.year, day.month - 1, day.day, 0, minutes);
  const before = zone.offset(local - DAY_MS);
  const after = zone.offset(local + DAY_MS);
  const shows = (instant: number) => instant + zone.offset(instant) * MINUTE_MS === local;
  const candidates = [local - before * MINUTE_MS, local - after * MINUTE_MS].filter(shows);
  return candidates.length > 0 ? Math.min(...candidates) : local - before * MINUTE_MS;
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
