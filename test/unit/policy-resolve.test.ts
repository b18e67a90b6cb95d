import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { UpdatePolicySpec } from '../../src/api/update-policy.ts';
import { resolvePolicy } from '../../src/policy/resolve.ts';
import { windowState } from '../../src/policy/windows.ts';

const policy = (spec: unknown, generation = 1) => ({
  metadata: { name: 'workers', generation },
  spec: spec as UpdatePolicySpec,
});

test('an empty policy resolves to the documented defaults and selects every node', () => {
  const r = resolvePolicy(policy({}));
  assert.ok(r.ok, JSON.stringify(!r.ok && r.errors));
  const p = r.policy;
  assert.equal(p.name, 'workers');
  assert.equal(p.generation, 1);
  assert.equal(p.selects({ any: 'thing' }), true);
  assert.deepEqual(p.maxUnavailable, { kind: 'count', value: 1 });
  assert.equal(p.maxUnavailablePerZone, undefined);
  assert.equal(p.zoneLabel, 'topology.kubernetes.io/zone');
  assert.equal(p.zoneOrder, 'Parallel');
  assert.equal(p.paused, false);
  assert.equal(windowState(p.windows, new Date('2026-11-25T03:00:00Z')).open, true, 'no window: always open');
  assert.equal(p.prometheus, undefined);
  assert.deepEqual(p.podBlockers, []);
  assert.deepEqual(p.drain, {
    timeoutMs: 600_000,
    gracePeriodSeconds: -1,
    deleteEmptyDirData: false,
    force: false,
    podSelector: '',
    skipWaitForDeleteTimeoutSeconds: 0,
    waitFor: [],
    onFailure: { action: 'Retry', afterAttempts: 3 },
  });
  assert.deepEqual(p.reboot, {
    rebootTimeoutMs: 600_000,
    returnTimeoutMs: 600_000,
    soakMs: 30_000,
    minGrantSpacingMs: 0,
    retryBackoffMs: 60_000,
    retryBackoffMaxMs: 3_600_000,
    maxIneffectiveReboots: 3,
    beforeRebootAnnotations: [],
    afterRebootAnnotations: [],
    pendingTaint: true,
  });
  assert.equal(p.circuitBreaker, undefined);
});

test('every field is parsed: selectors, budgets, windows, blockers, drain and reboot settings', () => {
  const r = resolvePolicy(
    policy({
      nodeSelector: {
        matchLabels: { pool: 'workers' },
        matchExpressions: [{ key: 'gpu', operator: 'DoesNotExist' }],
      },
      maxUnavailable: '20%',
      maxUnavailablePerZone: 1,
      zoneOrder: 'OneAtATime',
      windows: { weekly: [{ days: ['Sat'], start: '02:00', end: '06:00', timeZone: 'Europe/Berlin' }] },
      blockers: {
        prometheus: { url: 'http://prometheus:9090', alerts: 'Node.*' },
        pods: [
          {
            selector: { matchLabels: { app: 'backup' } },
            namespaceSelector: { matchLabels: { tier: 'db' } },
          },
        ],
      },
      drain: {
        timeout: '30m',
        podSelector: 'app!=logger',
        skipWaitForDeleteTimeoutSeconds: 20,
        waitFor: [
          { selector: { matchLabels: { kind: 'batch' } }, maxWait: '2h' },
          {
            selector: { matchLabels: { kind: 'etl' } },
            namespaceSelector: { matchLabels: { tier: 'data' } },
            maxWait: '90s',
            afterMaxWait: 'Fail',
          },
        ],
        onFailure: { action: 'Skip', afterAttempts: 2 },
      },
      reboot: { soak: '2m', beforeRebootAnnotations: ['example.com/ready'] },
      circuitBreaker: { maxNotReady: '30%' },
    }),
  );
  assert.ok(r.ok, JSON.stringify(!r.ok && r.errors));
  const p = r.policy;
  assert.equal(p.selects({ pool: 'workers' }), true);
  assert.equal(p.selects({ pool: 'workers', gpu: 'a100' }), false);
  assert.equal(p.selects({ pool: 'infra' }), false);
  assert.deepEqual(p.maxUnavailable, { kind: 'percent', value: 20 });
  assert.deepEqual(p.maxUnavailablePerZone, { kind: 'count', value: 1 });
  assert.equal(p.zoneOrder, 'OneAtATime');
  // Saturday 2026-11-28 03:00 in Berlin is 02:00 UTC: inside; Friday is not.
  assert.equal(windowState(p.windows, new Date('2026-11-28T02:00:00Z')).open, true);
  assert.equal(windowState(p.windows, new Date('2026-11-27T02:00:00Z')).open, false);
  assert.equal(p.prometheus?.url, 'http://prometheus:9090');
  assert.equal(p.podBlockers.length, 1);
  assert.equal(p.podBlockers[0]?.selector, 'app=backup');
  assert.equal(p.podBlockers[0]?.namespaces({ tier: 'web' }), false);
  assert.equal(p.drain.timeoutMs, 1_800_000);
  assert.equal(p.drain.podSelector, 'app!=logger');
  assert.deepEqual(p.drain.onFailure, { action: 'Skip', afterAttempts: 2 });
  assert.equal(p.drain.skipWaitForDeleteTimeoutSeconds, 20);
  assert.deepEqual(p.drain.waitFor, [
    {
      name: 'drain.waitFor[0]',
      selector: 'kind=batch',
      namespaceSelector: '',
      maxWaitSeconds: 7200,
      afterMaxWait: 'Evict',
    },
    {
      name: 'drain.waitFor[1]',
      selector: 'kind=etl',
      namespaceSelector: 'tier=data',
      maxWaitSeconds: 90,
      afterMaxWait: 'Fail',
    },
  ]);
  assert.equal(p.reboot.soakMs, 120_000);
  assert.deepEqual(p.reboot.beforeRebootAnnotations, ['example.com/ready']);
  assert.deepEqual(p.circuitBreaker, { kind: 'percent', value: 30 });
});

test('what the API server cannot refuse is named by its field, every problem at once, and nothing is used', () => {
  const r = resolvePolicy(
    policy({
      windows: {
        weekly: [{ days: ['Mon'], start: '01:00', end: '02:00', timeZone: 'Europe/Berlinn' }],
        cron: [{ schedule: '61 * * * *', duration: '1h' }],
      },
      blockers: { prometheus: { url: 'http://user:secret@prometheus:9090', alerts: '(' } },
      drain: { podSelector: 'app in (a', waitFor: [{ selector: {}, maxWait: '5m' }] },
      nodeSelector: { matchExpressions: [{ key: 'pool', operator: 'In', values: [] }] },
    }),
  );
  assert.equal(r.ok, false);
  const fields = r.ok ? [] : r.errors.map((e) => e.field);
  for (const field of [
    'windows.weekly[0].timeZone',
    'windows.cron[0].schedule',
    'blockers.prometheus.url',
    'blockers.prometheus.alerts',
    'drain.podSelector',
    'drain.waitFor',
    'nodeSelector',
  ]) {
    assert.ok(fields.includes(field), `${field} in ${fields.join(', ')}`);
  }
  const message = r.ok ? '' : r.errors.find((e) => e.field === 'nodeSelector')?.message;
  assert.match(message ?? '', /In needs at least one value/);
});

test('what a CRD older than these types let in is refused by the schema, by field', () => {
  for (const [spec, field] of [
    [{ maxUnavailable: true }, 'maxUnavailable'],
    [{ zoneOrder: 'Random' }, 'zoneOrder'],
    [{ drain: { timeout: '10 minutes' } }, 'drain.timeout'],
    [{ reboot: { maxIneffectiveReboots: 0 } }, 'reboot.maxIneffectiveReboots'],
    [
      { windows: { weekly: [{ days: ['Monday'], start: '01:00', end: '02:00' }] } },
      'windows.weekly[0].days[0]',
    ],
  ] as const) {
    const r = resolvePolicy(policy(spec));
    assert.equal(r.ok, false, JSON.stringify(spec));
    assert.ok(
      !r.ok && r.errors.some((e) => e.field === field),
      `${field}: ${JSON.stringify(!r.ok && r.errors)}`,
    );
  }
});

test('a count or percentage the schema lets through as a string is still checked', () => {
  const r = resolvePolicy(policy({ maxUnavailable: '0%' }));
  assert.equal(r.ok, false);
  assert.match(r.ok ? '' : (r.errors[0]?.message ?? ''), /between 1% and 100%/);
});
