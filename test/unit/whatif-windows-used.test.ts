import assert from 'node:assert/strict';
import { test } from 'node:test';
import { inStretch, openStretches } from '../../src/whatif/windows-used.ts';
import { parsed } from './policy-windows-fixtures.ts';

const at = (iso: string) => Date.parse(iso);
const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());

test('openStretches: the open stretches overlapping a span, back-to-back windows as one', () => {
  const hourly = parsed({ cron: [{ schedule: '0 * * * *', duration: '20m' }] });
  const cases: Array<[string, Parameters<typeof parsed>[0], string, string, Array<[string?, string?]>]> = [
    [
      'a 20-minute window every hour, over 2 hours from 09:10',
      { cron: [{ schedule: '0 * * * *', duration: '20m' }] },
      '2026-11-23T09:10:00Z',
      '2026-11-23T11:10:00Z',
      [
        ['2026-11-23T09:00:00.000Z', '2026-11-23T09:20:00.000Z'],
        ['2026-11-23T10:00:00.000Z', '2026-11-23T10:20:00.000Z'],
        ['2026-11-23T11:00:00.000Z', '2026-11-23T11:20:00.000Z'],
      ],
    ],
    [
      'a span inside the gap between two windows overlaps none',
      { cron: [{ schedule: '0 * * * *', duration: '20m' }] },
      '2026-11-23T09:25:00Z',
      '2026-11-23T09:55:00Z',
      [],
    ],
    [
      'two weekly windows back to back are one stretch',
      {
        weekly: [
          { days: ['Mon'], start: '09:00', end: '10:00' },
          { days: ['Mon'], start: '10:00', end: '11:00' },
        ],
      },
      '2026-11-23T09:30:00Z',
      '2026-11-23T09:40:00Z',
      [['2026-11-23T09:00:00.000Z', '2026-11-23T11:00:00.000Z']],
    ],
    [
      'an exclusion cuts a window',
      {
        weekly: [{ days: ['Mon'], start: '09:00', end: '11:00' }],
        exclusions: [{ start: '2026-11-23T10:00:00Z', end: '2026-11-23T10:30:00Z' }],
      },
      '2026-11-23T08:00:00Z',
      '2026-11-23T12:00:00Z',
      [
        ['2026-11-23T09:00:00.000Z', '2026-11-23T10:00:00.000Z'],
        ['2026-11-23T10:30:00.000Z', '2026-11-23T11:00:00.000Z'],
      ],
    ],
  ];
  for (const [what, spec, from, to, want] of cases) {
    const got = openStretches(parsed(spec), at(from), at(to)).map((s) => [iso(s.opens), iso(s.closes)]);
    assert.deepEqual(got, want, what);
  }
  assert.equal(openStretches(hourly, at('2026-11-23T09:10:00Z'), at('2026-11-23T09:12:00Z')).length, 1);
});

test('openStretches: no window but exclusions is open but for the freeze; the opening before the lookback is unknown', () => {
  const freeze = parsed({ exclusions: [{ start: '2026-11-23T10:00:00Z', end: '2026-11-23T12:00:00Z' }] });
  const got = openStretches(freeze, at('2026-11-23T09:00:00Z'), at('2026-11-23T13:00:00Z'));
  assert.deepEqual(
    got.map((s) => [iso(s.opens), iso(s.closes)]),
    [
      [undefined, '2026-11-23T10:00:00.000Z'],
      ['2026-11-23T12:00:00.000Z', undefined],
    ],
  );
});

test('inStretch: half-open, unknown ends unbounded', () => {
  const s = { opens: 100, closes: 200 };
  const cases: Array<[number, boolean]> = [
    [99, false],
    [100, true],
    [199, true],
    [200, false],
  ];
  for (const [t, want] of cases) assert.equal(inStretch(s, t), want, String(t));
  assert.equal(inStretch({ closes: 200 }, -1e15), true);
  assert.equal(inStretch({ opens: 100 }, 1e15), true);
});
