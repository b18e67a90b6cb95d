/**
 * The Prometheus alert blocker and the PromQL health checks against a real Prometheus (Debian's package
 * `prometheus`): a target this test controls serves a gauge, a rule fires NuoTestBlock while the gauge is
 * 1, PrometheusBlocker reads the server's alerts and a health check queries the gauge. Also the
 * fail-closed answers: an HTTP error, a malformed body, a bad query, a server gone.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  type CheckResult,
  type PrometheusCheck,
  prometheusVerdict,
  resolveHealthCheck,
} from '../../src/policy/health-checks.ts';
import {
  type BlockerVerdict,
  PrometheusBlocker,
  type PrometheusBlockerSpec,
} from '../../src/policy/prometheus.ts';
import { queryPrometheus } from '../../src/policy/prometheus-query.ts';
import { get } from '../../src/sim/cluster/net.ts';
import type { Component } from '../../src/sim/cluster/process.ts';
import { pollUntil } from '../../src/util/poll.ts';
import { DEADLINE_MS, type RunningPrometheus, startPrometheus, Target } from './prometheus-server.ts';

const target = new Target();
const tests = new AbortController();
let server: RunningPrometheus | undefined;
let prometheus: Component | undefined;
let promUrl = '';

before(async () => {
  server = await startPrometheus(target, tests.signal);
  prometheus = server.component;
  promUrl = server.url;
});

after(async () => {
  tests.abort();
  await server?.stop();
});

/**
 * Waits until the rule has been evaluated on a scrape taken after now, so that what Prometheus answers
 * reflects the gauge as the test set it.
 */
async function untilEvaluatedAfterNow(): Promise<void> {
  const since = Date.now();
  await pollUntil(
    'a rule evaluation after a fresh scrape',
    async () => {
      const scrape = target.lastScrapeMs;
      if (scrape <= since) throw new Error('no scrape yet');
      const rules = JSON.parse((await get(`${promUrl}/api/v1/rules`)).body) as {
        data: { groups: { lastEvaluation: string }[] };
      };
      const evaluated = Date.parse(rules.data.groups[0]?.lastEvaluation ?? '');
      if (!(evaluated > scrape))
        throw new Error(`last evaluation ${evaluated} is not after the scrape at ${scrape}`);
      return true;
    },
    { timeoutMs: DEADLINE_MS, intervalMs: 100, signal: tests.signal },
  );
}

/** Polls check() until `want` accepts its verdict; a timeout reports the last verdict. */
function untilVerdict(
  blocker: PrometheusBlocker,
  what: string,
  want: (v: BlockerVerdict) => boolean,
): Promise<BlockerVerdict> {
  return pollUntil(
    what,
    async () => {
      const verdict = await blocker.check(tests.signal);
      if (!want(verdict)) throw new Error(`blocked=${verdict.blocked}: ${verdict.reason}`);
      return verdict;
    },
    { timeoutMs: DEADLINE_MS, intervalMs: 200, signal: tests.signal },
  );
}

function targetUrl(): string {
  return `http://127.0.0.1:${(target.server.address() as { port: number }).port}`;
}

function blockerFor(spec: Partial<PrometheusBlockerSpec> = {}): PrometheusBlocker {
  return new PrometheusBlocker({ url: promUrl, ...spec });
}

test('gauge 0: the rule is evaluated on it and nothing blocks', async () => {
  target.gauge = 0;
  await untilEvaluatedAfterNow();
  assert.deepEqual(await blockerFor().check(tests.signal), {
    blocked: false,
    reason: 'no matching alert firing',
  });
});

test('gauge 1: NuoTestBlock fires and blocks, naming the alert and its labels', async () => {
  target.gauge = 1;
  const verdict = await untilVerdict(blockerFor(), 'NuoTestBlock to block', (v) => v.blocked);
  assert.match(verdict.reason, /^alert NuoTestBlock\{.*severity="page".*\} firing$/);
});

test('while NuoTestBlock fires, a blocker whose matchers or ignore list exclude it is not blocked', async () => {
  assert.equal(target.gauge, 1);
  const all = blockerFor();
  assert.equal((await all.check(tests.signal)).blocked, true, 'NuoTestBlock must be firing for this test');
  assert.deepEqual(await blockerFor({ matchers: { severity: 'ticket' } }).check(tests.signal), {
    blocked: false,
    reason: 'no matching alert firing (1 firing, none matching)',
  });
  assert.equal((await blockerFor({ ignoreAlerts: ['NuoTestBlock'] }).check(tests.signal)).blocked, false);
  assert.equal((await blockerFor({ alerts: 'NuoTest' }).check(tests.signal)).blocked, false, 'anchored');
  assert.equal(
    (await blockerFor({ matchers: { severity: 'page' }, alerts: 'NuoTest.*' }).check(tests.signal)).blocked,
    true,
  );
  assert.equal((await all.check(tests.signal)).blocked, true, 'NuoTestBlock must still be firing');
});

test('gauge back to 0: the alert resolves and nothing blocks again', async () => {
  target.gauge = 0;
  const verdict = await untilVerdict(blockerFor(), 'NuoTestBlock to resolve', (v) => !v.blocked);
  assert.equal(verdict.reason, 'no matching alert firing');
});

/** A PromQL health check on the test's server. */
const promQL = (query: string, condition: string, whenEmpty?: 'Healthy'): PrometheusCheck =>
  resolveHealthCheck({
    name: 'gauge',
    prometheus: { url: promUrl, query, condition, ...(whenEmpty ? { whenEmpty } : {}) },
  }) as PrometheusCheck;

/** The check's verdict as the operator reaches it: the query asked, the condition judged. */
async function judge(check: PrometheusCheck): Promise<CheckResult> {
  return prometheusVerdict(check, await queryPrometheus(check.url, check.query, tests.signal));
}

function untilJudged(check: PrometheusCheck, healthy: boolean): Promise<CheckResult> {
  return pollUntil(
    `health check ${check.query} ${check.condition} to be ${healthy ? 'healthy' : 'unhealthy'}`,
    async () => {
      const result = await judge(check);
      if (result.healthy !== healthy) throw new Error(result.reading);
      return result;
    },
    { timeoutMs: DEADLINE_MS, intervalMs: 200, signal: tests.signal },
  );
}

test('a PromQL health check passes while the gauge meets its condition and fails naming the sample when it does not', async () => {
  const check = promQL('nuo_test_blocker', '== 0');
  target.gauge = 0;
  const passing = await untilJudged(check, true);
  assert.match(
    passing.reading,
    /^nuo_test_blocker\{instance="127\.0\.0\.1:\d+", job="nuo-test"\} 0 meet "== 0"$/,
  );
  target.gauge = 1;
  const failing = await untilJudged(check, false);
  assert.match(failing.reading, /^nuo_test_blocker\{instance=.*, job="nuo-test"\} 1 fails "== 0"$/);
  assert.equal(
    (await judge(promQL('sum(nuo_test_blocker)', 'value >= 1.0'))).healthy,
    true,
    'a CEL condition',
  );
  target.gauge = 0;
  await untilJudged(check, true);
});

test('a PromQL health check fails closed on a query the server refuses, a range vector, or no sample', async () => {
  const refused = await judge(promQL('nuo_test_blocker[', '== 0'));
  assert.equal(refused.healthy, false);
  assert.match(refused.reading, new RegExp(`^Prometheus at ${promUrl} answered HTTP 400: .*parse error`));
  assert.deepEqual(await judge(promQL('nuo_test_blocker[1m]', '== 0')), {
    name: 'gauge',
    healthy: false,
    reading: `Prometheus at ${promUrl} answered the query with a matrix result; a health check takes an instant vector or a scalar`,
  });
  assert.deepEqual(await judge(promQL('nuo_no_such_metric', '== 0')), {
    name: 'gauge',
    healthy: false,
    reading: 'the query returned no sample (whenEmpty: Unhealthy)',
  });
  assert.equal((await judge(promQL('nuo_no_such_metric', '== 0', 'Healthy'))).healthy, true);
  assert.deepEqual(await judge(promQL('scalar(nuo_test_blocker)', '== 0')), {
    name: 'gauge',
    healthy: true,
    reading: '0 meet "== 0"',
  });
});

test('an HTTP error or a malformed answer blocks, saying so', async () => {
  const fake = blockerFor({ url: `${targetUrl()}/fake/` });
  const cases: { status: number; body: string; reason: RegExp }[] = [
    { status: 503, body: 'Service   Unavailable\n', reason: /answered HTTP 503: Service Unavailable$/ },
    {
      status: 200,
      body: '<html>login</html>',
      reason: /malformed alerts response: not JSON: <html>login<\/html>$/,
    },
    {
      status: 200,
      body: '{"status":"error","error":"x"}',
      reason: /malformed .*status is "error", not "success"$/,
    },
    {
      status: 200,
      body: '{"status":"success","data":{}}',
      reason: /malformed .*data\.alerts is not a list$/,
    },
    {
      status: 200,
      body: '{"status":"success","data":{"alerts":[{"labels":{"alertname":1},"state":"firing"}]}}',
      reason: /malformed .*data\.alerts\[0\] lacks string labels or state$/,
    },
  ];
  for (const c of cases) {
    target.fakeAlerts = c;
    const verdict = await fake.check(tests.signal);
    assert.equal(verdict.blocked, true, c.body);
    assert.equal(verdict.unavailable, true, `${c.body}: Prometheus could not be asked, no alert fires`);
    assert.match(verdict.reason, c.reason);
  }
  target.fakeAlerts = { status: 200, body: '{"status":"success","data":{"alerts":[]}}' };
  assert.equal((await fake.check(tests.signal)).blocked, false, 'a well-formed empty answer does not block');
});

test('a server that sends headers and then stalls blocks once the timeout passes, or the caller aborts', async () => {
  const stalled = new PrometheusBlocker({ url: `${targetUrl()}/stall` }, { timeoutMs: 300 });
  const started = Date.now();
  const verdict = await stalled.check(tests.signal);
  assert.deepEqual(verdict, {
    blocked: true,
    unavailable: true,
    reason: `Prometheus unreachable at ${targetUrl()}/stall: no answer within 300 ms`,
  });
  assert.ok(Date.now() - started < 5000, 'the timeout option is honoured');
  const cancelled = new AbortController();
  setTimeout(() => cancelled.abort(new Error('operator stopping')), 50);
  assert.deepEqual(await stalled.check(cancelled.signal), {
    blocked: true,
    unavailable: true,
    reason: `Prometheus check at ${targetUrl()}/stall aborted`,
  });
});

test('Prometheus gone: blocked and the health checks failing, saying it is unreachable', async () => {
  assert.ok(prometheus);
  await prometheus.stop();
  assert.notEqual(prometheus.exitCode, undefined);
  const verdict = await blockerFor().check(tests.signal);
  assert.equal(verdict.blocked, true);
  assert.equal(verdict.unavailable, true);
  assert.match(verdict.reason, new RegExp(`^Prometheus unreachable at ${promUrl}: .*ECONNREFUSED`));
  const check = await judge(promQL('nuo_test_blocker', '== 0'));
  assert.equal(check.healthy, false, 'a health check fails closed');
  assert.match(check.reading, new RegExp(`^Prometheus unreachable at ${promUrl}: .*ECONNREFUSED`));
});
