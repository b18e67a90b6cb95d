import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PlanWindow } from '../../src/api/plan.ts';
import { parseDay, parseTimeOfDay, planWindow } from '../../src/plan/window.ts';

const at = (iso: string) => Date.parse(iso);
const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());

function window(spec: PlanWindow) {
  const w = planWindow(spec);
  assert.ok(w.ok, JSON.stringify(!w.ok && w.errors));
  return w.window;
}

test('days: numbers 0 (Sunday) to 6 and names in three lengths, any case, as ISO weekdays', () => {
  const cases: [string, number | undefined][] = [
    ['0', 7],
    ['6', 6],
    ['su', 7],
    ['mon', 1],
    ['Wednesday', 3],
    ['fri', 5],
    ['7', undefined],
    ['funday', undefined],
  ];
  for (const [day, want] of cases) assert.equal(parseDay(day), want, day);
});

test("times: kured's forms, 3:04pm and upper-case AM/PM; nothing else", () => {
  const h = (hours: number, minutes = 0, seconds = 0) => ((hours * 60 + minutes) * 60 + seconds) * 1000;
  const cases: [string, number | undefined][] = [
    ['15:04', h(15, 4)],
    ['15:04:05', h(15, 4, 5)],
    ['03:04pm', h(15, 4)],
    ['3:04pm', h(15, 4)],
    ['15', h(15)],
    ['03pm', h(15)],
    ['3pm', h(15)],
    ['12am', h(0)],
    ['12pm', h(12)],
    ['10PM', h(22)],
    ['0:00', h(0)],
    ['24:00', undefined],
    ['13pm', undefined],
    ['15:4', undefined],
    ['noon', undefined],
    ['', undefined],
  ];
  for (const [text, want] of cases) assert.equal(parseTimeOfDay(text), want, text);
});

test('contains: days, the inclusive end, wrapping midnight on the local day, as kured', () => {
  // 2026-06-05 is a Friday.
  const cases: [string, PlanWindow, string, boolean][] = [
    ['inside', { days: ['fr'], startTime: '09:00', endTime: '17:00' }, '2026-06-05T12:00:00Z', true],
    ['at the start', { days: ['fr'], startTime: '09:00', endTime: '17:00' }, '2026-06-05T09:00:00Z', true],
    ['before it', { days: ['fr'], startTime: '09:00', endTime: '17:00' }, '2026-06-05T08:59:59.999Z', false],
    [
      'the end is inclusive to its second',
      { days: ['fr'], startTime: '09:00', endTime: '17:00' },
      '2026-06-05T17:00:00.999Z',
      true,
    ],
    ['after it', { days: ['fr'], startTime: '09:00', endTime: '17:00' }, '2026-06-05T17:00:01Z', false],
    ['another day', { days: ['sa'], startTime: '09:00', endTime: '17:00' }, '2026-06-05T12:00:00Z', false],
    [
      'wrap: late on a day',
      { days: ['5'], startTime: '22:00', endTime: '02:00' },
      '2026-06-05T23:00:00Z',
      true,
    ],
    [
      'wrap: early on a day',
      { days: ['5'], startTime: '22:00', endTime: '02:00' },
      '2026-06-05T01:00:00Z',
      true,
    ],
    [
      'wrap: early the next day only when listed',
      { days: ['5'], startTime: '22:00', endTime: '02:00' },
      '2026-06-06T01:00:00Z',
      false,
    ],
    ['wrap: midday', { days: ['5'], startTime: '22:00', endTime: '02:00' }, '2026-06-05T12:00:00Z', false],
    [
      'equal times: the whole day',
      { days: ['fr'], startTime: '10:00', endTime: '10:00' },
      '2026-06-05T03:00:00Z',
      true,
    ],
    [
      'the zone decides the day and the time',
      { days: ['sa'], startTime: '00:00', endTime: '02:00', timeZone: 'Europe/Berlin' },
      '2026-06-05T22:30:00Z',
      true,
    ],
    ['no zone is UTC', { days: ['sa'], startTime: '00:00', endTime: '02:00' }, '2026-06-05T22:30:00Z', false],
  ];
  for (const [what, spec, t, want] of cases) assert.equal(window(spec).contains(at(t)), want, what);
});

test('nextChange: the opening and closing instants, across midnight and DST', () => {
  const cases: [string, PlanWindow, string, string | undefined][] = [
    [
      'closed: the next opening',
      { days: ['fr'], startTime: '09:00', endTime: '17:00' },
      '2026-06-03T12:00:00Z',
      '2026-06-05T09:00:00.000Z',
    ],
    [
      'open: just after the inclusive end',
      { days: ['fr'], startTime: '09:00', endTime: '17:00' },
      '2026-06-05T12:00:00Z',
      '2026-06-05T17:00:01.000Z',
    ],
    [
      'wrap: open late Friday, closes at midnight when Saturday is not listed',
      { days: ['fr'], startTime: '22:00', endTime: '02:00' },
      '2026-06-05T23:00:00Z',
      '2026-06-06T00:00:00.000Z',
    ],
    [
      'wrap: open late Friday runs on into Saturday when it is listed',
      { days: ['fr', 'sa'], startTime: '22:00', endTime: '02:00' },
      '2026-06-05T23:00:00Z',
      '2026-06-06T02:00:01.000Z',
    ],
    [
      'spring forward: 02:30 Berlin does not exist on 2026-03-29, the window opens as the clocks jump to 03:00',
      { days: ['su'], startTime: '02:30', endTime: '04:00', timeZone: 'Europe/Berlin' },
      '2026-03-28T23:30:00Z',
      '2026-03-29T01:00:00.000Z',
    ],
    [
      'fall back: 02:00-03:00 Berlin on 2026-10-25 lasts both 02:xx hours',
      { days: ['su'], startTime: '02:00', endTime: '02:59:59', timeZone: 'Europe/Berlin' },
      '2026-10-25T00:30:00Z',
      '2026-10-25T02:00:00.000Z',
    ],
    [
      'always open: never changes',
      { days: ['0', '1', '2', '3', '4', '5', '6'], startTime: '00:00', endTime: '00:00' },
      '2026-06-05T12:00:00Z',
      undefined,
    ],
  ];
  for (const [what, spec, t, want] of cases) assert.equal(iso(window(spec).nextChange(at(t))), want, what);
});

test('fall back: the repeated hour is inside the window both times', () => {
  const w = window({ days: ['su'], startTime: '02:00', endTime: '02:59:59', timeZone: 'Europe/Berlin' });
  assert.equal(w.contains(at('2026-10-25T00:30:00Z')), true, '02:30 CEST');
  assert.equal(w.contains(at('2026-10-25T01:30:00Z')), true, '02:30 CET');
  assert.equal(w.contains(at('2026-10-25T02:00:00Z')), false, '03:00 CET');
});

test('every problem is reported by its field', () => {
  const r = planWindow({ days: ['mo'], startTime: '25:00', timeZone: 'Mars/Olympus' });
  assert.ok(!r.ok);
  assert.deepEqual(
    r.errors.map((e) => e.field),
    ['window.startTime', 'window.endTime', 'window.timeZone'],
  );
  const none = planWindow({ startTime: '01:00', endTime: '02:00' });
  assert.ok(!none.ok);
  assert.deepEqual(none.errors, [
    { field: 'window.days', message: 'name at least one day, e.g. [sat, sun]' },
  ]);
});
