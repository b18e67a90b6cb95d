import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseDuration } from '../../src/util/duration.ts';

test('parses Go durations as kubectl does', () => {
  const table: Array<[string, number]> = [
    ['0', 0],
    ['0s', 0],
    ['90s', 90_000],
    ['1m30s', 90_000],
    ['1.5h', 5_400_000],
    ['250ms', 250],
    ['2h3m4s', 7_384_000],
    ['.5s', 500],
  ];
  for (const [text, ms] of table) assert.equal(parseDuration(text), ms, text);
});

test('rejects what Go would reject', () => {
  for (const text of ['', '10', 's', '5 m', '-5s', '1d', '5s ', 'soon']) {
    assert.throws(() => parseDuration(text), /invalid duration/, JSON.stringify(text));
  }
});
