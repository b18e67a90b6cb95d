import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  evaluateAlerts,
  type PromAlert,
  type PrometheusBlockerSpec,
  parseAlertsResponse,
  parsePrometheusSpec,
} from '../../src/policy/prometheus.ts';
import { apiUrl } from '../../src/policy/prometheus-http.ts';

const URL_ = 'http://prometheus.monitoring:9090';

test('parsePrometheusSpec accepts valid specs and keeps only the fields given', () => {
  const cases: { spec: unknown; want: PrometheusBlockerSpec }[] = [
    { spec: { url: URL_ }, want: { url: URL_ } },
    { spec: { url: 'https://prom.example/prometheus/' }, want: { url: 'https://prom.example/prometheus/' } },
    {
      spec: {
        url: URL_,
        alerts: 'Node.*|Etcd(Down|NoLeader)',
        matchers: { severity: 'page' },
        ignoreAlerts: ['Watchdog'],
      },
      want: {
        url: URL_,
        alerts: 'Node.*|Etcd(Down|NoLeader)',
        matchers: { severity: 'page' },
        ignoreAlerts: ['Watchdog'],
      },
    },
    {
      spec: { url: URL_, matchers: {}, ignoreAlerts: [] },
      want: { url: URL_, matchers: {}, ignoreAlerts: [] },
    },
  ];
  for (const { spec, want } of cases) {
    assert.deepEqual(parsePrometheusSpec(spec), { ok: true, value: want }, JSON.stringify(spec));
  }
});

test('parsePrometheusSpec refuses bad specs, naming each field and what it accepts', () => {
  const cases: { spec: unknown; field?: string; want: { field: string; message: RegExp }[] }[] = [
    {
      spec: undefined,
      want: [{ field: 'blockers.prometheus', message: /must be an object with at least `url`/ }],
    },
    { spec: ['x'], want: [{ field: 'blockers.prometheus', message: /must be an object/ }] },
    {
      spec: {},
      want: [
        {
          field: 'blockers.prometheus.url',
          message: /is required; accepted: an http:\/\/ or https:\/\/ URL/,
        },
      ],
    },
    { spec: { url: 42 }, want: [{ field: 'blockers.prometheus.url', message: /is required/ }] },
    {
      spec: { url: 'prometheus:9090x' },
      want: [{ field: 'blockers.prometheus.url', message: /scheme "prometheus:" is not supported/ }],
    },
    {
      spec: { url: 'not a url' },
      want: [{ field: 'blockers.prometheus.url', message: /"not a url" is not a URL; accepted/ }],
    },
    {
      spec: { url: 'ftp://prom/' },
      want: [{ field: 'blockers.prometheus.url', message: /scheme "ftp:" is not supported/ }],
    },
    {
      spec: { url: 'file:///etc/passwd' },
      want: [{ field: 'blockers.prometheus.url', message: /scheme "file:"/ }],
    },
    {
      spec: { url: 'http://admin:secret@prom:9090' },
      want: [{ field: 'blockers.prometheus.url', message: /must not contain credentials/ }],
    },
    {
      spec: { url: 'http://admin@prom:9090' },
      want: [{ field: 'blockers.prometheus.url', message: /must not contain credentials/ }],
    },
    {
      spec: { url: 'http://prom:9090/?x=1' },
      want: [{ field: 'blockers.prometheus.url', message: /must not have a query or fragment/ }],
    },
    {
      spec: { url: 'http://prom:9090/#top' },
      want: [{ field: 'blockers.prometheus.url', message: /must not have a query or fragment/ }],
    },
    {
      spec: { url: URL_, alerts: 'Node(' },
      want: [
        {
          field: 'blockers.prometheus.alerts',
          message:
            /does not compile \(.+\); accepted: a regular expression matched against the whole alertname/,
        },
      ],
    },
    {
      spec: { url: URL_, alerts: '*' },
      want: [{ field: 'blockers.prometheus.alerts', message: /does not compile/ }],
    },
    {
      spec: { url: URL_, alerts: 3 },
      want: [{ field: 'blockers.prometheus.alerts', message: /must be a string/ }],
    },
    {
      spec: { url: URL_, matchers: ['severity'] },
      want: [
        {
          field: 'blockers.prometheus.matchers',
          message: /must be an object; accepted: a map of Prometheus label names/,
        },
      ],
    },
    {
      spec: { url: URL_, matchers: { 'bad-name': 'x' } },
      want: [{ field: 'blockers.prometheus.matchers.bad-name', message: /is not a label name/ }],
    },
    {
      spec: { url: URL_, matchers: { severity: 1 } },
      want: [{ field: 'blockers.prometheus.matchers.severity', message: /must be a string/ }],
    },
    {
      spec: { url: URL_, ignoreAlerts: 'Watchdog' },
      want: [
        {
          field: 'blockers.prometheus.ignoreAlerts',
          message: /must be a list; accepted: a list of alertnames/,
        },
      ],
    },
    {
      spec: { url: URL_, ignoreAlerts: ['ok', '', 7] },
      want: [
        { field: 'blockers.prometheus.ignoreAlerts[1]', message: /must be a non-empty string/ },
        { field: 'blockers.prometheus.ignoreAlerts[2]', message: /must be a non-empty string/ },
      ],
    },
    {
      spec: { url: URL_, matcher: { severity: 'page' } },
      want: [
        {
          field: 'blockers.prometheus.matcher',
          message: /unknown field; accepted: url, alerts, matchers, ignoreAlerts/,
        },
      ],
    },
    // Every problem at once, under the caller's field name.
    {
      spec: { url: 'ftp://x', alerts: '(' },
      field: 'spec.blockers.prometheus',
      want: [
        { field: 'spec.blockers.prometheus.url', message: /scheme "ftp:"/ },
        { field: 'spec.blockers.prometheus.alerts', message: /does not compile/ },
      ],
    },
  ];
  for (const { spec, field, want } of cases) {
    const got = field === undefined ? parsePrometheusSpec(spec) : parsePrometheusSpec(spec, field);
    assert.equal(got.ok, false, JSON.stringify(spec));
    if (got.ok) continue;
    assert.deepEqual(
      got.errors.map((e) => e.field),
      want.map((w) => w.field),
      JSON.stringify(spec),
    );
    want.forEach((w, i) => {
      assert.match(got.errors[i]?.message ?? '', w.message, JSON.stringify(spec));
    });
  }
});

function alert(name: string, state: string, labels: Record<string, string> = {}): PromAlert {
  return { labels: { alertname: name, ...labels }, state };
}

test('evaluateAlerts: only firing alerts that match the pattern, every matcher and no ignore entry block', () => {
  const nodeDown = alert('NodeDown', 'firing', { instance: 'a', severity: 'page' });
  const cases: {
    name: string;
    alerts: PromAlert[];
    spec?: Partial<PrometheusBlockerSpec>;
    want: { blocked: boolean; reason: string };
  }[] = [
    { name: 'no alerts', alerts: [], want: { blocked: false, reason: 'no matching alert firing' } },
    {
      name: 'firing, default pattern',
      alerts: [nodeDown],
      want: { blocked: true, reason: 'alert NodeDown{instance="a", severity="page"} firing' },
    },
    {
      name: 'pending does not block',
      alerts: [alert('NodeDown', 'pending')],
      want: { blocked: false, reason: 'no matching alert firing' },
    },
    {
      name: 'inactive does not block',
      alerts: [alert('NodeDown', 'inactive')],
      want: { blocked: false, reason: 'no matching alert firing' },
    },
    {
      name: 'no other labels: no braces',
      alerts: [alert('Watchdog', 'firing')],
      want: { blocked: true, reason: 'alert Watchdog firing' },
    },
    {
      name: 'pattern matches',
      alerts: [nodeDown],
      spec: { alerts: 'Node.*' },
      want: { blocked: true, reason: 'alert NodeDown{instance="a", severity="page"} firing' },
    },
    {
      name: 'pattern is anchored at the start',
      alerts: [nodeDown],
      spec: { alerts: 'Down' },
      want: { blocked: false, reason: 'no matching alert firing (1 firing, none matching)' },
    },
    {
      name: 'pattern is anchored at the end',
      alerts: [nodeDown],
      spec: { alerts: 'Node' },
      want: { blocked: false, reason: 'no matching alert firing (1 firing, none matching)' },
    },
    {
      name: 'alternation is anchored as a whole',
      alerts: [nodeDown],
      spec: { alerts: 'Etcd|Node' },
      want: { blocked: false, reason: 'no matching alert firing (1 firing, none matching)' },
    },
    {
      name: 'matcher equal',
      alerts: [nodeDown],
      spec: { matchers: { severity: 'page' } },
      want: { blocked: true, reason: 'alert NodeDown{instance="a", severity="page"} firing' },
    },
    {
      name: 'matcher differs',
      alerts: [nodeDown],
      spec: { matchers: { severity: 'ticket' } },
      want: { blocked: false, reason: 'no matching alert firing (1 firing, none matching)' },
    },
    {
      name: 'matcher label absent',
      alerts: [nodeDown],
      spec: { matchers: { team: 'infra' } },
      want: { blocked: false, reason: 'no matching alert firing (1 firing, none matching)' },
    },
    {
      name: 'every matcher must hold',
      alerts: [nodeDown],
      spec: { matchers: { severity: 'page', instance: 'b' } },
      want: { blocked: false, reason: 'no matching alert firing (1 firing, none matching)' },
    },
    {
      name: 'ignored by name',
      alerts: [nodeDown, alert('Watchdog', 'firing')],
      spec: { ignoreAlerts: ['Watchdog', 'NodeDown'] },
      want: { blocked: false, reason: 'no matching alert firing (2 firing, none matching)' },
    },
    {
      name: 'ignore is exact, not a pattern',
      alerts: [nodeDown],
      spec: { ignoreAlerts: ['Node.*'] },
      want: { blocked: true, reason: 'alert NodeDown{instance="a", severity="page"} firing' },
    },
    {
      name: 'only the matching one is named',
      alerts: [alert('Watchdog', 'firing'), nodeDown, alert('NodeDown', 'pending', { instance: 'z' })],
      spec: { alerts: 'Node.*' },
      want: { blocked: true, reason: 'alert NodeDown{instance="a", severity="page"} firing' },
    },
    {
      name: 'sorted, first three, and how many more',
      alerts: ['E', 'D', 'C', 'B', 'A'].map((n) => alert(n, 'firing')),
      want: { blocked: true, reason: 'alert A firing; alert B firing; alert C firing and 2 more' },
    },
    {
      name: 'label values quoted',
      alerts: [alert('X', 'firing', { msg: 'say "hi"' })],
      want: { blocked: true, reason: 'alert X{msg="say \\"hi\\""} firing' },
    },
  ];
  for (const c of cases) {
    assert.deepEqual(evaluateAlerts(c.alerts, { url: URL_, ...c.spec }), c.want, c.name);
  }
});

test('evaluateAlerts fails closed on a pattern that was never parsed and does not compile', () => {
  const { blocked, reason } = evaluateAlerts([], { url: URL_, alerts: '(' });
  assert.equal(blocked, true);
  assert.match(reason, /^alerts pattern "\(" does not compile: Invalid regular expression/);
});

test('evaluateAlerts keeps the reason to 200 characters', () => {
  const long = alert('NodeDown', 'firing', { description: 'x'.repeat(500) });
  const { blocked, reason } = evaluateAlerts([long], { url: URL_ });
  assert.equal(blocked, true);
  assert.equal(reason.length, 200);
  assert.ok(reason.startsWith('alert NodeDown{description="xxx'), reason);
  assert.ok(reason.endsWith('x…'), reason);
});

test('apiUrl keeps a path prefix and drops trailing slashes', () => {
  const cases: [string, string][] = [
    ['http://p:9090', 'http://p:9090/api/v1/alerts'],
    ['http://p:9090/', 'http://p:9090/api/v1/alerts'],
    ['https://h/prometheus//', 'https://h/prometheus/api/v1/alerts'],
  ];
  for (const [base, want] of cases) assert.equal(apiUrl(base, '/api/v1/alerts'), want);
});

test('parseAlertsResponse accepts the alerts API shape and says what is wrong with anything else', () => {
  const good = {
    status: 'success',
    data: { alerts: [{ labels: { alertname: 'A' }, state: 'firing', value: '1e+00' }] },
  };
  assert.deepEqual(parseAlertsResponse(JSON.stringify(good)), good.data.alerts);
  const bad: [string, string][] = [
    ['', 'not JSON: (empty body)'],
    ['null', 'not a JSON object: null'],
    ['{"status":"error"}', 'status is "error", not "success"'],
    ['{"status":"success"}', 'data.alerts is not a list'],
    ['{"status":"success","data":{"alerts":{}}}', 'data.alerts is not a list'],
    ['{"status":"success","data":{"alerts":[{"labels":{}}]}}', 'data.alerts[0] lacks string labels or state'],
    [
      '{"status":"success","data":{"alerts":[{"state":"firing","labels":[]}]}}',
      'data.alerts[0] lacks string labels or state',
    ],
  ];
  for (const [body, message] of bad) {
    const got = parseAlertsResponse(body);
    assert.ok(got instanceof Error, body);
    assert.equal(got.message, message);
  }
});
