import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ObservedEviction, ObservedNode, RunObservations } from '../../src/whatif/observations.ts';
import { buildReport, evictedAgain, type NodeLine, pdbWhy, waves } from '../../src/whatif/report.ts';
import { reportSvg } from '../../src/whatif/report-svg.ts';
import { formatMs, reportTable } from '../../src/whatif/report-table.ts';

test('pdbWhy names why a PDB allowed no disruption: its spec first, then its pods', () => {
  const cases: [Parameters<typeof pdbWhy>[0], RegExp][] = [
    [undefined, /the PDB is gone/],
    [
      { name: 'a/x', maxUnavailable: 0, expectedPods: 3, currentHealthy: 3 },
      /^maxUnavailable is 0: it never/,
    ],
    [{ name: 'a/x', maxUnavailable: '0%' }, /^maxUnavailable is 0/],
    [{ name: 'a/x', minAvailable: '100%', expectedPods: 2 }, /^minAvailable is 100%/],
    [
      { name: 'a/x', minAvailable: 2, expectedPods: 2, currentHealthy: 1 },
      /^minAvailable 2 equals its 2 pod\(s\)/,
    ],
    [{ name: 'a/x', minAvailable: 3, expectedPods: 2 }, /^minAvailable 3 exceeds its 2 pod\(s\)/],
    [{ name: 'a/x', minAvailable: 5, expectedPods: 6, currentHealthy: 5 }, /^1 of its 6 pod\(s\) unhealthy/],
    [
      { name: 'a/x', maxUnavailable: 1, expectedPods: 6, currentHealthy: 6 },
      /evicted from other nodes, were not yet back/,
    ],
    [{ name: 'a/x', minAvailable: '50%', expectedPods: 4, currentHealthy: 4 }, /not yet back/],
  ];
  for (const [pdb, want] of cases) assert.match(pdbWhy(pdb), want, JSON.stringify(pdb));
});

const line = (name: string, startMs?: number): NodeLine => ({
  name,
  attempts: startMs === undefined ? [] : [{ startMs }],
  finished: false,
  ...(startMs === undefined ? {} : { startMs }),
});

test('waves: first attempts within 2 s of the one before go together; nodes never started are in none', () => {
  assert.deepEqual(
    waves([line('c', 4100), line('a', 0), line('b', 1500), line('d', 9000), line('e'), line('f', 9000)]),
    [
      { wave: 1, startMs: 0, nodes: ['a', 'b'] },
      { wave: 2, startMs: 4100, nodes: ['c'] },
      { wave: 3, startMs: 9000, nodes: ['d', 'f'] },
    ],
  );
  assert.deepEqual(waves([]), []);
});

const eviction = (pod: string, atMs: number, createdMs: number, workload?: string): ObservedEviction => ({
  pod,
  atMs,
  createdMs,
  code: 201,
  ...(workload ? { workload } : {}),
});

test('evictedAgain: pods created after an earlier eviction of their workload, evicted in turn', () => {
  const again = evictedAgain([
    eviction('shop/web-a', 1000, -5000, 'shop/Deployment/web'),
    eviction('shop/web-b', 2000, -5000, 'shop/Deployment/web'),
    // web-c replaced web-a (created after the first eviction) and is evicted again.
    eviction('shop/web-c', 9000, 1200, 'shop/Deployment/web'),
    eviction('shop/db-0', 3000, -5000, 'shop/StatefulSet/db'),
    // The same name again: the StatefulSet made db-0 anew.
    eviction('shop/db-0', 8000, 3100, 'shop/StatefulSet/db'),
    eviction('shop/bare', 4000, -9000),
    { pod: 'shop/web-d', atMs: 500, createdMs: 400, code: 429, workload: 'shop/Deployment/web' },
  ]);
  assert.deepEqual(again, [
    { workload: 'shop/Deployment/web', evictions: 3, again: ['shop/web-c'] },
    { workload: 'shop/StatefulSet/db', evictions: 2, again: ['shop/db-0'] },
  ]);
  assert.deepEqual(evictedAgain([eviction('shop/web-a', 1000, -5000, 'shop/Deployment/web')]), []);
});

const node = (name: string, o: Partial<ObservedNode>): ObservedNode => ({
  name,
  phases: [],
  reboots: 0,
  notReady: false,
  finished: false,
  explain: [],
  windows: [],
  ...o,
});

/**
 * One pool of three nodes: a finished, b blocked by a PDB (two attempts), d NotReady and held by a pod;
 * c in no pool.
 */
const observations = (): RunObservations => ({
  elapsedMs: 30_000,
  timedOut: true,
  rebootMs: 1000,
  nodes: [
    node('a', {
      pool: 'main',
      zone: 'z1',
      reboots: 1,
      finished: true,
      windows: ['inside window Sat 02:00-06:00'],
      phases: [
        { phase: 'Idle', atMs: -3000 },
        { phase: 'Pending', atMs: 100 },
        { phase: 'BeforeReboot', atMs: 6000 },
        { phase: 'Draining', atMs: 6100 },
        { phase: 'RebootGranted', atMs: 6500 },
        { phase: 'Rebooting', atMs: 6600 },
        { phase: 'AfterReboot', atMs: 7700 },
        { phase: 'Idle', atMs: 9000, reason: 'rebooted' },
      ],
    }),
    node('b', {
      pool: 'main',
      zone: 'z2',
      explain: ['pool: UpdatePolicy main', 'waits: waiting: retry after …'],
      phases: [
        { phase: 'BeforeReboot', atMs: 200 },
        { phase: 'Draining', atMs: 300 },
        {
          phase: 'Pending',
          atMs: 5300,
          reason: 'drain timed-out after 5.0s; blocked by PodDisruptionBudget shop/api',
        },
        { phase: 'BeforeReboot', atMs: 20_000 },
        { phase: 'Draining', atMs: 20_100 },
      ],
    }),
    node('c', { explain: ['pool: none — no UpdatePolicy selects it; it is left alone'] }),
    node('d', {
      pool: 'main',
      notReady: true,
      phases: [
        { phase: 'Idle', atMs: -900, reason: 'up to date' },
        {
          phase: 'Pending',
          atMs: 50,
          reason: 'waiting: its pods are being checked for nuo.dev/do-not-disrupt',
        },
        { phase: 'Pending', atMs: 50, reason: 'waiting: pod shop/batch-1 has nuo.dev/do-not-disrupt="true"' },
        {
          phase: 'Pending',
          atMs: 50,
          reason: 'waiting: its pods are being checked for nuo.dev/do-not-disrupt',
        },
        { phase: 'Pending', atMs: 50, reason: 'waiting: pod shop/batch-1 has nuo.dev/do-not-disrupt="true"' },
      ],
    }),
  ],
  evictions: [
    { pod: 'shop/api-1', node: 'b', atMs: 400, code: 429, pdb: 'shop/api', workload: 'shop/Deployment/api' },
    { pod: 'shop/api-2', node: 'b', atMs: 900, code: 429, pdb: 'shop/api', workload: 'shop/Deployment/api' },
    {
      pod: 'shop/api-1',
      node: 'b',
      atMs: 20_200,
      code: 429,
      pdb: 'shop/api',
      workload: 'shop/Deployment/api',
    },
    {
      pod: 'shop/web-1',
      node: 'a',
      atMs: 6200,
      code: 201,
      workload: 'shop/Deployment/web',
      createdMs: -9000,
    },
  ],
  pdbs: [{ name: 'shop/api', minAvailable: 2, expectedPods: 2, currentHealthy: 2, disruptionsAllowed: 0 }],
  violations: [],
});

test('buildReport: timelines, waves, pools, drain waits with the PDB and why, unfinished nodes with why', () => {
  const r = buildReport(observations());
  assert.equal(r.finished, false);
  assert.equal(r.totalMs, undefined);
  assert.deepEqual(
    r.nodes.map((n) => [
      n.name,
      n.wave,
      n.startMs,
      n.drainedMs,
      n.rebootMs,
      n.finishMs,
      n.attempts.length,
      n.finished,
    ]),
    [
      ['a', 2, 6000, 6500, 6600, 9000, 1, true],
      ['b', 1, 200, undefined, undefined, undefined, 2, false],
      ['c', undefined, undefined, undefined, undefined, undefined, 0, false],
      ['d', undefined, undefined, undefined, undefined, undefined, 0, false],
    ],
  );
  assert.deepEqual(r.nodes[1]?.attempts, [{ startMs: 200, endMs: 5300 }, { startMs: 20_000 }]);
  assert.deepEqual(r.pools, [{ name: 'main', nodes: 3, finished: 1, startMs: 200 }]);
  assert.deepEqual(r.drainWaits, [
    {
      node: 'b',
      pdb: 'shop/api',
      refusals: 3,
      firstMs: 400,
      lastMs: 20_200,
      why: 'minAvailable 2 equals its 2 pod(s): it never allows a disruption',
    },
  ]);
  assert.deepEqual(
    r.stuck.map((s) => s.node),
    ['b', 'c', 'd'],
  );
  assert.deepEqual(r.stuck[0]?.why, [
    'last attempt ended: drain timed-out after 5.0s; blocked by PodDisruptionBudget shop/api',
    'drain waited on PDB shop/api (3 eviction(s) refused): minAvailable 2 equals its 2 pod(s): it never allows a disruption',
    'pool: UpdatePolicy main',
    'waits: waiting: retry after …',
  ]);
  assert.deepEqual(r.stuck[1]?.why, ['pool: none — no UpdatePolicy selects it; it is left alone']);
  assert.match(r.stuck[2]?.why[0] ?? '', /^NotReady in the snapshot/);
  // Each reason the operator gave in the phase it is in now, latest first, once.
  assert.deepEqual(r.stuck[2]?.why.slice(1), [
    'now Pending: waiting: pod shop/batch-1 has nuo.dev/do-not-disrupt="true"',
    'now Pending: waiting: its pods are being checked for nuo.dev/do-not-disrupt',
  ]);
  assert.deepEqual(r.windows, [{ pool: 'main', windows: ['inside window Sat 02:00-06:00'] }]);
  assert.deepEqual(r.evictedAgain, []);
});

test('buildReport: a rollout where every node finished has a total and per-pool times', () => {
  const o = observations();
  o.nodes = o.nodes.filter((n) => n.name === 'a');
  o.timedOut = false;
  const r = buildReport(o);
  assert.equal(r.finished, true);
  assert.equal(r.totalMs, 9000);
  assert.deepEqual(r.pools, [{ name: 'main', nodes: 1, finished: 1, startMs: 6000, finishMs: 9000 }]);
  assert.deepEqual(r.stuck, []);
  assert.match(reportTable(r), /^Rollout finished in 9\.0s \(each host down 1\.0s for its reboot\)\.\n/);
});

test('formatMs', () => {
  const cases: [number | undefined, string][] = [
    [undefined, '-'],
    [870, '0.9s'],
    [59_940, '59.9s'],
    [83_000, '1m23s'],
    [7_380_000, '2h03m'],
  ];
  for (const [ms, want] of cases) assert.equal(formatMs(ms), want, String(ms));
});

test('reportTable: the headline, a row per node and pool, the waits, the unfinished nodes and why', () => {
  const text = reportTable(buildReport(observations()));
  assert.match(text, /^Rollout did not finish: 3 of 4 node\(s\) unfinished after 30\.0s/);
  assert.match(text, /^main +3 +1 +0\.2s +- +-$/m);
  assert.match(text, /^a +main +z1 +2 +6\.0s +6\.5s +6\.6s +9\.0s +1$/m);
  assert.match(text, /^b .* never {3}2$/m);
  assert.match(text, /^ {2}b {5}shop\/api {2}3 .*minAvailable 2 equals its 2 pod\(s\)/m);
  assert.match(text, /^Nodes that did not finish:\n {2}b:\n {4}last attempt ended: drain timed-out/m);
  assert.match(text, /^Windows used:\n {2}main: inside window Sat 02:00-06:00$/m);
  assert.doesNotMatch(text, /Safety rules/);
});

test('reportSvg: a row per node with its bars, wave lines, reasons in tooltips, text escaped', () => {
  const o = observations();
  o.nodes.push(node('<x&y>', { explain: ['a "quoted" <reason>'] }));
  const svg = reportSvg(buildReport(o));
  assert.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" [^>]*>\n/);
  assert.match(svg, /<\/svg>\n$/);
  const rows = [
    ...svg.matchAll(/<g class="node" data-node="([^"]*)" data-finished="(true|false)">([\s\S]*?)<\/g>/g),
  ];
  assert.deepEqual(
    rows.map((m) => [m[1], m[2]]),
    [
      ['&lt;x&amp;y&gt;', 'false'],
      ['a', 'true'],
      ['b', 'false'],
      ['c', 'false'],
      ['d', 'false'],
    ],
  );
  const classes = (name: string) =>
    [...(rows.find((m) => m[1] === name)?.[3] ?? '').matchAll(/<rect class="(\w+)"/g)].map((m) => m[1]);
  assert.deepEqual(classes('a'), ['draining', 'granted', 'rebooting']);
  assert.deepEqual(classes('b'), ['failed', 'failed', 'waiting']);
  assert.deepEqual(classes('c'), ['waiting']);
  assert.match(rows.find((m) => m[1] === 'b')?.[3] ?? '', /<title>[^<]*drain waited on PDB shop\/api/);
  assert.match(svg, /a &quot;quoted&quot; &lt;reason&gt;/);
  assert.equal([...svg.matchAll(/<line class="wave" data-wave="\d+"/g)].length, 2);
  assert.ok(!/<[^>]*<(?!\/?\w)/.test(svg), 'no stray < inside a tag');
});

test('buildReport on a calendar: start and finish at calendar times, the window stretches attempts began in', () => {
  // The rollout began at 09:10 on the calendar; a began at +6 s (in 09:00-09:20), b at +0.2 s and again
  // at +20 s (d never began one); the stretch 10:00-10:20 saw no attempt begin and is not listed.
  const start = Date.parse('2026-11-23T09:10:00Z');
  const o: RunObservations = {
    ...observations(),
    calendarStartMs: start,
    windowStretches: [
      {
        pool: 'main',
        stretches: [
          { opens: Date.parse('2026-11-23T09:00:00Z'), closes: start + 10_000 },
          { opens: start + 15_000, closes: start + 25_000 },
          { opens: Date.parse('2026-11-23T10:00:00Z'), closes: Date.parse('2026-11-23T10:20:00Z') },
        ],
      },
    ],
  };
  const r = buildReport(o);
  assert.equal(r.startsAt, '2026-11-23T09:10:00.000Z');
  const a = r.nodes.find((n) => n.name === 'a');
  assert.equal(a?.startAt, '2026-11-23T09:10:06.000Z');
  assert.equal(a?.finishAt, '2026-11-23T09:10:09.000Z');
  assert.equal(r.nodes.find((n) => n.name === 'b')?.finishAt, undefined, 'b never finished');
  assert.deepEqual(r.windowsUsed, [
    {
      pool: 'main',
      opens: '2026-11-23T09:00:00.000Z',
      closes: '2026-11-23T09:10:10.000Z',
      nodes: ['a', 'b'],
    },
    { pool: 'main', opens: '2026-11-23T09:10:15.000Z', closes: '2026-11-23T09:10:25.000Z', nodes: ['b'] },
  ]);
  const text = reportTable(r);
  assert.match(text, /^Started at 2026-11-23T09:10:00.000Z/m);
  assert.match(text, /^a +main .* 1 +2026-11-23 09:10:06 +2026-11-23 09:10:09$/m);
  assert.match(text, /^ {2}main: 2026-11-23 09:00:00 to 2026-11-23 09:10:10: a, b$/m);
  assert.equal(buildReport(observations()).windowsUsed, undefined, 'no calendar: none');
});
