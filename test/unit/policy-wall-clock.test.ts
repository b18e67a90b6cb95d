/** wall-clock.ts's rules (times DST skips or repeats), seen through weekly windows. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Settings } from 'luxon';
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

const sunday = (start: string, end: string, timeZone: string): Windows => ({
  weekly: [{ days: ['Sun'], start, end, timeZone }],
});

// Europe/Berlin: CET is UTC+1, CEST UTC+2; 2026-03-29 01:00Z clocks jump 02:00 -> 03:00, 2026-10-25
// 01:00Z they fall back 03:00 -> 02:00. America/New_York: EST UTC-5, EDT UTC-4; 2026-03-08 07:00Z
// 02:00 -> 03:00, 2026-11-01 06:00Z 02:00 -> 01:00. All four days are Sundays.
const weeklyDst: Array<[string, Windows, Case[]]> = [
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
