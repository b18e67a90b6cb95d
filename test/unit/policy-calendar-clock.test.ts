import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  type CalendarClock,
  calendarAt,
  REAL_CLOCK,
  realAt,
  windowStateOn,
} from '../../src/policy/calendar-clock.ts';
import { parsed } from './policy-windows-fixtures.ts';

const at = (iso: string) => Date.parse(iso);
/** Shows 09:00 on Monday 2026-11-23 at the real instant 2026-11-27T14:00:00Z, 60 times as fast. */
const SIM: CalendarClock = {
  origin: at('2026-11-23T09:00:00Z'),
  start: at('2026-11-27T14:00:00Z'),
  speed: 60,
};

test('calendarAt and realAt: origin + (real − start) × speed, and back to the first real ms reaching it', () => {
  const cases: Array<[string, CalendarClock, number, number]> = [
    ['the real clock is the identity', REAL_CLOCK, at('2026-11-27T14:00:00Z'), at('2026-11-27T14:00:00Z')],
    ['at start it shows origin', SIM, SIM.start, SIM.origin],
    ['a real second is a simulated minute', SIM, SIM.start + 1000, SIM.origin + 60_000],
    ['a real minute is a simulated hour', SIM, SIM.start + 60_000, at('2026-11-23T10:00:00Z')],
    ['before start it shows before origin', SIM, SIM.start - 500, SIM.origin - 30_000],
  ];
  for (const [what, clock, real, calendar] of cases) {
    assert.equal(calendarAt(clock, real), calendar, `${what}: calendarAt`);
    assert.equal(realAt(clock, calendar), real, `${what}: realAt`);
  }
  // A calendar instant between two real milliseconds maps to the later: a wake-up never comes early.
  const between = SIM.origin + 30;
  assert.equal(realAt(SIM, between), SIM.start + 1);
  assert.ok(calendarAt(SIM, realAt(SIM, between)) >= between);
});

test('windowStateOn: open at the calendar instant, changes mapped back to real instants', () => {
  const windows = parsed({ weekly: [{ days: ['Mon'], start: '09:20', end: '09:40' }] });
  const cases: Array<{ real: number; open: boolean; changesAt: string; nextOpen?: string; reason: RegExp }> =
    [
      {
        // 09:00 simulated: opens at 09:20, 20 simulated minutes = 20 real seconds later.
        real: SIM.start,
        open: false,
        changesAt: '2026-11-27T14:00:20.000Z',
        nextOpen: '2026-11-27T14:00:20.000Z',
        reason: /next opens 2026-11-23T09:20:00.000Z/,
      },
      {
        // 09:30 simulated: closes at 09:40, 10 real seconds later.
        real: SIM.start + 30_000,
        open: true,
        changesAt: '2026-11-27T14:00:40.000Z',
        reason: /inside window/,
      },
      {
        // 09:40 simulated: closed until next Monday, 7 days less 20 minutes = 10,060 real seconds.
        real: SIM.start + 40_000,
        open: false,
        changesAt: new Date(SIM.start + 40_000 + ((7 * 24 * 60 - 20) * 60_000) / 60).toISOString(),
        nextOpen: new Date(SIM.start + 40_000 + ((7 * 24 * 60 - 20) * 60_000) / 60).toISOString(),
        reason: /next opens 2026-11-30T09:20:00.000Z/,
      },
    ];
  for (const c of cases) {
    const state = windowStateOn(SIM, windows, new Date(c.real));
    const label = `at real ${new Date(c.real).toISOString()}`;
    assert.equal(state.open, c.open, `${label}: open`);
    assert.equal(state.changesAt?.toISOString(), c.changesAt, `${label}: changesAt`);
    assert.equal(state.nextOpen?.toISOString(), c.nextOpen, `${label}: nextOpen`);
    assert.match(state.reason, c.reason, `${label}: reason`);
  }
  const real = windowStateOn(REAL_CLOCK, windows, new Date('2026-11-23T09:30:00Z'));
  assert.equal(real.open, true, 'the real clock reads the window at the real instant');
  assert.equal(real.changesAt?.toISOString(), '2026-11-23T09:40:00.000Z');
});
