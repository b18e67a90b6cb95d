import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PlanSpec } from '../../src/api/plan.ts';
import { validatePlan } from '../../src/plan/validate.ts';

const valid: PlanSpec = { version: 'v1.2.3', upgrade: { image: 'example.com/os/upgrade' } };

test('what the API server cannot check is reported by field; a valid Plan has no error', () => {
  const cases: [string, PlanSpec, string[]][] = [
    ['valid', valid, []],
    [
      'a full valid Plan',
      {
        ...valid,
        nodeSelector: { matchExpressions: [{ key: 'os', operator: 'In', values: ['ubuntu'] }] },
        drain: { timeout: '10m', podSelector: { matchLabels: { app: 'web' } } },
        window: { days: ['sat', 'sun'], startTime: '22:00', endTime: '4am', timeZone: 'Europe/Berlin' },
        postCompleteDelay: '2m',
      },
      [],
    ],
    ['drain timeout in nanoseconds', { ...valid, drain: { timeout: 600_000_000_000 } }, []],
    [
      'In without values',
      { ...valid, nodeSelector: { matchExpressions: [{ key: 'os', operator: 'In' }] } },
      ['nodeSelector'],
    ],
    [
      'Exists with values',
      { ...valid, nodeSelector: { matchExpressions: [{ key: 'os', operator: 'Exists', values: ['x'] }] } },
      ['nodeSelector'],
    ],
    [
      'a bad label key in the drain pod selector',
      { ...valid, drain: { podSelector: { matchLabels: { 'bad key': 'x' } } } },
      ['drain.podSelector'],
    ],
    [
      'a window with an unknown zone',
      { ...valid, window: { days: ['mo'], startTime: '1:00', endTime: '2:00', timeZone: 'Nowhere/City' } },
      ['window.timeZone'],
    ],
    ['a drain timeout that does not parse', { ...valid, drain: { timeout: '10x' } }, ['drain.timeout']],
    ['a schema error (a CRD older than the types)', { ...valid, concurrency: -1 }, ['concurrency']],
    ['concurrency 0 (SUC: no node is started)', { ...valid, concurrency: 0 }, []],
  ];
  for (const [what, spec, fields] of cases) {
    assert.deepEqual(
      validatePlan(spec).map((e) => e.field),
      fields,
      what,
    );
  }
});

test('the message says what is wrong', () => {
  const [error] = validatePlan({
    ...valid,
    nodeSelector: { matchExpressions: [{ key: 'os', operator: 'NotIn' }] },
  });
  assert.match(error?.message ?? '', /NotIn needs at least one value/);
});
