import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { replaceSection } from '../../bench/report.ts';
import {
  evictions,
  histogramDelta,
  percentileBound,
  requestHistogram,
  requestsAnswered,
} from '../../bench/request-latency.ts';
import {
  longestWaits,
  packedMakespanMs,
  percentile,
  rolloutFigures,
  slotIdle,
  type Transition,
} from '../../bench/rollout-figures.ts';

describe('percentile (nearest rank)', () => {
  const cases: Array<[number[], number, number]> = [
    [[1, 2, 3, 4], 50, 2],
    [[1, 2, 3, 4], 99, 4],
    [[1, 2, 3, 4], 100, 4],
    [[7], 1, 7],
    [[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 90, 9],
  ];
  for (const [xs, p, want] of cases)
    it(`p${p} of [${xs}] is ${want}`, () => assert.equal(percentile(xs, p), want));
  it('is NaN without samples', () => assert.ok(Number.isNaN(percentile([], 50))));
});

describe('rolloutFigures', () => {
  // Two nodes, K = 1: a is admitted at 0, drains 0.1–0.4 s, back Idle at 2.0 s; b waits and is admitted at 2.05 s.
  const phases = (node: string, t0: number): Transition[] => [
    { node, phase: 'Pending', at: 0 },
    { node, phase: 'BeforeReboot', at: t0 },
    { node, phase: 'Draining', at: t0 + 100 },
    { node, phase: 'RebootGranted', at: t0 + 400 },
    { node, phase: 'Rebooting', at: t0 + 450 },
    { node, phase: 'AfterReboot', at: t0 + 1450 },
    { node, phase: 'Idle', at: t0 + 2000 },
  ];
  const f = rolloutFigures([...phases('a', 0), ...phases('b', 2050)], 0);

  it('measures the grant latency from the freed slot to the next admission', () => {
    assert.deepEqual(f.latencies, [50]);
    assert.equal(f.p(99), 50);
    assert.deepEqual(f.waits, [{ node: 'b', freedAt: 2000, admittedAt: 2050 }]);
  });
  it('measures the time in each slot phase and the median drain', () => {
    assert.equal(f.drainMedianMs, 300);
    assert.equal(f.drainMeanMs, 300);
    assert.deepEqual(
      f.phases.map((p) => [p.phase, p.meanMs]),
      [
        ['BeforeReboot', 100],
        ['Draining', 300],
        ['RebootGranted', 50],
        ['Rebooting', 1000],
        ['AfterReboot', 550],
      ],
    );
  });
  it('computes the slot time beyond drain and the fixed reboot + soak', () => {
    // 2000 ms held, 300 ms drain, 1500 ms reboot + soak → 200 ms overhead.
    assert.equal(f.overheadMeanMs(1500), 200);
  });
  it('measures the start-up delay and the slot time held in all', () => {
    assert.equal(f.firstAdmissionMs, 0);
    assert.equal(f.slotMsTotal, 4000);
  });
  it('lists the attempts in admission order', () => {
    const a: Transition[] = [
      { node: 'a', phase: 'BeforeReboot', at: 3000 },
      { node: 'a', phase: 'Idle', at: 3500 },
    ];
    assert.deepEqual(rolloutFigures([...a, ...phases('b', 0)], 0).attempts, [
      { admittedAt: 0, slotMs: 2000 },
      { admittedAt: 3000, slotMs: 500 },
    ]);
  });
  it('counts an admission the watch saw only at Draining (BeforeReboot overwritten at once)', () => {
    const skipped = phases('b', 2050).filter((t) => t.phase !== 'BeforeReboot');
    const g = rolloutFigures([...phases('a', 0), ...skipped], 0);
    assert.deepEqual(g.latencies, [150]);
    assert.equal(g.slotMsTotal, 2000 + 1900);
  });
  it('ignores what happened before the rollout started', () => {
    assert.deepEqual(rolloutFigures(phases('a', 0), 5000).latencies, []);
    assert.equal(rolloutFigures(phases('a', 0), 5000).phases.length, 0);
  });
  it('counts no latency for admissions into slots that were free', () => {
    assert.deepEqual(rolloutFigures([...phases('a', 0), ...phases('b', 10)], 0).latencies, []);
  });
  it('pairs each admission with the earliest slot freed while nodes waited', () => {
    // K = 2: a and b hold slots, c and d wait; b frees at 2010, a at 2000; c admitted 2100, d 2300.
    const f2 = rolloutFigures(
      [...phases('a', 0), ...phases('b', 10), ...phases('c', 2100), ...phases('d', 2300)],
      0,
    );
    assert.deepEqual(f2.latencies, [100, 290]);
  });
});

describe('longestWaits', () => {
  const waits = [
    { node: 'a', freedAt: 0, admittedAt: 100 },
    { node: 'b', freedAt: 1000, admittedAt: 42_000 },
    { node: 'c', freedAt: 2000, admittedAt: 2500 },
  ];
  const reasons = [
    { node: 'b', reason: 'waiting for a free slot (maxUnavailable 2)', at: 500 },
    { node: 'b', reason: 'waiting: node is NotReady', at: 3000 },
    // Written with the admission itself, and after it: not what the node waited for.
    { node: 'b', reason: 'admitted, no before-reboot hooks; draining', at: 42_000 },
    { node: 'b', reason: 'drained', at: 43_000 },
    { node: 'a', reason: 'waiting for a free slot (maxUnavailable 2)', at: 50 },
  ];
  it('lists the longest first, each with the last reason its node showed before its admission', () => {
    assert.deepEqual(longestWaits(waits, reasons, 2), [
      { node: 'b', ms: 41_000, reason: 'waiting: node is NotReady' },
      { node: 'c', ms: 500, reason: undefined },
    ]);
  });
  it('lists at most what there is', () => {
    assert.equal(longestWaits(waits, reasons, 10).length, 3);
    assert.deepEqual(longestWaits([], reasons, 3), []);
  });
});

describe('packedMakespanMs', () => {
  const table: Array<[string, number[], number, number]> = [
    ['equal slot times fill whole waves', [10, 10, 10, 10], 2, 20],
    ['each slot time goes to the slot that frees first', [10, 1, 1, 1], 2, 10],
    ['slots drift apart: the last ones end at different times', [4, 6, 4, 6, 5], 2, 13],
    ['fewer attempts than slots', [7, 3], 5, 7],
    ['nothing to do', [], 3, 0],
  ];
  for (const [name, slotMs, k, expected] of table) {
    it(name, () => assert.equal(packedMakespanMs(slotMs, k), expected));
  }
  it('refuses a k that is no positive integer', () => {
    assert.throws(() => packedMakespanMs([1], 0), /k must be a positive integer, got 0/);
  });
});

describe('slotIdle', () => {
  const cases: Array<{ name: string; k: number; attempts: Array<[number, number]>; want: object }> = [
    {
      name: 'one slot refilled 50 ms after it was freed',
      k: 1,
      attempts: [
        [0, 2000],
        [2050, 2000],
      ],
      want: { spanMs: 4050, startMs: 0, betweenMs: 50, endMs: 0 },
    },
    {
      name: 'two slots: late first admissions, a refill, one slot running long at the end',
      k: 2,
      attempts: [
        [100, 1000],
        [300, 3000],
        [1150, 1000],
      ],
      want: { spanMs: 3300, startMs: 400, betweenMs: 50, endMs: 1150 },
    },
    {
      name: 'a slot never used stands empty the whole rollout',
      k: 3,
      attempts: [
        [0, 1000],
        [0, 500],
      ],
      want: { spanMs: 1000, startMs: 1000, betweenMs: 0, endMs: 500 },
    },
    {
      name: 'an admission seen before the release it refilled counts no negative time',
      k: 1,
      attempts: [
        [0, 1000],
        [900, 1000],
      ],
      want: { spanMs: 2000, startMs: 0, betweenMs: 0, endMs: 0 },
    },
  ];
  for (const { name, k, attempts, want } of cases) {
    it(name, () =>
      assert.deepEqual(
        slotIdle(
          attempts.map(([admittedAt, slotMs]) => ({ admittedAt, slotMs })),
          k,
          0,
        ),
        want,
      ),
    );
  }
  it('takes K × span apart into slot time and empty time, whatever the schedule', () => {
    // Random schedules on K slots, each refilled after a random gap: the parts must add up exactly.
    let seed = 7;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let run = 0; run < 50; run++) {
      const k = 1 + Math.floor(rand() * 5);
      const freeAt = Array.from({ length: k }, () => Math.floor(rand() * 100));
      const attempts = [];
      for (let i = 0; i < 3 * k; i++) {
        const lane = freeAt.indexOf(Math.min(...freeAt));
        const admittedAt = (freeAt[lane] as number) + Math.floor(rand() * 50);
        const slotMs = 100 + Math.floor(rand() * 1000);
        attempts.push({ admittedAt, slotMs });
        freeAt[lane] = admittedAt + slotMs;
      }
      const idle = slotIdle(attempts, k, 0);
      const work = attempts.reduce((sum, a) => sum + a.slotMs, 0);
      assert.equal(k * idle.spanMs, work + idle.startMs + idle.betweenMs + idle.endMs, `run ${run}`);
      assert.equal(idle.spanMs, Math.max(...freeAt), `run ${run}`);
    }
  });
  it('refuses a k that is no positive integer', () => {
    assert.throws(() => slotIdle([], 0, 0), /k must be a positive integer, got 0/);
  });
});

describe('replaceSection', () => {
  it('appends a new section', () => {
    assert.equal(replaceSection('# T\n', 'x', 'body'), '# T\n\n<!-- bench:x -->\nbody\n<!-- /bench:x -->\n');
  });
  it('replaces only its own section', () => {
    const doc = replaceSection(replaceSection('# T\n', 'x', 'one'), 'y', 'two');
    const next = replaceSection(doc, 'x', 'three');
    assert.match(next, /<!-- bench:x -->\nthree\n<!-- \/bench:x -->/);
    assert.match(next, /<!-- bench:y -->\ntwo\n<!-- \/bench:y -->/);
    assert.doesNotMatch(next, /one/);
  });
});

describe('API server request latency from /metrics', () => {
  const scrape = (fast: number, slow: number, inf: number) =>
    [
      '# HELP apiserver_request_duration_seconds ...',
      `apiserver_request_duration_seconds_bucket{component="apiserver",resource="nodes",scope="resource",subresource="",verb="PATCH",version="v1",le="0.1"} ${fast}`,
      `apiserver_request_duration_seconds_bucket{component="apiserver",resource="nodes",scope="resource",subresource="",verb="PATCH",version="v1",le="1"} ${slow}`,
      `apiserver_request_duration_seconds_bucket{component="apiserver",resource="nodes",scope="resource",subresource="",verb="PATCH",version="v1",le="+Inf"} ${inf}`,
      // Other verbs, resources and subresources are not counted.
      'apiserver_request_duration_seconds_bucket{resource="nodes",subresource="status",verb="PATCH",le="0.1"} 99',
      'apiserver_request_duration_seconds_bucket{resource="pods",subresource="",verb="PATCH",le="0.1"} 99',
      'apiserver_request_duration_seconds_bucket{resource="nodes",subresource="",verb="GET",le="0.1"} 99',
    ].join('\n');

  it('reads the buckets of one verb and resource, sorted by bound', () => {
    const h = requestHistogram(scrape(5, 8, 10), 'PATCH', 'nodes');
    assert.deepEqual(
      [...h],
      [
        [0.1, 5],
        [1, 8],
        [Number.POSITIVE_INFINITY, 10],
      ],
    );
  });
  it('counts what happened between two scrapes and bounds its percentiles', () => {
    const h = histogramDelta(
      requestHistogram(scrape(5, 8, 10), 'PATCH', 'nodes'),
      requestHistogram(scrape(95, 107, 110), 'PATCH', 'nodes'),
    );
    // 100 requests: 90 under 0.1 s, 9 more under 1 s, 1 slower.
    assert.equal(percentileBound(h, 50), 0.1);
    assert.equal(percentileBound(h, 90), 0.1);
    assert.equal(percentileBound(h, 99), 1);
    assert.equal(percentileBound(h, 100), Number.POSITIVE_INFINITY);
  });
  it('has no percentile without requests', () => {
    assert.ok(Number.isNaN(percentileBound(requestHistogram('', 'PATCH', 'nodes'), 99)));
  });
});

describe('evictions', () => {
  it('sums the answers with one code to pod evictions only', () => {
    const text = [
      '# TYPE apiserver_request_total counter',
      'apiserver_request_total{code="429",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="eviction",verb="POST",version="v1"} 12',
      'apiserver_request_total{code="429",component="apiserver",dry_run="",group="policy",resource="pods",scope="resource",subresource="eviction",verb="POST",version="v1"} 3',
      'apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="eviction",verb="POST",version="v1"} 500',
      'apiserver_request_total{code="429",component="apiserver",dry_run="",group="",resource="nodes",scope="resource",subresource="",verb="PATCH",version="v1"} 7',
    ].join('\n');
    assert.equal(evictions(text, '429'), 15);
    assert.equal(evictions(text, '201'), 500);
    assert.equal(evictions('', '429'), 0);
  });
});

describe('requestsAnswered', () => {
  it('sums every answered request but watches', () => {
    const text = [
      '# TYPE apiserver_request_total counter',
      'apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="nodes",scope="resource",subresource="",verb="PATCH",version="v1"} 40',
      'apiserver_request_total{code="409",component="apiserver",dry_run="",group="",resource="nodes",scope="resource",subresource="",verb="PATCH",version="v1"} 2',
      'apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="eviction",verb="POST",version="v1"} 8',
      'apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="nodes",scope="cluster",subresource="",verb="WATCH",version="v1"} 5',
      'apiserver_request_duration_seconds_count{component="apiserver",dry_run="",group="",resource="nodes",scope="resource",subresource="",verb="PATCH",version="v1"} 42',
    ].join('\n');
    assert.equal(requestsAnswered(text), 50);
    assert.equal(requestsAnswered(''), 0);
  });
});
