/**
 * Wall-clock times in an IANA zone: which instant the zone's clocks show a given local time, the same
 * answer on every machine.
 *
 * Rules, each with its reason:
 * - A wall-clock time a spring-forward skips moves forward by the gap (RFC 5545): 02:30 on 2026-03-29 in
 *   Europe/Berlin is 03:30 CEST, so 02:30-04:00 opens at 03:30 and 02:00-03:00 is empty that day: a
 *   window never opens at a time its zone's clocks never show.
 * - A wall-clock time a fall-back repeats is its first occurrence (RFC 5545): 02:00-03:00 on 2026-10-25
 *   in Europe/Berlin lasts the two hours the clocks read 02:xx, the same answer on every machine (luxon's
 *   DateTime.fromObject picks by the offset at the real current time, so it is not used for this).
 */
import { DateTime, type IANAZone } from 'luxon';

const MINUTE_MS = 60_000;
const DAY_MS = 24 * 60 * MINUTE_MS;

export interface CalendarDay {
  year: number;
  month: number;
  day: number;
}

export type LocalDay = CalendarDay & { weekday: number };

/** Calendar dates from `from` to `to` days after t's local date in `zone`, with ISO weekdays. */
export function localDays(zone: IANAZone, t: number, from: number, to: number): LocalDay[] {
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
export function wallClock(zone: IANAZone, day: CalendarDay, minutes: number): number {
  const local = Date.UTC(day.year, day.month - 1, day.day, 0, minutes);
  const before = zone.offset(local - DAY_MS);
  const after = zone.offset(local + DAY_MS);
  const shows = (instant: number) => instant + zone.offset(instant) * MINUTE_MS === local;
  const candidates = [local - before * MINUTE_MS, local - after * MINUTE_MS].filter(shows);
  return candidates.length > 0 ? Math.min(...candidates) : local - before * MINUTE_MS;
}
