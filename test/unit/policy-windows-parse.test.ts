import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Day, WeeklyWindow, Windows } from '../../src/api/update-policy.ts';
import type { FieldError } from '../../src/policy/field-error.ts';
import { parseWindows } from '../../src/policy/windows-parse.ts';
import { berlin, newYork, parsed } from './policy-windows-fixtures.ts';

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

const parseErrors: Array<[string, Windows, FieldError[]]> = [
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
