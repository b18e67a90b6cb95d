import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { HealthCheck } from '../../src/api/update-policy.ts';
import { readError } from '../../src/operator/read/health-check-reads.ts';
import { celValue, compileCel } from '../../src/policy/cel.ts';
import {
  conditionExpression,
  firstFailing,
  type ObjectCheck,
  type ObjectsRead,
  objectVerdict,
  type PrometheusCheck,
  prometheusVerdict,
  resolveHealthCheck,
  type SamplesRead,
} from '../../src/policy/health-checks.ts';
import { parseQueryResponse } from '../../src/policy/prometheus-query.ts';
import { resolvePolicy } from '../../src/policy/resolve.ts';

const objectCheck = (expression: string, target: { name?: string; selector?: object } = { name: 'ceph' }) =>
  resolveHealthCheck({
    name: 'ceph',
    object: { apiVersion: 'test.nuo.dev/v1', kind: 'Widget', namespace: 'rook', ...target, expression },
  }) as ObjectCheck;

const promCheck = (condition: string, whenEmpty?: 'Healthy' | 'Unhealthy') =>
  resolveHealthCheck({
    name: 'errors',
    prometheus: {
      url: 'http://prom:9090',
      query: 'rate(errors[5m])',
      condition,
      ...(whenEmpty ? { whenEmpty } : {}),
    },
  }) as PrometheusCheck;

const widget = (name: string, health: string, extra: object = {}) => ({
  apiVersion: 'test.nuo.dev/v1',
  kind: 'Widget',
  metadata: { name, namespace: 'rook' },
  status: { health, ...extra },
});

test('a condition that starts with a comparison compares the value; anything else is CEL as written', () => {
  const cases: [string, string][] = [
    ['== 0', 'value == 0'],
    ['<0.05', 'value < 0.05'],
    ['  >=  3', 'value >= 3'],
    ['!= 1', 'value != 1'],
    ['value > 1 && labels.job == "x"', 'value > 1 && labels.job == "x"'],
  ];
  for (const [condition, want] of cases) assert.equal(conditionExpression(condition), want, condition);
});

test('an expression that does not parse is refused with the field and where, and the policy is not used', () => {
  assert.throws(
    () => objectCheck('object.status.health ==', { name: 'ceph' }),
    /^Error: object\.expression does not compile: .*1:/,
  );
  assert.throws(() => promCheck('== '), /^Error: prometheus\.condition does not compile/);
  const r = resolvePolicy({
    metadata: { name: 'p' },
    spec: {
      healthChecks: [
        { name: 'ok', object: { apiVersion: 'v1', kind: 'ConfigMap', name: 'x', expression: 'true' } },
        { name: 'bad', object: { apiVersion: 'v1', kind: 'ConfigMap', name: 'x', expression: '1 +' } },
      ] satisfies HealthCheck[],
    },
  });
  assert.equal(r.ok, false);
  assert.deepEqual(
    !r.ok && r.errors.map((e) => e.field),
    ['healthChecks[1]'],
    'the one check that does not compile, by its index',
  );
  assert.match(!r.ok ? (r.errors[0]?.message ?? '') : '', /^object\.expression does not compile: /);
});

test("an expression naming a variable it does not have is refused when it compiles, macros' own variables aside", () => {
  const refused: [string, RegExp][] = [
    [
      "self.status.health == 'HEALTH_OK'",
      /^Error: object\.expression does not compile: unknown name "self"; it may use object$/,
    ],
    ['has(obj.status)', /unknown name "obj"/],
    ['object.items.exists(i, i.x == y)', /unknown name "y"/],
    ["{'a': z}.a == 1", /unknown name "z"/],
  ];
  for (const [expression, want] of refused) assert.throws(() => objectCheck(expression), want, expression);
  assert.throws(
    () => promCheck('val > 1'),
    /^Error: prometheus\.condition does not compile: unknown name "val"; it may use value, labels$/,
  );
  const accepted = [
    'object.items.all(i, i.conditions.exists(c, c.ready && i.enabled))',
    'object.items.map(i, i.n).filter(n, n > 1).size() == 0',
    "type(object.status) == map && object.metadata.name.startsWith('x')",
    "{'k': object.x}.k == [object.y][0]",
  ];
  for (const expression of accepted) assert.doesNotThrow(() => objectCheck(expression), expression);
});

test('a valid policy carries its health checks compiled, in order', () => {
  const r = resolvePolicy({
    metadata: { name: 'p' },
    spec: {
      healthChecks: [
        { name: 'ceph', object: { apiVersion: 'v1', kind: 'ConfigMap', name: 'x', expression: 'true' } },
        { name: 'errors', prometheus: { url: 'http://p:9090', query: 'up', condition: '== 1' } },
      ],
    },
  });
  assert.ok(r.ok);
  assert.deepEqual(
    r.policy.healthChecks.map((c) => [c.type, c.name]),
    [
      ['object', 'ceph'],
      ['prometheus', 'errors'],
    ],
  );
  assert.equal(resolvePolicy({ metadata: { name: 'q' }, spec: {} }).ok && true, true);
});

test('an object check: true for every object passes; anything else fails, saying what it read', () => {
  const byName = objectCheck("object.status.health == 'HEALTH_OK'");
  const bySelector = objectCheck("object.status.health == 'HEALTH_OK'", {
    selector: { matchLabels: { app: 'ceph' } },
  });
  const cases: { what: string; check: ObjectCheck; read: ObjectsRead; healthy: boolean; reading: string }[] =
    [
      {
        what: 'the named object healthy',
        check: byName,
        read: { objects: [widget('ceph', 'HEALTH_OK')] },
        healthy: true,
        reading: 'Widget rook/ceph: true',
      },
      {
        what: 'the named object unhealthy: its status shown',
        check: byName,
        read: { objects: [widget('ceph', 'HEALTH_WARN')] },
        healthy: false,
        reading: 'Widget rook/ceph: false; its status: {"health":"HEALTH_WARN"}',
      },
      {
        what: 'the named object missing',
        check: byName,
        read: { objects: [] },
        healthy: false,
        reading: 'Widget rook/ceph not found',
      },
      {
        what: 'no object matches the selector',
        check: bySelector,
        read: { objects: [] },
        healthy: false,
        reading: 'no Widget rook/{app=ceph} exists (nothing to check)',
      },
      {
        what: 'every matching object healthy',
        check: bySelector,
        read: { objects: [widget('a', 'HEALTH_OK'), widget('b', 'HEALTH_OK')] },
        healthy: true,
        reading: 'Widget rook/{app=ceph}: true for all 2',
      },
      {
        what: 'one matching object unhealthy',
        check: bySelector,
        read: { objects: [widget('a', 'HEALTH_OK'), widget('b', 'HEALTH_ERR')] },
        healthy: false,
        reading: 'Widget rook/b: false; its status: {"health":"HEALTH_ERR"}',
      },
      {
        what: 'the read failed',
        check: byName,
        read: { error: 'connection refused' },
        healthy: false,
        reading: 'Widget rook/ceph could not be read: connection refused',
      },
      {
        what: 'a field the object lacks: a runtime error fails closed',
        check: objectCheck('object.status.missing == 1'),
        read: { objects: [widget('ceph', 'HEALTH_OK')] },
        healthy: false,
        reading: 'Widget rook/ceph: the expression failed: field not found: missing',
      },
      {
        what: 'an expression that gives no bool',
        check: objectCheck('object.status.health'),
        read: { objects: [widget('ceph', 'HEALTH_OK')] },
        healthy: false,
        reading: 'Widget rook/ceph: the expression gave "HEALTH_OK", not a bool',
      },
      {
        what: 'an unknown function fails when it runs',
        check: objectCheck('nope(object)'),
        read: { objects: [widget('ceph', 'HEALTH_OK')] },
        healthy: false,
        reading: 'Widget rook/ceph: the expression failed: unbound function: nope',
      },
    ];
  for (const c of cases) {
    assert.deepEqual(
      objectVerdict(c.check, c.read),
      { name: 'ceph', healthy: c.healthy, reading: c.reading },
      c.what,
    );
  }
});

test("CEL reads Kubernetes JSON as Kubernetes does: whole numbers are ints, conditions' macros and RE2 work", () => {
  const cases: [string, object, boolean][] = [
    ['object.status.readyReplicas + 1 == 4', { status: { readyReplicas: 3 } }, true],
    ['object.status.ratio < 1', { status: { ratio: 0.5 } }, true],
    [
      "object.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')",
      { status: { conditions: [{ type: 'Ready', status: 'True' }] } },
      true,
    ],
    [
      "has(object.status.health) && object.status.health.matches('^HEALTH_(OK|WARN)$')",
      { status: { health: 'HEALTH_WARN' } },
      true,
    ],
    ["object.metadata.name.lowerAscii() == 'ceph'", { metadata: { name: 'CEPH' } }, true],
    ['has(object.status.missing)', { status: {} }, false],
  ];
  for (const [expression, object, want] of cases) {
    assert.deepEqual(
      compileCel(expression, ['object'])({ object: celValue(object) }),
      { ok: true, value: want },
      expression,
    );
  }
});

test('a Prometheus check: the condition true for every sample passes; else it fails naming the sample', () => {
  const sample = (value: number, labels: Record<string, string> = {}) => ({ labels, value });
  const cases: {
    what: string;
    check: PrometheusCheck;
    read: SamplesRead;
    healthy: boolean;
    reading: string;
  }[] = [
    {
      what: 'every sample meets it',
      check: promCheck('< 0.05'),
      read: { samples: [sample(0.01, { job: 'api' }), sample(0, { job: 'web' })] },
      healthy: true,
      reading: '{job="api"} 0.01, {job="web"} 0 meet "< 0.05"',
    },
    {
      what: 'one sample fails: named with its labels and value',
      check: promCheck('< 0.05'),
      read: { samples: [sample(0.01, { job: 'api' }), sample(0.2, { __name__: 'errors', job: 'web' })] },
      healthy: false,
      reading: 'errors{job="web"} 0.2 fails "< 0.05"',
    },
    {
      what: 'a scalar',
      check: promCheck('== 0'),
      read: { samples: [sample(0)] },
      healthy: true,
      reading: '0 meet "== 0"',
    },
    {
      what: 'a CEL condition over labels and value',
      check: promCheck("labels.job == 'api' ? value < 1.0 : true"),
      read: { samples: [sample(3, { job: 'web' }), sample(0.5, { job: 'api' })] },
      healthy: true,
      reading: `{job="web"} 3, {job="api"} 0.5 meet "labels.job == 'api' ? value < 1.0 : true"`,
    },
    {
      what: 'no sample: unhealthy by default',
      check: promCheck('== 0'),
      read: { samples: [] },
      healthy: false,
      reading: 'the query returned no sample (whenEmpty: Unhealthy)',
    },
    {
      what: 'no sample, whenEmpty Healthy',
      check: promCheck('== 0', 'Healthy'),
      read: { samples: [] },
      healthy: true,
      reading: 'the query returned no sample (whenEmpty: Healthy)',
    },
    {
      what: 'Prometheus could not be asked',
      check: promCheck('== 0'),
      read: { error: 'Prometheus unreachable at http://prom:9090: ECONNREFUSED' },
      healthy: false,
      reading: 'Prometheus unreachable at http://prom:9090: ECONNREFUSED',
    },
    {
      what: 'a condition that stops on an error',
      check: promCheck('labels.missing == "x"'),
      read: { samples: [sample(1, { job: 'a' })] },
      healthy: false,
      reading: '{job="a"} 1: the condition failed: field not found: missing',
    },
    {
      what: 'a condition that gives no bool',
      check: promCheck('value'),
      read: { samples: [sample(1)] },
      healthy: false,
      reading: '1: the condition gave 1, not a bool',
    },
  ];
  for (const c of cases) {
    assert.deepEqual(
      prometheusVerdict(c.check, c.read),
      { name: 'errors', healthy: c.healthy, reading: c.reading },
      c.what,
    );
  }
});

test('a long reading is clipped, and the first failing check is the one a status names', () => {
  const many = { samples: Array.from({ length: 5 }, (_, i) => ({ labels: { i: String(i) }, value: 0 })) };
  assert.equal(
    prometheusVerdict(promCheck('== 0'), many).reading,
    '{i="0"} 0, {i="1"} 0, {i="2"} 0 and 2 more meet "== 0"',
  );
  const long = objectVerdict(objectCheck('false'), { objects: [widget('ceph', 'x'.repeat(500))] });
  assert.equal(long.reading.length, 300);
  assert.ok(long.reading.endsWith('…'));
  const reading = {
    at: 1,
    checks: [
      { name: 'a', healthy: true, reading: 'fine' },
      { name: 'b', healthy: false, reading: 'HEALTH_WARN' },
      { name: 'c', healthy: false, reading: 'down' },
    ],
  };
  assert.deepEqual(firstFailing(reading), { name: 'b', healthy: false, reading: 'HEALTH_WARN' });
  assert.equal(firstFailing({ at: 1, checks: [{ name: 'a', healthy: true, reading: 'fine' }] }), undefined);
});

test('parseQueryResponse takes vectors and scalars and says what is wrong with anything else', () => {
  const ok = (data: object) => JSON.stringify({ status: 'success', data });
  assert.deepEqual(
    parseQueryResponse(ok({ resultType: 'vector', result: [{ metric: { job: 'a' }, value: [1, '0.5'] }] })),
    [{ labels: { job: 'a' }, value: 0.5 }],
  );
  assert.deepEqual(parseQueryResponse(ok({ resultType: 'scalar', result: [1, '3'] })), [
    { labels: {}, value: 3 },
  ]);
  assert.deepEqual(
    parseQueryResponse(
      ok({
        resultType: 'vector',
        result: [
          { metric: {}, value: [1, '+Inf'] },
          { metric: {}, value: [1, '-Inf'] },
          { metric: {}, value: [1, 'NaN'] },
        ],
      }),
    ),
    [
      { labels: {}, value: Number.POSITIVE_INFINITY },
      { labels: {}, value: Number.NEGATIVE_INFINITY },
      { labels: {}, value: Number.NaN },
    ],
  );
  const bad: [string, RegExp][] = [
    ['<html>', /^no JSON: <html>$/],
    ['[]', /^no JSON object/],
    [
      JSON.stringify({ status: 'error', error: 'parse error at char 3' }),
      /^status "error": parse error at char 3$/,
    ],
    [
      ok({ resultType: 'matrix', result: [] }),
      /^a matrix result; a health check takes an instant vector or a scalar$/,
    ],
    [
      ok({ resultType: 'vector', result: [{ metric: { a: 1 }, value: [1, '1'] }] }),
      /^a malformed sample at result\[0\]$/,
    ],
    [
      ok({ resultType: 'vector', result: [{ metric: {}, value: [1, 'many'] }] }),
      /^a malformed sample at result\[0\]$/,
    ],
    [ok({ resultType: 'scalar', result: 3 }), /^a malformed scalar$/],
  ];
  for (const [body, want] of bad) {
    const parsed = parseQueryResponse(body);
    assert.ok(parsed instanceof Error, body);
    assert.match(parsed.message, want, body);
  }
});

test('a failed read of checked objects says what happened; forbidden, what the admin must grant', () => {
  const byName = objectCheck('true');
  assert.deepEqual(readError(byName, 404, 'the server could not find the requested resource (HTTP 404)'), {
    error: 'the server could not find the requested resource (HTTP 404)',
  });
  assert.deepEqual(readError(byName, 403, 'widgets is forbidden (HTTP 403)'), {
    error:
      "forbidden: grant the operator's ServiceAccount get and list on Widget (test.nuo.dev/v1) in namespace rook: widgets is forbidden (HTTP 403)",
  });
  assert.deepEqual(readError(byName, undefined, 'connect ECONNREFUSED'), { error: 'connect ECONNREFUSED' });
});
