/**
 * The clock policies' calendars are read on: UpdatePolicies' maintenance windows and scheduled budgets
 * (spec.budgets[].schedule). The operator's own timers (soak, timeouts, backoff, grant spacing) stay on
 * the real clock; only calendars move. Pure.
 *
 * Rules, each with its reason:
 * - The real clock is the identity: the calendar instant is the real one.
 * - A simulated clock (for `nuo whatif run --speed N` only) reads origin + (real − start) × speed: it
 *   shows `origin` at the real instant `start` and runs `speed` times as fast, as the twin's policies,
 *   their durations divided by the speed, do.
 * - A calendar instant maps back to the first real millisecond at which the calendar has reached it: a
 *   wake-up set for a window's opening never comes before it opens.
 * - It is a mapping, not a one-method reader: a window answers in calendar time when it next changes, and
 *   the operator's timers must wake at the real instant that is.
 */
import { type WindowState, windowState } from './windows.ts';
import type { ParsedWindows } from './windows-parse.ts';

export interface CalendarClock {
  /** The calendar instant shown at `start`, epoch ms. */
  origin: number;
  /** The real instant from which the calendar counts, epoch ms. */
  start: number;
  /** Calendar milliseconds per real millisecond (1: real time). */
  speed: number;
}

export const REAL_CLOCK: CalendarClock = { origin: 0, start: 0, speed: 1 };

/** The calendar instant at the real instant `real`. */
export function calendarAt(clock: CalendarClock, real: number): number {
  return clock.origin + (real - clock.start) * clock.speed;
}

/** The first real millisecond at which the calendar shows `calendar` or later. */
export function realAt(clock: CalendarClock, calendar: number): number {
  return Math.ceil(clock.start + (calendar - clock.origin) / clock.speed);
}

/**
 * The windows' state at the real instant `now` read on `clock`: open or not, and why, at the calendar
 * instant; when it changes, as the real instant to wake at. Reasons name calendar times.
 */
export function windowStateOn(clock: CalendarClock, windows: ParsedWindows, now: Date): WindowState {
  const state = windowState(windows, new Date(calendarAt(clock, now.getTime())));
  const back = (d: Date | undefined) => (d ? new Date(realAt(clock, d.getTime())) : undefined);
  const changesAt = back(state.changesAt);
  const nextOpen = back(state.nextOpen);
  return {
    open: state.open,
    reason: state.reason,
    ...(changesAt ? { changesAt } : {}),
    ...(nextOpen ? { nextOpen } : {}),
  };
}
