/**
 * Parsing the UpdatePolicy `windows` field (its shape is update-policy.ts's `Windows`) into windows ready
 * to evaluate (windows.ts). Pure.
 *
 * Rules, each with its reason:
 * - The whole spec is checked at once, every error with the path of the field it is about: one pass
 *   fixes a policy.
 * - An absent time zone is UTC; fixed offsets such as "+01:00" are refused: they never follow DST.
 * - A cron window stays open `duration`, more than zero and at most 7 days: a window must close within
 *   a week.
 * - Exclusion dates without a time mean midnight in the exclusion's zone; the end is exclusive.
 */
import { CronExpressionParser } from 'cron-parser';
import { DateTime, IANAZone } from 'luxon';
import {
  type CronWindow,
  DAYS,
  type Exclusion,
  type WeeklyWindow,
  type Windows,
} from '../api/update-policy.ts';
import { parseDuration } from '../util/duration.ts';
import type { FieldError } from './field-error.ts';
import { wallClock } from './wall-clock.ts';

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
export interface ParsedWindows {
  windows: readonly ParsedWindow[];
  exclusions: readonly ParsedExclusion[];
}

export type ParseResult = { ok: true; windows: ParsedWindows } | { ok: false; errors: FieldError[] };

const MAX_DURATION_MS = 7 * 24 * 3_600_000;
const CLOCK = /^([01]\d|2[0-3]):([0-5]\d)$/;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;
const CRON_FIELDS = 'minute hour day-of-month month day-of-week';

/** Validates the whole spec at once: every error, each with the path of the field it is about. */
export function parseWindows(spec: Windows): ParseResult {
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
