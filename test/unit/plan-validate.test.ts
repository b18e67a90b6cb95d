import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PlanSpec } from '../../src/api/plan.ts';
import { celRules, celTwin } from '../../src/plan/cel-rules.ts';
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

test('every CEL rule of the Plan schema has its twin in TypeScript (a SUC Plan is checked by the operator)', () => {
  const rules = celRules(PlanSpec);
  assert.ok(rules.length >= 8, `the schema's rules are found: ${rules.length}`);
  assert.deepEqual(
    rules.filter((r) => celTwin(r) === undefined),
    [],
  );
});

test("a Plan breaking a CEL rule (what SUC's CRD lets through) is refused by field, with the API server's message", () => {
  const cases: [string, unknown, string[]][] = [
    ['no upgrade container', { version: 'v1' }, ['spec']],
    ['neither version nor channel', { upgrade: { image: 'example.com/os' } }, ['spec']],
    ['an image that is no reference', { ...valid, upgrade: { image: 'Not An Image' } }, ['upgrade.image']],
    ['a channel that is no http URL', { ...valid, channel: 'ftp://example.com/c' }, ['channel']],
    ['a channel that is no URL', { ...valid, channel: 'stable' }, ['channel']],
    [
      'a drain timeout neither count nor duration',
      { ...valid, drain: { timeout: '10 minutes' } },
      ['drain.timeout'],
    ],
    [
      'both deleteLocalData and deleteEmptydirData',
      { ...valid, drain: { deleteLocalData: true, deleteEmptydirData: true } },
      ['drain'],
    ],
    ['disableEviction', { ...valid, drain: { disableEviction: true } }, ['drain.disableEviction']],
    ['disableEviction false', { ...valid, drain: { disableEviction: false } }, []],
    [
      'a Localhost seccomp profile without its file',
      {
        ...valid,
        upgrade: { image: 'example.com/os', securityContext: { seccompProfile: { type: 'Localhost' } } },
      },
      ['upgrade.securityContext.seccompProfile'],
    ],
    ['a prepare image that is no reference', { ...valid, prepare: { image: 'a b' } }, ['prepare.image']],
  ];
  for (const [what, spec, fields] of cases)
    assert.deepEqual(
      validatePlan(spec as PlanSpec).map((e) => e.field),
      fields,
      what,
    );
  const [error] = validatePlan({ ...valid, drain: { disableEviction: true } } as PlanSpec);
  assert.match(error?.message ?? '', /Eviction API only/);
});
