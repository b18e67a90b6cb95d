import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Windows } from '../../src/api/update-policy.ts';
import { windowState } from '../../src/policy/windows.ts';
import {
  berlin,
  type Case,
  checkCases,
  closedUntil,
  newYork,
  openUntil,
  parsed,
} from './policy-windows-fixtures.ts';

const daily = (schedule: string, timeZone: string): Windows => ({
  cron: [{ schedule, duration: '1h', timeZone }],
});

// Europe/Berlin: CET is UTC+1, CEST UTC+2; 2026-03-29 01:00Z clocks jump 02:00 -> 03:00, 2026-10-25
// 01:00Z they fall back 03:00 -> 02:00. America/New_York: EST UTC-5, EDT UTC-4; 2026-03-08 07:00Z
// 02:00 -> 03:00, 2026-11-01 06:00Z 02:00 -> 01:00. All four days are Sundays.
const cronDst: Array<[string, Windows, Case[]]> = [
  [
    'Berlin spring-forward: 01:30 CET for 1h ends at 03:30 CEST',
    daily('30 1 * * *', berlin),
    [
      {
        ...openUntil('2026-03-29T00:30:00Z', '2026-03-29T01:30:00.000Z'),
        reason: 'inside window cron "30 1 * * *" for 1h Europe/Berlin',
      },
      closedUntil('2026-03-29T01:30:00Z', '2026-03-29T23:30:00.000Z'),
    ],
  ],
  [
    'Berlin spring-forward: a skipped 02:30 fires at 03:30 CEST',
    daily('30 2 * * *', berlin),
    [
      closedUntil('2026-03-29T01:29:00Z', '2026-03-29T01:30:00.000Z'),
      openUntil('2026-03-29T01:30:00Z', '2026-03-29T02:30:00.000Z'),
      openUntil('2026-03-29T02:00:00Z', '2026-03-29T02:30:00.000Z'),
    ],
  ],
  [
    'Berlin fall-back: a repeated 02:30 fires once, at its first occurrence',
    daily('30 2 * * *', berlin),
    [
      openUntil('2026-10-25T00:30:00Z', '2026-10-25T01:30:00.000Z'),
      openUntil('2026-10-25T01:00:00Z', '2026-10-25T01:30:00.000Z'),
      closedUntil('2026-10-25T01:45:00Z', '2026-10-26T01:30:00.000Z'),
    ],
  ],
  [
    'New York fall-back: 01:30 fires at 01:30 EDT only, whatever instant is asked about',
    daily('30 1 * * *', newYork),
    [
      closedUntil('2026-11-01T05:29:59.999Z', '2026-11-01T05:30:00.000Z'),
      openUntil('2026-11-01T05:30:00Z', '2026-11-01T06:30:00.000Z'),
      closedUntil('2026-11-01T06:30:00Z', '2026-11-02T06:30:00.000Z'),
      closedUntil('2026-11-01T06:45:00Z', '2026-11-02T06:30:00.000Z'),
      closedUntil('2026-11-01T07:15:00Z', '2026-11-02T06:30:00.000Z'),
    ],
  ],
  [
    'New York spring-forward: 01:30 EST for 1h ends at 03:30 EDT',
    daily('30 1 * * *', newYork),
    [
      openUntil('2026-03-08T07:29:00Z', '2026-03-08T07:30:00.000Z'),
      closedUntil('2026-03-08T07:30:00Z', '2026-03-09T05:30:00.000Z'),
    ],
  ],
  [
    'New York spring-forward: a skipped 02:30 fires at 03:30 EDT',
    daily('30 2 * * *', newYork),
    [
      closedUntil('2026-03-08T07:00:00Z', '2026-03-08T07:30:00.000Z'),
      openUntil('2026-03-08T08:00:00Z', '2026-03-08T08:30:00.000Z'),
    ],
  ],
];

for (const [name, spec, cases] of cronDst) test(`cron DST: ${name}`, () => checkCases(name, spec, cases));

// 2026-11-27 is a Friday.
const wraps: Array<[string, Windows, Case[]]> = [
  [
    'Fri 22:00-02:00 runs into Saturday',
    { weekly: [{ days: ['Fri'], start: '22:00', end: '02:00' }] },
    [
      closedUntil('2026-11-26T01:00:00Z', '2026-11-27T22:00:00.000Z'),
      closedUntil('2026-11-27T21:59:00Z', '2026-11-27T22:00:00.000Z'),
      {
        ...openUntil('2026-11-27T22:00:00Z', '2026-11-28T02:00:00.000Z'),
        reason: 'inside window Fri 22:00-02:00 UTC',
      },
      openUntil('2026-11-28T01:00:00Z', '2026-11-28T02:00:00.000Z'),
      closedUntil('2026-11-28T02:00:00Z', '2026-12-04T22:00:00.000Z'),
    ],
  ],
  [
    'Fri 22:00-02:00 Europe/Berlin: Sat 01:00 CET is open',
    { weekly: [{ days: ['Fri'], start: '22:00', end: '02:00', timeZone: berlin }] },
    [
      openUntil('2026-11-28T00:00:00Z', '2026-11-28T01:00:00.000Z'),
      closedUntil('2026-11-28T01:00:00Z', '2026-12-04T21:00:00.000Z'),
    ],
  ],
  [
    'equal start and end mean 24 hours',
    { weekly: [{ days: ['Mon'], start: '06:00', end: '06:00' }] },
    [
      openUntil('2026-11-24T05:59:00Z', '2026-11-24T06:00:00.000Z'),
      closedUntil('2026-11-24T06:00:00Z', '2026-11-30T06:00:00.000Z'),
    ],
  ],
];

for (const [name, spec, cases] of wraps) test(`midnight wrap: ${name}`, () => checkCases(name, spec, cases));

// 2028-02-29 is a Tuesday; the next Feb 29 after it is in 2032.
const leapDay: Array<[string, Windows, Case[]]> = [
  [
    'cron "0 3 29 2 *" for 1h',
    { cron: [{ schedule: '0 3 29 2 *', duration: '1h' }] },
    [
      closedUntil('2027-03-01T00:00:00Z', '2028-02-29T03:00:00.000Z'),
      openUntil('2028-02-29T03:00:00Z', '2028-02-29T04:00:00.000Z'),
      openUntil('2028-02-29T03:59:59.999Z', '2028-02-29T04:00:00.000Z'),
      {
        at: '2028-02-29T04:00:00Z',
        open: false,
        changesAt: '2032-02-29T03:00:00.000Z',
        reason: 'outside every maintenance window; none opens within 366 days',
      },
      { at: '2026-06-01T00:00:00Z', open: false, changesAt: '2028-02-29T03:00:00.000Z' },
    ],
  ],
  [
    'weekly Tue 23:00-01:00 on Tuesday 2028-02-29 runs into March 1',
    { weekly: [{ days: ['Tue'], start: '23:00', end: '01:00' }] },
    [
      closedUntil('2028-02-28T12:00:00Z', '2028-02-29T23:00:00.000Z'),
      openUntil('2028-02-29T23:30:00Z', '2028-03-01T01:00:00.000Z'),
      openUntil('2028-03-01T00:30:00Z', '2028-03-01T01:00:00.000Z'),
      closedUntil('2028-03-01T01:00:00Z', '2028-03-07T23:00:00.000Z'),
    ],
  ],
];

for (const [name, spec, cases] of leapDay) test(`leap day: ${name}`, () => checkCases(name, spec, cases));

const weekdayNights: Windows = {
  weekly: [{ days: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri'], start: '02:00', end: '06:00', timeZone: berlin }],
};
const holidayFreeze = { start: '2026-12-24', end: '2027-01-02', timeZone: berlin, reason: 'holiday freeze' };
// 2026-12-23 is a Wednesday, 2026-12-28 a Monday, 2027-01-04 a Monday; Berlin is on CET (UTC+1).
const exclusions: Array<[string, Windows, Case[]]> = [
  [
    'a freeze closes an open window until the next window after it',
    { ...weekdayNights, exclusions: [holidayFreeze] },
    [
      {
        ...closedUntil('2026-12-28T02:00:00Z', '2027-01-04T01:00:00.000Z'),
        reason: 'excluded until 2027-01-01T23:00:00.000Z: holiday freeze',
      },
      {
        ...openUntil('2026-12-23T02:00:00Z', '2026-12-23T05:00:00.000Z'),
        reason: 'inside window Mon-Fri 02:00-06:00 Europe/Berlin',
      },
    ],
  ],
  [
    'a freeze starting inside an open window ends it early',
    { ...weekdayNights, exclusions: [{ start: '2026-12-23T04:00:00+01:00', end: '2026-12-24T00:00:00Z' }] },
    [
      openUntil('2026-12-23T02:00:00Z', '2026-12-23T03:00:00.000Z'),
      {
        ...closedUntil('2026-12-23T03:00:00Z', '2026-12-24T01:00:00.000Z'),
        reason: 'excluded until 2026-12-24T00:00:00.000Z',
      },
    ],
  ],
  [
    'a freeze ending inside a window opens at its end',
    {
      ...weekdayNights,
      exclusions: [{ start: '2026-12-20', end: '2026-12-28T03:30:00+01:00', timeZone: berlin }],
    },
    [closedUntil('2026-12-28T01:30:00Z', '2026-12-28T02:30:00.000Z')],
  ],
  [
    'touching and overlapping freezes count as one',
    {
      exclusions: [
        { start: '2026-12-24', end: '2026-12-27', reason: 'holiday freeze' },
        { start: '2026-12-27', end: '2026-12-30' },
        { start: '2026-12-29', end: '2027-01-02' },
      ],
    },
    [
      {
        ...closedUntil('2026-12-25T00:00:00Z', '2027-01-02T00:00:00.000Z'),
        reason: 'excluded until 2027-01-02T00:00:00.000Z: holiday freeze',
      },
    ],
  ],
  [
    'a freeze longer than the search: no nextOpen, changesAt at its end',
    { exclusions: [{ start: '2026-01-01', end: '2028-01-01' }] },
    [{ at: '2026-06-01T00:00:00Z', open: false, changesAt: '2028-01-01T00:00:00.000Z' }],
  ],
  [
    'a date whose midnight is skipped (Havana, 2026-03-08) starts at 01:00 CDT',
    { exclusions: [{ start: '2026-03-08', end: '2026-03-09', timeZone: 'America/Havana' }] },
    [
      { at: '2026-03-08T04:59:59.999Z', open: true, changesAt: '2026-03-08T05:00:00.000Z' },
      closedUntil('2026-03-08T05:00:00Z', '2026-03-09T04:00:00.000Z'),
    ],
  ],
  [
    'a date whose midnight repeats (Havana, 2026-11-01) starts at its first occurrence',
    { exclusions: [{ start: '2026-11-01', end: '2026-11-02', timeZone: 'America/Havana' }] },
    [closedUntil('2026-11-01T04:00:00Z', '2026-11-02T05:00:00.000Z')],
  ],
];

for (const [name, spec, cases] of exclusions)
  test(`exclusions: ${name}`, () => checkCases(name, spec, cases));

// 2026-11-23 is a Monday.
const stretches: Array<[string, Windows, Case[]]> = [
  [
    'changesAt follows a window that starts as another ends',
    {
      weekly: [{ days: ['Mon'], start: '02:00', end: '04:00' }],
      cron: [{ schedule: '0 4 * * 1', duration: '2h' }],
    },
    [
      {
        ...openUntil('2026-11-23T03:00:00Z', '2026-11-23T06:00:00.000Z'),
        reason: 'inside window Mon 02:00-04:00 UTC',
      },
      closedUntil('2026-11-23T06:00:00Z', '2026-11-30T02:00:00.000Z'),
    ],
  ],
  [
    'changesAt follows overlapping weekly windows to the later end',
    {
      weekly: [
        { days: ['Mon'], start: '02:00', end: '05:00' },
        { days: ['Mon'], start: '04:00', end: '06:00' },
      ],
    },
    [openUntil('2026-11-23T03:00:00Z', '2026-11-23T06:00:00.000Z')],
  ],
  [
    "changesAt follows a cron window's own overlapping fire times",
    { cron: [{ schedule: '0 0,4 * * *', duration: '4h' }] },
    [
      openUntil('2026-11-23T01:00:00Z', '2026-11-23T08:00:00.000Z'),
      closedUntil('2026-11-23T08:00:00Z', '2026-11-24T00:00:00.000Z'),
    ],
  ],
  [
    'closed between windows: nextOpen is the earliest next start',
    {
      weekly: [{ days: ['Wed'], start: '02:00', end: '04:00' }],
      cron: [{ schedule: '0 12 * * 2', duration: '30m' }],
    },
    [
      {
        ...closedUntil('2026-11-23T06:00:00Z', '2026-11-24T12:00:00.000Z'),
        reason: 'outside every maintenance window; next opens 2026-11-24T12:00:00.000Z',
      },
    ],
  ],
];

for (const [name, spec, cases] of stretches) test(`stretches: ${name}`, () => checkCases(name, spec, cases));

test('no windows = always open; exclusions still apply', () => {
  const now = new Date('2026-11-25T12:00:00Z');
  const always = { open: true, reason: 'no maintenance windows: always open' };
  assert.deepEqual(windowState(parsed({}), now), always);
  assert.deepEqual(windowState(parsed({ weekly: [], cron: [], exclusions: [] }), now), always);
  const freeze = parsed({
    exclusions: [{ start: '2026-12-24', end: '2027-01-02', reason: 'holiday freeze' }],
  });
  assert.deepEqual(windowState(freeze, now), { ...always, changesAt: new Date('2026-12-24T00:00:00Z') });
  const inside = new Date('2026-12-31T00:00:00Z');
  const thaw = new Date('2027-01-02T00:00:00Z');
  assert.deepEqual(windowState(freeze, inside), {
    open: false,
    reason: 'excluded until 2027-01-02T00:00:00.000Z: holiday freeze',
    changesAt: thaw,
    nextOpen: thaw,
  });
});

test('windowState refuses an invalid now', () => {
  assert.throws(() => windowState(parsed({}), new Date(Number.NaN)), RangeError);
});
