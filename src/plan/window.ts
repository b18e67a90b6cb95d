/**
 * A Plan's window (SUC's, which is kured's timewindow): on each of its days, in its zone, from startTime
 * to endTime. Rules, each with its reason:
 * - The day is the local day of the instant asked about, as kured does: with an end before the start, a
 *   listed day holds both its early hours up to the end and its late hours from the start, so Friday
 *   22:00-02:00 covers Friday 00:00-02:00 and 22:00-24:00, and Saturday only when Saturday is listed too.
 * - An end at or before the start wraps midnight (so equal times mean the whole day, never an empty
 *   window that would hold a Plan back silently).
 * - The end is inclusive to the end of its second ("17:00" ends at 17:00:00.999), as kured.
 * - Times are compared on the zone's clock: an hour a spring-forward skips has no instant in the window,
 *   an hour a fall-back repeats is in it twice (what the clocks on the wall say is what people wrote).
 * - Times are kured's forms ("15:04", "15:04:05", "15", "03:04pm", "03pm", "3pm") and also "3:04pm" and
 *   upper-case AM/PM: every time kured reads means the same here.
 */
import { DateTime, IANAZone } from 'luxon';
import type { PlanWindow as PlanWindowSpec } from '../api/plan.ts';
import type { FieldError } from '../policy/field-error.ts';
import { localDays, wallClock } from '../policy/wall-clock.ts';

export interface PlanWindow {
  contains(t: number): boolean;
  /** The first instant after t at which contains changes, or undefined when it never does. */
  nextChange(t: number): number | undefined;
}

export type WindowResult = { ok: true; window: PlanWindow } | { ok: false; errors: FieldError[] };

const DAY_NAMES: Record<string, number> = {};
for (const [weekday, names] of [
  [7, ['su', 'sun', 'sunday']],
  [1, ['mo', 'mon', 'monday']],
  [2, ['tu', 'tue', 'tuesday']],
  [3, ['we', 'wed', 'wednesday']],
  [4, ['th', 'thu', 'thursday']],
  [5, ['fr', 'fri', 'friday']],
  [6, ['sa', 'sat', 'saturday']],
] as const) {
  for (const n of names) DAY_NAMES[n] = weekday;
  DAY_NAMES[String(weekday % 7)] = weekday;
}

/** An ISO weekday (1 Monday .. 7 Sunday) from a kured day: a number 0 (Sunday) to 6, or a name. */
export function parseDay(day: string): number | undefined {
  return DAY_NAMES[day.toLowerCase()];
}

const SECOND_MS = 1000;
const MINUTE_MS = 60 * SECOND_MS;

/** Milliseconds after midnight of a kured time, or undefined. */
export function parseTimeOfDay(text: string): number | undefined {
  const h24 = /^([01]?[0-9]|2[0-3])(?::([0-5][0-9]))?(?::([0-5][0-9]))?$/.exec(text);
  const h12 = /^(0?[1-9]|1[0-2])(?::([0-5][0-9]))?\s?([ap]m)$/i.exec(text);
  const m = h24 ?? h12;
  if (!m) return undefined;
  let hours = Number(m[1]);
  if (h12) hours = (hours % 12) + (m[3]?.toLowerCase() === 'pm' ? 12 : 0);
  const seconds = h12 ? 0 : Number(m[3] ?? 0);
  return ((hours * 60 + Number(m[2] ?? 0)) * 60 + seconds) * SECOND_MS;
}

/** The window of a Plan, or every problem with it by field (under `window.`). */
export function planWindow(spec: PlanWindowSpec): WindowResult {
  const errors: FieldError[] = [];
  const days = new Set<number>();
  for (const [i, d] of (spec.days ?? []).entries()) {
    const weekday = parseDay(d);
    if (weekday === undefined) errors.push({ field: `window.days[${i}]`, message: `unknown day "${d}"` });
    else days.add(weekday);
  }
  if (days.size === 0 && errors.length === 0) {
    errors.push({ field: 'window.days', message: 'name at least one day, e.g. [sat, sun]' });
  }
  const time = (value: string | undefined, field: 'startTime' | 'endTime') => {
    const ms = value === undefined ? undefined : parseTimeOfDay(value);
    if (ms === undefined) {
      errors.push({
        field: `window.${field}`,
        message: `${value === undefined ? 'missing' : `"${value}" is not a time`}: write e.g. "22:00" or "10pm"`,
      });
    }
    return ms ?? 0;
  };
  const start = time(spec.startTime, 'startTime');
  const end = time(spec.endTime, 'endTime') + SECOND_MS - 1;
  const zoneName = spec.timeZone || 'UTC';
  if (!/^[A-Za-z]/.test(zoneName) || !IANAZone.isValidZone(zoneName)) {
    errors.push({ field: 'window.timeZone', message: `unknown time zone "${zoneName}": use an IANA name` });
  }
  if (errors.length > 0) return { ok: false, errors };
  const zone = IANAZone.create(zoneName);
  const wraps = end - (SECOND_MS - 1) <= start;

  const contains = (t: number) => {
    const local = DateTime.fromMillis(t, { zone });
    if (!days.has(local.weekday)) return false;
    const tod = ((local.hour * 60 + local.minute) * 60 + local.second) * SECOND_MS + local.millisecond;
    return wraps ? tod >= start || tod <= end : tod >= start && tod <= end;
  };

  const nextChange = (t: number) => {
    const now = contains(t);
    // contains changes only at a local midnight, a start, or just after an end: try those in order
    // over the next eight local days (one more than a week, as a window may wrap into the next day).
    const candidates = localDays(zone, t, 0, 8).flatMap((day) => {
      const times = [0, start, end + 1].map(
        (ms) => wallClock(zone, day, Math.floor(ms / MINUTE_MS)) + (ms % MINUTE_MS),
      );
      // A skipped time's window opens (or closes) when the clocks jump past it: the offset change.
      const shift = offsetChange(zone, wallClock(zone, day, 0), wallClock(zone, day, 24 * 60));
      return shift === undefined ? times : [...times, shift];
    });
    return candidates
      .filter((c) => c > t)
      .sort((a, b) => a - b)
      .find((c) => contains(c) !== now);
  };
  return { ok: true, window: { contains, nextChange } };
}

/** The minute in [from, to) at which the zone's offset changes, if it does (one change a day at most). */
function offsetChange(zone: IANAZone, from: number, to: number): number | undefined {
  const before = zone.offset(from);
  if (zone.offset(to) === before) return undefined;
  let [lo, hi] = [from, to];
  while (hi - lo > MINUTE_MS) {
    const mid = lo + Math.floor((hi - lo) / 2 / MINUTE_MS) * MINUTE_MS;
    if (zone.offset(mid) === before) lo = mid;
    else hi = mid;
  }
  return hi;
}
