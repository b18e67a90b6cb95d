import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Settings } from 'luxon';
import {
  type Day,
  type FieldError,
  parseWindows,
  type WeeklyWindow,
  type WindowSpec,
  type Windows,
  windowState,
} from '../../src/policy/windows.ts';

function parsed(spec: WindowSpec): Windows {
  const result = parseWindows(spec);
  if (!result.ok) assert.fail(`spec did not parse: ${JSON.stringify(result.errors)}`);
  return result.windows;
}

/** One instant's expected answer; an absent changesAt/nextOpen must be absent in the answer too. */
interface Case {
  at: string;
  open: boolean;
  changesAt?: string;
  nextOpen?: string;
  reason?: string;
}

function checkCases(name: string, spec: WindowSpec, cases: Case[]): void {
  const windows = parsed(spec);
  for (const c of cases) {
    const state = windowState(windows, new Date(c.at));
    const label = `${name} at ${c.at}`;
    assert.equal(state.open, c.open, `${label}: open`);
    assert.equal(state.changesAt?.toISOString(), c.changesAt, `${label}: changesAt`);
    assert.equal(state.nextOpen?.toISOString(), c.nextOpen, `${label}: nextOpen`);
    if (c.reason !== undefined) assert.equal(state.reason, c.reason, `${label}: reason`);
  }
}

const closedUntil = (at: string, next: string): Case => ({
  at,
  open: false,
  changesAt: next,
  nextOpen: next,
});
const openUntil = (at: string, end: string): Case => ({ at, open: true, changesAt: end });

const berlin = 'Europe/Berlin';
const newYork = 'America/New_York';
const sunday = (start: string, end: string, timeZone: string): WindowSpec => ({
  weekly: [{ days: ['Sun'], start, end, timeZone }],
});
const daily = (schedule: string, timeZone: string): WindowSpec => ({
  cron: [{ schedule, duration: '1h', timeZone }],
});

// Europe/Berlin: CET is UTC+1, CEST UTC+2; 2026-03-29 01:00Z clocks jump 02:00 -> 03:00, 2026-10-25
// 01:00Z they fall back 03:00 -> 02:00. America/New_York: EST UTC-5, EDT UTC-4; 2026-03-08 07:00Z
// 02:00 -> 03:00, 2026-11-01 06:00Z 02:00 -> 01:00. All four days are Sundays.
const weeklyDst: Array<[string, WindowSpec, Case[]]> = [
  [
    'Berlin spring-forward: 02:00-03:00 never shows, the window is empty that day',
    sunday('02:00', '03:00', berlin),
    [
      closedUntil('2026-03-29T00:59:00Z', '2026-04-05T00:00:00.000Z'),
      closedUntil('2026-03-29T01:00:00Z', '2026-04-05T00:00:00.000Z'),
    ],
  ],
  [
    'Berlin spring-forward: a skipped 02:30 start moves forward to 03:30 CEST',
    sunday('02:30', '04:00', berlin),
    [
      closedUntil('2026-03-29T01:29:59.999Z', '2026-03-29T01:30:00.000Z'),
      {
        ...openUntil('2026-03-29T01:30:00Z', '2026-03-29T02:00:00.000Z'),
        reason: 'inside window Sun 02:30-04:00 Europe/Berlin',
      },
      closedUntil('2026-03-29T02:00:00Z', '2026-04-05T00:30:00.000Z'),
    ],
  ],
  [
    'Berlin fall-back: 02:00-03:00 lasts both passes of 02:xx (two hours)',
    sunday('02:00', '03:00', berlin),
    [
      closedUntil('2026-10-24T23:59:59.999Z', '2026-10-25T00:00:00.000Z'),
      openUntil('2026-10-25T00:00:00Z', '2026-10-25T02:00:00.000Z'),
      openUntil('2026-10-25T01:30:00Z', '2026-10-25T02:00:00.000Z'),
      closedUntil('2026-10-25T02:00:00Z', '2026-11-01T01:00:00.000Z'),
    ],
  ],
  [
    'New York spring-forward: 02:00-03:00 is empty that day',
    sunday('02:00', '03:00', newYork),
    [closedUntil('2026-03-08T06:59:00Z', '2026-03-15T06:00:00.000Z')],
  ],
  [
    'New York fall-back: 01:00-02:00 runs from 01:00 EDT to 02:00 EST',
    sunday('01:00', '02:00', newYork),
    [
      openUntil('2026-11-01T05:00:00Z', '2026-11-01T07:00:00.000Z'),
      openUntil('2026-11-01T06:30:00Z', '2026-11-01T07:00:00.000Z'),
      closedUntil('2026-11-01T07:00:00Z', '2026-11-08T06:00:00.000Z'),
    ],
  ],
  [
    'New York fall-back: 02:00-03:00 opens at 02:00 EST, not at the 02:00 EDT clocks skip',
    sunday('02:00', '03:00', newYork),
    [
      closedUntil('2026-11-01T06:00:00Z', '2026-11-01T07:00:00.000Z'),
      openUntil('2026-11-01T07:00:00Z', '2026-11-01T08:00:00.000Z'),
    ],
  ],
];

for (const [name, spec, cases] of weeklyDst) test(`weekly DST: ${name}`, () => checkCases(name, spec, cases));

const cronDst: Array<[string, WindowSpec, Case[]]> = [
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

test('a repeated wall-clock time resolves the same whatever the real clock reads', () => {
  // luxon's DateTime.fromObject picks a fall-back time's occurrence by the offset at Settings.now().
  const windows = parsed(sunday('02:00', '03:00', berlin));
  const saved = Settings.now;
  try {
    for (const clock of ['2026-07-01T00:00:00Z', '2026-12-01T00:00:00Z']) {
      Settings.now = () => Date.parse(clock);
      const state = windowState(windows, new Date('2026-10-25T00:00:00Z'));
      assert.equal(state.open, true, `real clock ${clock}`);
      assert.equal(state.changesAt?.toISOString(), '2026-10-25T02:00:00.000Z', `real clock ${clock}`);
    }
  } finally {
    Settings.now = saved;
  }
});

// 2026-11-27 is a Friday.
const wraps: Array<[string, WindowSpec, Case[]]> = [
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
const leapDay: Array<[string, WindowSpec, Case[]]> = [
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

const weekdayNights: WindowSpec = {
  weekly: [{ days: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri'], start: '02:00', end: '06:00', timeZone: berlin }],
};
const holidayFreeze = { start: '2026-12-24', end: '2027-01-02', timeZone: berlin, reason: 'holiday freeze' };
// 2026-12-23 is a Wednesday, 2026-12-28 a Monday, 2027-01-04 a Monday; Berlin is on CET (UTC+1).
const exclusions: Array<[string, WindowSpec, Case[]]> = [
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
const stretches: Array<[string, WindowSpec, Case[]]> = [
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

const zoneHint = 'use an IANA name such as "Europe/Berlin"';
const cronHint = 'use 5 fields (minute hour day-of-month month day-of-week), e.g. "30 1 * * *"';
const durationHint = 'use a Go duration such as "90m", "2h30m" or "1h"';
const dateHint = 'use an RFC 3339 date-time such as "2026-12-24T00:00:00Z" or a date such as "2026-12-24"';
const dayHint = 'use one of Mon, Tue, Wed, Thu, Fri, Sat, Sun';
const clockHint = 'use 24-hour "HH:MM" from "00:00" to "23:59"';
const weekly: WeeklyWindow = { days: ['Mon'], start: '02:00', end: '04:00' };
const cron = { schedule: '30 1 * * *', duration: '1h' };
const exclusion = { start: '2026-12-24', end: '2027-01-02' };
const err = (field: string, message: string): FieldError => ({ field, message });

const parseErrors: Array<[string, WindowSpec, FieldError[]]> = [
  [
    'unknown weekly time zone',
    {
      weekly: [
        { ...weekly, days: ['Mon'] },
        { ...weekly, days: ['Tue'], timeZone: 'Europe/Berlinn' },
      ],
    },
    [err('windows.weekly[1].timeZone', `unknown time zone "Europe/Berlinn": ${zoneHint}`)],
  ],
  [
    'a fixed offset is not a time zone',
    { cron: [{ ...cron, timeZone: '+01:00' }] },
    [err('windows.cron[0].timeZone', `unknown time zone "+01:00": ${zoneHint}`)],
  ],
  [
    'unknown exclusion time zone',
    { exclusions: [{ ...exclusion, timeZone: 'Mars/Olympus' }] },
    [err('windows.exclusions[0].timeZone', `unknown time zone "Mars/Olympus": ${zoneHint}`)],
  ],
  [
    'cron value out of range',
    { cron: [{ ...cron, schedule: '61 * * * *' }] },
    [
      err(
        'windows.cron[0].schedule',
        `invalid cron schedule "61 * * * *" (Constraint error, got value 61 expected range 0-59): ${cronHint}`,
      ),
    ],
  ],
  [
    'cron with seconds',
    { cron: [{ ...cron, schedule: '0 30 1 * * *' }] },
    [err('windows.cron[0].schedule', `cron schedule "0 30 1 * * *" has 6 fields: ${cronHint}`)],
  ],
  [
    'cron macro',
    { cron: [{ ...cron, schedule: '@daily' }] },
    [err('windows.cron[0].schedule', `cron schedule "@daily" has 1 fields: ${cronHint}`)],
  ],
  [
    'cron H (random)',
    { cron: [{ ...cron, schedule: 'H 2 * * *' }] },
    [
      err(
        'windows.cron[0].schedule',
        'cron schedule "H 2 * * *" uses H, which stands for a random value: use explicit values',
      ),
    ],
  ],
  [
    'unparsable duration',
    { cron: [{ ...cron, duration: '1d' }] },
    [err('windows.cron[0].duration', `invalid duration "1d": ${durationHint}`)],
  ],
  [
    'zero duration',
    { cron: [{ ...cron, duration: '0m' }] },
    [err('windows.cron[0].duration', 'duration "0m" is not positive: use a length such as "1h"')],
  ],
  [
    'negative duration',
    { cron: [{ ...cron, duration: '-1h' }] },
    [err('windows.cron[0].duration', 'duration "-1h" is not positive: use a length such as "1h"')],
  ],
  [
    'duration over 7 days',
    { cron: [{ ...cron, duration: '168h1m' }] },
    [err('windows.cron[0].duration', 'duration "168h1m" is longer than 7 days: use at most "168h"')],
  ],
  [
    'bad HH:MM',
    { weekly: [{ ...weekly, start: '24:00', end: '2:00' }] },
    [
      err('windows.weekly[0].start', `invalid time "24:00": ${clockHint}`),
      err('windows.weekly[0].end', `invalid time "2:00": ${clockHint}`),
    ],
  ],
  [
    'empty days',
    { weekly: [{ ...weekly, days: [] }] },
    [
      err(
        'windows.weekly[0].days',
        `no days given (got []): list one or more of Mon, Tue, Wed, Thu, Fri, Sat, Sun`,
      ),
    ],
  ],
  [
    'duplicate and unknown days',
    { weekly: [{ ...weekly, days: ['Mon', 'Tue', 'Mon', 'Monday'] as Day[] }] },
    [
      err('windows.weekly[0].days[2]', 'day "Mon" is listed twice: list each day once'),
      err('windows.weekly[0].days[3]', `unknown day "Monday": ${dayHint}`),
    ],
  ],
  [
    'unparsable exclusion dates',
    { exclusions: [{ start: '2026-02-30', end: '2026-12-24T10:00:00' }] },
    [
      err('windows.exclusions[0].start', `invalid date "2026-02-30": ${dateHint}`),
      err('windows.exclusions[0].end', `invalid date "2026-12-24T10:00:00": ${dateHint}`),
    ],
  ],
  [
    'exclusion end not after start',
    { exclusions: [exclusion, { start: '2026-12-24', end: '2026-12-24T00:00:00Z' }] },
    [
      err(
        'windows.exclusions[1].end',
        'end "2026-12-24T00:00:00Z" is not after start "2026-12-24": an exclusion must end after it starts (the end is exclusive)',
      ),
    ],
  ],
];

for (const [name, spec, errors] of parseErrors) {
  test(`parse error: ${name}`, () => {
    assert.deepEqual(parseWindows(spec), { ok: false, errors });
  });
}

test('parseWindows reports every error at once, in spec order', () => {
  const result = parseWindows({
    weekly: [{ days: [], start: '25:00', end: '04:00', timeZone: 'Nowhere/Special' }],
    cron: [{ schedule: '* * *', duration: 'soon' }],
    exclusions: [{ start: 'tomorrow', end: '2026-12-24', timeZone: 'UTC' }],
  });
  assert.equal(result.ok, false);
  assert.deepEqual(!result.ok && result.errors.map((e) => e.field), [
    'windows.weekly[0].timeZone',
    'windows.weekly[0].days',
    'windows.weekly[0].start',
    'windows.cron[0].schedule',
    'windows.cron[0].duration',
    'windows.exclusions[0].start',
  ]);
});

test('valid specs parse, and labels name the days as ranges', () => {
  const windows = parsed({
    weekly: [{ days: ['Fri', 'Mon', 'Wed', 'Thu'], start: '02:00', end: '04:00', timeZone: berlin }],
    cron: [{ schedule: '0 3 * * MON-FRI', duration: '168h', timeZone: newYork }],
    exclusions: [{ start: '2026-12-24T18:00:00+01:00', end: '2027-01-02', timeZone: berlin }],
  });
  assert.deepEqual(
    windows.windows.map((w) => w.label),
    ['Mon,Wed-Fri 02:00-04:00 Europe/Berlin', 'cron "0 3 * * MON-FRI" for 168h America/New_York'],
  );
  assert.deepEqual(windows.exclusions, [
    { start: Date.parse('2026-12-24T17:00:00Z'), end: Date.parse('2027-01-01T23:00:00Z') },
  ]);
});
