import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parse } from 'yaml';
import type { NodeObject, UpdatePolicyObject } from '../../src/whatif/objects.ts';
import type { WhatifReport } from '../../src/whatif/report.ts';
import type { Snapshot } from '../../src/whatif/snapshot.ts';
import {
  budgetSteps,
  type Candidate,
  type PoolFacts,
  poolFacts,
  type Settings,
  SuggestError,
  settingsPatch,
  suggestCandidates,
  withSettings,
} from '../../src/whatif/suggest.ts';
import { type Outcome, outcomeOf, rankSuggestions, type Tried } from '../../src/whatif/suggest-rank.ts';
import { suggestOutput, suggestTable } from '../../src/whatif/suggest-report.ts';

const node = (name: string, zone: string | undefined, pool: string): NodeObject => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: {
    name,
    labels: { pool, ...(zone ? { 'topology.kubernetes.io/zone': zone } : {}) },
  },
  spec: {},
  status: {},
});

const policy = (name: string, spec: UpdatePolicyObject['spec'] = {}): UpdatePolicyObject => ({
  apiVersion: 'nuo.dev/v1alpha1',
  kind: 'UpdatePolicy',
  metadata: { name },
  spec: { nodeSelector: { matchLabels: { pool: name } }, ...spec },
});

const snapshot = (nodes: NodeObject[], policies: UpdatePolicyObject[]): Snapshot => ({
  nodes,
  namespaces: [],
  priorityClasses: [],
  pods: [],
  workloads: [],
  pdbs: [],
  updatePolicies: policies,
  plans: [],
});

test('poolFacts: the named policy’s pool as the operator assigns it, its zones and its settings now', () => {
  const s = snapshot(
    [
      node('a1', 'a', 'web'),
      node('a2', 'a', 'web'),
      node('b1', 'b', 'web'),
      node('x', undefined, 'web'),
      node('d1', 'a', 'db'),
    ],
    [policy('web', { maxUnavailable: '25%', maxUnavailablePerZone: 1 }), policy('db')],
  );
  const facts = poolFacts(s, 'web');
  assert.deepEqual(facts, {
    policy: 'web',
    members: ['a1', 'a2', 'b1', 'x'],
    nodes: 4,
    zones: new Map([
      ['a', 2],
      ['b', 1],
      ['', 1],
    ]),
    current: { maxUnavailable: '25%', maxUnavailablePerZone: 1, zoneOrder: 'Parallel' },
  });
  assert.deepEqual(poolFacts(snapshot([node('n', 'a', 'db')], [policy('db')]), undefined).current, {
    maxUnavailable: 1,
    zoneOrder: 'Parallel',
  });
  const refusals: [Snapshot, string | undefined, RegExp][] = [
    [
      snapshot([node('n', 'a', 'web')], []),
      undefined,
      /holds no UpdatePolicy to vary: give one with --policies/,
    ],
    [s, undefined, /2 UpdatePolicies \(web, db\): name the one to vary with --suggest-policy NAME/],
    [s, 'cache', /no UpdatePolicy cache in the snapshot; it holds web, db/],
    [snapshot([node('n', 'a', 'web')], [policy('db')]), 'db', /holds no node of the snapshot/],
    [
      snapshot([node('n', 'a', 'web')], [policy('web', { maxUnavailable: 'many' })]),
      'web',
      /UpdatePolicy web is not valid: maxUnavailable/,
    ],
  ];
  for (const [snap, name, message] of refusals)
    assert.throws(
      () => poolFacts(snap, name),
      (e) => e instanceof SuggestError && message.test(e.message),
      String(message),
    );
});

test('budgetSteps: 1 to 4, then steps of about half again, never past the pool', () => {
  const cases: [number, number[]][] = [
    [1, [1]],
    [3, [1, 2, 3]],
    [4, [1, 2, 3, 4]],
    [10, [1, 2, 3, 4, 6, 8]],
    [100, [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96]],
  ];
  for (const [pool, steps] of cases) assert.deepEqual(budgetSteps(pool), steps, String(pool));
});

const facts = (nodes: number, zones: number[], current: Settings): PoolFacts => ({
  policy: 'web',
  members: [],
  nodes,
  zones: new Map(zones.map((n, i) => [`z${i}`, n])),
  current,
});

const row = (c: Candidate) =>
  `${c.settings.maxUnavailable}/${c.settings.maxUnavailablePerZone ?? '-'}/${c.settings.zoneOrder}${c.current ? '*' : ''} ${c.slots}:${c.zoneSlots}`;

test('suggestCandidates: the policy’s own settings first, then each budget ascending with its zone variants, bounded', () => {
  const one = { maxUnavailable: 1, zoneOrder: 'Parallel' } as const;
  const cases: { name: string; facts: PoolFacts; max: number; rows: string[]; left: number }[] = [
    {
      name: 'one zone: budgets only; the current one is not tried twice',
      facts: facts(4, [4], one),
      max: 8,
      rows: ['1/-/Parallel* 1:1', '2/-/Parallel 2:2', '3/-/Parallel 3:3', '4/-/Parallel 4:4'],
      left: 0,
    },
    {
      name: 'two zones of 2: a per-zone cap that spreads the budget, and one zone at a time within a zone’s size',
      facts: facts(4, [2, 2], one),
      max: 20,
      rows: [
        '1/-/Parallel* 1:1',
        '2/-/Parallel 2:2',
        '2/1/Parallel 2:1',
        '2/-/OneAtATime 2:2',
        '3/-/Parallel 3:2',
        '4/-/Parallel 4:2',
      ],
      left: 0,
    },
    {
      name: 'a percentage now, bounded: the rest counted',
      facts: facts(12, [4, 4, 4], { maxUnavailable: '25%', maxUnavailablePerZone: 1, zoneOrder: 'Parallel' }),
      max: 5,
      rows: [
        '25%/1/Parallel* 3:1',
        '1/-/Parallel 1:1',
        '2/-/Parallel 2:2',
        '2/1/Parallel 2:1',
        '2/-/OneAtATime 2:2',
      ],
      left: 11,
    },
  ];
  for (const c of cases) {
    const got = suggestCandidates(c.facts, c.max);
    assert.deepEqual(got.candidates.map(row), c.rows, c.name);
    assert.equal(got.left, c.left, c.name);
  }
});

test('withSettings replaces the three settings and nothing else; settingsPatch applies them to the cluster or a file', () => {
  const p = policy('web', { maxUnavailablePerZone: 1, zoneOrder: 'OneAtATime', reboot: { soak: '1m' } });
  assert.deepEqual(withSettings(p, { maxUnavailable: 3, zoneOrder: 'Parallel' }).spec, {
    nodeSelector: { matchLabels: { pool: 'web' } },
    reboot: { soak: '1m' },
    maxUnavailable: 3,
    zoneOrder: 'Parallel',
  });
  assert.equal(p.spec?.maxUnavailablePerZone, 1, 'the policy given is not changed');
  assert.deepEqual(
    withSettings(p, { maxUnavailable: 2, maxUnavailablePerZone: 1, zoneOrder: 'Parallel' }).spec,
    {
      nodeSelector: { matchLabels: { pool: 'web' } },
      reboot: { soak: '1m' },
      maxUnavailable: 2,
      maxUnavailablePerZone: 1,
      zoneOrder: 'Parallel',
    },
  );
  const patch = settingsPatch('web', { maxUnavailable: 3, zoneOrder: 'Parallel' });
  assert.equal(
    patch.kubectl,
    `kubectl patch updatepolicy web --type merge -p '{"spec":{"maxUnavailable":3,"maxUnavailablePerZone":null,"zoneOrder":"Parallel"}}'`,
  );
  assert.deepEqual(parse(patch.spec), { spec: { maxUnavailable: 3, zoneOrder: 'Parallel' } });
  assert.deepEqual(
    parse(
      settingsPatch('web', { maxUnavailable: '10%', maxUnavailablePerZone: 1, zoneOrder: 'OneAtATime' }).spec,
    ),
    {
      spec: { maxUnavailable: '10%', maxUnavailablePerZone: 1, zoneOrder: 'OneAtATime' },
    },
  );
});

const report = (over: Partial<WhatifReport>): WhatifReport => ({
  finished: true,
  elapsedMs: 100_000,
  rebootMs: 10_000,
  pools: [],
  waves: [],
  nodes: [],
  drainWaits: [],
  stuck: [],
  evictedAgain: [],
  windows: [],
  violations: [],
  ...over,
});

test('outcomeOf reads the pool’s own nodes: its finish, the PDBs its drains waited on, its stuck nodes, the window', () => {
  const line = (name: string, pool: string | undefined, finished: boolean) => ({
    name,
    ...(pool ? { pool } : {}),
    attempts: [],
    finished,
  });
  const r = report({
    finished: false,
    pools: [
      { name: 'web', nodes: 2, finished: 2, startMs: 1000, finishMs: 60_000 },
      { name: 'db', nodes: 1, finished: 0, startMs: 1000 },
    ],
    nodes: [
      line('w1', 'web', true),
      line('w2', 'web', true),
      line('d1', 'db', false),
      line('x', undefined, false),
    ],
    drainWaits: [
      { node: 'w2', pdb: 'shop/web', refusals: 2, firstMs: 1, lastMs: 2, why: '' },
      { node: 'w1', pdb: 'shop/web', refusals: 1, firstMs: 1, lastMs: 2, why: '' },
      { node: 'd1', pdb: 'shop/db', refusals: 1, firstMs: 1, lastMs: 2, why: '' },
    ],
    stuck: [
      { node: 'd1', why: [] },
      { node: 'x', why: [] },
    ],
  });
  assert.deepEqual(outcomeOf(r, 'web', undefined), {
    nodes: 2,
    finished: 2,
    totalMs: 60_000,
    elapsedMs: 100_000,
    pdbsBlocked: ['shop/web'],
    stuck: [],
    violations: [],
  });
  assert.equal(outcomeOf(r, 'web', 60_000).fitsWindow, true);
  assert.equal(outcomeOf(r, 'web', 59_999).fitsWindow, false);
  assert.deepEqual(outcomeOf(r, 'db', 3_600_000), {
    nodes: 1,
    finished: 0,
    elapsedMs: 100_000,
    pdbsBlocked: ['shop/db'],
    stuck: ['d1'],
    violations: [],
    fitsWindow: false,
  });
});

const cand = (
  maxUnavailable: number | string,
  slots: number,
  extra: Partial<Settings> = {},
  current = false,
): Candidate => ({
  settings: { maxUnavailable, zoneOrder: 'Parallel', ...extra },
  current,
  slots,
  zoneSlots: typeof extra.maxUnavailablePerZone === 'number' ? extra.maxUnavailablePerZone : slots,
});

const ok = (totalMs: number, over: Partial<Outcome> = {}): Outcome => ({
  nodes: 4,
  finished: 4,
  totalMs,
  pdbsBlocked: [],
  stuck: [],
  violations: [],
  ...over,
});

test('rankSuggestions: the fastest eligible first, the gentlest among near-ties; the others after with why', () => {
  const b1 = cand(1, 1, {}, true);
  const b2 = cand(2, 2);
  const b2z = cand(2, 2, { maxUnavailablePerZone: 1 });
  const b3 = cand(3, 3);
  const b4 = cand(4, 4);
  const b2o = cand(2, 2, { zoneOrder: 'OneAtATime' });
  const names = new Map<Candidate, string>([
    [b1, 'b1'],
    [b2, 'b2'],
    [b2z, 'b2z'],
    [b3, 'b3'],
    [b4, 'b4'],
    [b2o, 'b2o'],
  ]);
  const cases: {
    name: string;
    tried: Tried[];
    order: string[];
    eligible: number;
    why?: [string, string[]][];
  }[] = [
    {
      name: 'a larger budget that blocks a PDB loses to a smaller one that does not',
      tried: [
        { candidate: b1, outcome: ok(80_000) },
        { candidate: b2, outcome: ok(40_000) },
        { candidate: b3, outcome: ok(30_000, { pdbsBlocked: ['shop/web'] }) },
        { candidate: b4, outcome: ok(20_000, { pdbsBlocked: ['shop/db', 'shop/web'] }) },
      ],
      order: ['b2', 'b1', 'b3', 'b4'],
      eligible: 2,
      why: [
        ['b3', ['drains waited on shop/web']],
        ['b4', ['drains waited on shop/db, shop/web']],
      ],
    },
    {
      name: 'within 5 % of the fastest the gentler wins: a per-zone cap, then one zone at a time',
      tried: [
        { candidate: b3, outcome: ok(40_000) },
        { candidate: b2, outcome: ok(41_000) },
        { candidate: b2z, outcome: ok(41_900) },
        { candidate: b2o, outcome: ok(41_500) },
        { candidate: b1, outcome: ok(80_000) },
      ],
      order: ['b2z', 'b3', 'b2', 'b2o', 'b1'],
      eligible: 5,
    },
    {
      name: 'more than 5 % faster wins over a gentler one',
      tried: [
        { candidate: b2z, outcome: ok(42_100) },
        { candidate: b3, outcome: ok(40_000) },
      ],
      order: ['b3', 'b2z'],
      eligible: 2,
    },
    {
      name: 'unfinished, stuck, over the window, unsafe or failed: no suggestion; finished ones first, fewer PDBs first',
      tried: [
        { candidate: b1, outcome: ok(0, { totalMs: undefined, finished: 3, stuck: ['n4'] }) },
        { candidate: b2, outcome: ok(50_000, { fitsWindow: false }) },
        { candidate: b3, outcome: ok(30_000, { violations: ['budget: 4 > 3'] }) },
        {
          candidate: b4,
          outcome: {
            nodes: 4,
            finished: 0,
            pdbsBlocked: [],
            stuck: [],
            violations: [],
            error: 'did not stand',
          },
        },
      ],
      order: ['b3', 'b2', 'b1', 'b4'],
      eligible: 0,
      why: [
        ['b1', ['1 of 4 node(s) did not finish']],
        ['b2', ['longer than the window']],
        ['b3', ['1 safety rule(s) broken']],
        ['b4', ['the run failed: did not stand']],
      ],
    },
  ];
  for (const c of cases) {
    const ranked = rankSuggestions(c.tried);
    assert.deepEqual(
      ranked.map((r) => names.get(r.candidate)),
      c.order,
      c.name,
    );
    assert.equal(ranked.filter((r) => r.eligible).length, c.eligible, c.name);
    for (const [name, why] of c.why ?? [])
      assert.deepEqual(ranked.find((r) => names.get(r.candidate) === name)?.why, why, `${c.name}: ${name}`);
  }
});

test('suggestTable and suggestOutput: every setting tried, the suggestion marked, and the patch to apply it', () => {
  const b1 = cand(1, 1, {}, true);
  const b2 = cand(2, 2);
  const b3 = cand(3, 3);
  const ranked = rankSuggestions([
    { candidate: b1, outcome: ok(80_000, { fitsWindow: true }) },
    { candidate: b2, outcome: ok(40_000, { fitsWindow: true }) },
    { candidate: b3, outcome: ok(30_000, { pdbsBlocked: ['shop/web'], fitsWindow: true }) },
  ]);
  const pool = { policy: 'web', nodes: 4, zones: new Map([['a', 4]]) };
  const output = suggestOutput(pool, ranked, { speed: 10, windowMs: 3_600_000, notTried: 2 });
  assert.deepEqual(output.suggestion?.settings, { maxUnavailable: 2, zoneOrder: 'Parallel' });
  assert.equal(output.suggestion?.totalMs, 40_000);
  assert.match(
    output.suggestion?.kubectl ?? '',
    /^kubectl patch updatepolicy web --type merge -p '\{"spec":\{"maxUnavailable":2,/,
  );
  const text = suggestTable(output);
  assert.match(
    text,
    /^Tried 3 setting\(s\) of UpdatePolicy web \(4 node\(s\) in 1 zone\(s\)\), each on a fresh twin 10× faster/,
  );
  assert.match(text, /\n\*\s+2\s+-\s+Parallel\s+40\.0s\s+4\/4\s+-\s+0\s+yes\n/);
  assert.match(text, /\n\s+1 \(now\)\s+-\s+Parallel\s+1m20s\s+4\/4/);
  assert.match(text, /\n\s+3\s+-\s+Parallel\s+30\.0s\s+4\/4\s+shop\/web\s+0\s+yes/);
  assert.match(text, /Not suggested:\n {2}maxUnavailable 3, zoneOrder Parallel: drains waited on shop\/web/);
  assert.match(text, /2 more setting\(s\) not tried: raise --suggest-max/);
  assert.match(
    text,
    /Suggested: maxUnavailable 2, zoneOrder Parallel, the fastest that kept every PDB unblocked: 40\.0s against 1m20s with the policy's own settings\./,
  );
  assert.match(text, /or in the UpdatePolicy:\n {2}spec:\n {4}maxUnavailable: 2\n {4}zoneOrder: Parallel\n$/);

  const none = suggestOutput(
    pool,
    rankSuggestions([{ candidate: b3, outcome: ok(30_000, { pdbsBlocked: ['shop/web'] }) }]),
    {
      speed: 1,
      notTried: 0,
    },
  );
  assert.equal(none.suggestion, undefined);
  assert.match(
    suggestTable(none),
    /No suggestion: no setting tried finished its pool with every PDB unblocked/,
  );
  assert.doesNotMatch(suggestTable(none), /^\*/m);
});
