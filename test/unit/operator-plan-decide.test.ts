import assert from 'node:assert/strict';
import test from 'node:test';
import type { V1Node } from '@kubernetes/client-node';
import { Annotations, planLabel } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import type { Action } from '../../src/operator/decide/action.ts';
import { parseMaxUnavailable } from '../../src/operator/decide/budget.ts';
import { decide } from '../../src/operator/decide/decide.ts';
import type { Ledger } from '../../src/operator/decide/ledger-view.ts';
import { unavailableWithoutSlot } from '../../src/operator/decide/need.ts';
import { viewNode } from '../../src/operator/decide/node-view.ts';
import type { JobView, PlanSlot } from '../../src/operator/decide/plan-work.ts';
import {
  DISABLED,
  optedOut,
  type PassPlan,
  plansOfPass,
  stoppedOn,
  workOf,
} from '../../src/operator/plans/plan-pass.ts';
import { parseLedger, withChanges } from '../../src/operator/read/ledger.ts';
import { patchFor } from '../../src/operator/write/node-writes.ts';
import { ago, decideConfig, NOW, needs, node, state } from './operator-fixtures.ts';

const plan = (over: Partial<PassPlan> = {}): PassPlan => ({
  ref: 'ops/os',
  name: 'os',
  ready: true,
  selects: (l) => l.role === 'worker',
  hash: 'h2',
  version: 'v2',
  prepare: 'drain',
  reboot: false,
  concurrency: 2,
  completion: { labels: { 'example.com/os': 'v2' }, postCompleteDelayMs: 0 },
  ...over,
});
const worker = { role: 'worker' };
const slotOf = (p: PassPlan): PlanSlot => ({
  ref: p.ref,
  hash: p.hash,
  version: p.version,
  prepare: p.prepare,
  reboot: p.reboot,
});
const job = (over: Partial<JobView> = {}): JobView => ({
  name: 'apply-os-on-a-with-h2',
  namespace: 'ops',
  stage: 'upgrade',
  plan: 'ops/os',
  hash: 'h2',
  attempt: ago(60),
  bootId: 'boot-1',
  state: 'active',
  deleting: false,
  ...over,
});

/** decide() on `nodes` with these Plans and Jobs, as a pass runs it (plans.view on every node). */
function run(
  nodes: V1Node[],
  plans: PassPlan[],
  o: { ledger?: Ledger; jobs?: Record<string, JobView[]>; max?: string; healthy?: string[] } = {},
) {
  const ledger = o.ledger ?? { slots: {} };
  const p = plansOfPass(plans, ledger, new Map(Object.entries(o.jobs ?? {})));
  const snapshot = {
    nodes: nodes.map((n) => p.view(viewNode(n))),
    ledger,
    draining: new Set<string>(),
    admitting: new Set<string>(),
    health: new Map((o.healthy ?? []).map((n) => [n, { daemonSetPodsReady: true, detail: 'ready' }])),
  };
  const cfg = { ...decideConfig, maxUnavailable: parseMaxUnavailable(o.max ?? '3'), plans: p.pass };
  return decide(snapshot, cfg, NOW).actions;
}
const of = (actions: Action[], node: string) => actions.filter((a) => a.node === node);
const kinds = (actions: Action[], node: string) =>
  of(actions, node).map((a) => (a.type === 'transition' ? `transition ${a.to}` : a.type));

test('workOf: the first Plan by ref that selects the node and is not applied at its hash', () => {
  const cases: { what: string; labels: Record<string, string>; plans: PassPlan[]; want?: string }[] = [
    { what: 'selected, not applied', labels: worker, plans: [plan()], want: 'ops/os' },
    { what: 'not selected', labels: {}, plans: [plan()] },
    { what: 'applied at its hash', labels: { ...worker, [planLabel('os')]: 'h2' }, plans: [plan()] },
    {
      what: 'applied at an older hash',
      labels: { ...worker, [planLabel('os')]: 'h1' },
      plans: [plan()],
      want: 'ops/os',
    },
    { what: "opted out (nuo's label)", labels: { ...worker, [planLabel('os')]: DISABLED }, plans: [plan()] },
    {
      what: "opted out with SUC's label, never applied",
      labels: { ...worker, 'plan.upgrade.cattle.io/os': DISABLED },
      plans: [plan()],
    },
    {
      what: "opted out with SUC's label, applied at an older hash",
      labels: { ...worker, 'plan.upgrade.cattle.io/os': DISABLED, [planLabel('os')]: 'h1' },
      plans: [plan()],
    },
    {
      what: "SUC's label of another Plan",
      labels: { ...worker, 'plan.upgrade.cattle.io/other': DISABLED },
      plans: [plan()],
      want: 'ops/os',
    },
    {
      what: "SUC's label at a hash (SUC applied it): nuo applies its own",
      labels: { ...worker, 'plan.upgrade.cattle.io/os': 'h2' },
      plans: [plan()],
      want: 'ops/os',
    },
    {
      what: "SUC's label at SUC's hash of the Plan: applied by SUC",
      labels: { ...worker, 'plan.upgrade.cattle.io/os': 's2' },
      plans: [plan({ sucHash: 's2' })],
    },
    {
      what: "SUC's label at SUC's hash, nuo's at an older hash: applied by SUC",
      labels: { ...worker, 'plan.upgrade.cattle.io/os': 's2', [planLabel('os')]: 'h1' },
      plans: [plan({ sucHash: 's2' })],
    },
    {
      what: "SUC's label at an older SUC hash",
      labels: { ...worker, 'plan.upgrade.cattle.io/os': 's1' },
      plans: [plan({ sucHash: 's2' })],
      want: 'ops/os',
    },
    {
      what: "nuo's label holding SUC's hash is not SUC's label",
      labels: { ...worker, [planLabel('os')]: 's2' },
      plans: [plan({ sucHash: 's2' })],
      want: 'ops/os',
    },
    { what: 'not ready (no version yet)', labels: worker, plans: [plan({ ready: false })] },
    {
      what: 'two Plans: the first by ref',
      labels: worker,
      plans: [plan({ ref: 'ops/zz', name: 'zz' }), plan({ ref: 'ops/aa', name: 'aa' })],
      want: 'ops/aa',
    },
  ];
  for (const c of cases) {
    const sorted = [...c.plans].sort((a, b) => (a.ref < b.ref ? -1 : 1));
    assert.equal(workOf(viewNode(node('a', { labels: c.labels })), sorted)?.ref, c.want, c.what);
  }
});

test("optedOut: SUC's or nuo's plan label reading disabled, named as the person set it", () => {
  assert.equal(
    optedOut({ 'plan.upgrade.cattle.io/os': 'disabled' }, 'os'),
    'plan.upgrade.cattle.io/os=disabled',
  );
  assert.equal(optedOut({ 'plan.nuo.dev/os': 'disabled' }, 'os'), 'plan.nuo.dev/os=disabled');
  assert.equal(
    optedOut({ 'plan.upgrade.cattle.io/os': 'Disabled' }, 'os'),
    undefined,
    'SUC compares exactly',
  );
  assert.equal(optedOut({ 'plan.upgrade.cattle.io/os': 'h1', 'plan.nuo.dev/os': 'h1' }, 'os'), undefined);
  assert.equal(optedOut({ 'plan.upgrade.cattle.io/osx': 'disabled' }, 'os'), undefined);
});

test("a node opted out with SUC's label is never admitted, while its peer is", () => {
  const nodes = [
    node('a', { labels: { ...worker, 'plan.upgrade.cattle.io/os': DISABLED } }),
    node('b', { labels: worker }),
  ];
  const actions = run(nodes, [plan({ concurrency: 2 })]);
  assert.deepEqual(kinds(actions, 'a'), [], 'a: nothing at all');
  assert.ok(kinds(actions, 'b').length > 0, 'b: admitted');
});

test("concurrency 0 (SUC's: the Plan selects no node): no node is admitted, each says why", () => {
  const nodes = [node('a', { labels: worker }), node('b', { labels: worker })];
  const actions = run(nodes, [plan({ concurrency: 0 })]);
  for (const n of ['a', 'b']) {
    assert.ok(
      !kinds(actions, n).some((k) => k.startsWith('admit') || k === 'transition Draining'),
      `${n}: not admitted`,
    );
    const why = of(actions, n).find((a) => a.type === 'pending' || a.type === 'explain');
    assert.match(
      why && 'reason' in why ? why.reason : '',
      /Plan ops\/os has concurrency 0: it starts on no node/,
      n,
    );
  }
});

test('a Plan is admitted within the pool budget and its own concurrency, beside pending reboots', () => {
  const nodes = [
    node('a', { labels: worker }),
    node('b', { labels: worker }),
    node('c', { labels: worker }),
    node('r', { annotations: needs }),
  ];
  const actions = run(nodes, [plan()], { max: '3' });
  const admits = actions.filter((a) => a.type === 'admit');
  assert.deepEqual(
    admits.map((a) => [a.node, a.type === 'admit' ? a.plan?.ref : undefined]),
    [
      ['a', 'ops/os'],
      ['b', 'ops/os'],
      ['r', undefined],
    ],
  );
  const c = of(actions, 'c')[0];
  assert.equal(c?.type, 'pending');
  assert.match(c?.type === 'pending' ? c.reason : '', /Plan ops\/os runs on 2 node\(s\), its concurrency/);
});

test('concurrency counts the Plan’s slots in the whole ledger, every pool’s', () => {
  const ledger: Ledger = {
    slots: {
      x: { since: ago(10), pool: 'other', plan: slotOf(plan()) },
      y: { since: ago(10), plan: slotOf(plan()) },
    },
  };
  const p = plansOfPass([plan()], ledger, new Map());
  assert.match(p.pass.wait({ ...slotOf(plan()) }, 'z')?.reason ?? '', /runs on 2 node/);
  assert.equal(
    plansOfPass([plan({ concurrency: 3 })], ledger, new Map()).pass.wait(slotOf(plan()), 'z'),
    undefined,
  );
});

test('a node needing a reboot and a Plan: the reboot first, unless the Plan reboots it', () => {
  const n = node('a', { labels: worker, annotations: needs });
  const admitOf = (actions: Action[]) => actions.find((a) => a.type === 'admit');
  const plain = admitOf(run([n], [plan()]));
  assert.equal(plain?.type === 'admit' && plain.plan, undefined);
  const rebooting = admitOf(run([n], [plan({ reboot: true })]));
  assert.equal(rebooting?.type === 'admit' && rebooting.plan?.ref, 'ops/os');
});

test('a Plan’s window or validity holds its nodes with its reason', () => {
  const actions = run(
    [node('a', { labels: worker })],
    [plan({ hold: { reason: 'waiting: outside Plan ops/os’s window' } })],
  );
  const a = of(actions, 'a')[0];
  assert.equal(a?.type === 'pending' && a.reason, 'waiting: outside Plan ops/os’s window');
});

test('Upgrading: the attempt’s Job decides each next step', () => {
  const since = ago(60);
  const ledger = (p = plan()): Ledger => ({ slots: { a: { since, plan: slotOf(p) } } });
  const upgrading = (extra: Record<string, string> = {}, bootId = 'boot-1', ready = true) =>
    node('a', {
      labels: worker,
      bootId,
      ready,
      unschedulable: true,
      annotations: state(Phase.upgrading, 50, { [Annotations.plan]: 'ops/os', ...extra }),
    });
  const cases: {
    what: string;
    jobs: JobView[];
    p?: PassPlan;
    plans?: PassPlan[];
    bootId?: string;
    ready?: boolean;
    want: string[];
  }[] = [
    { what: 'no Job yet: create it', jobs: [], want: ['job'] },
    {
      what: 'no Job yet, the Plan edited since the admission (a new hash): the attempt ends, to be admitted anew',
      jobs: [],
      plans: [plan({ hash: 'h3' })],
      want: ['end'],
    },
    {
      what: 'no Job yet, the Plan starts nothing now (invalid, or its edit not resolved): the attempt ends',
      jobs: [],
      plans: [plan({ ready: false })],
      want: ['end'],
    },
    {
      what: 'failed while the node is NotReady: wait for the node (it may be rebooting)',
      jobs: [job({ attempt: since, state: 'failed' })],
      ready: false,
      want: ['explain'],
    },
    { what: 'running', jobs: [job({ attempt: since })], want: ['explain'] },
    {
      what: 'succeeded: the health gate',
      jobs: [job({ attempt: since, state: 'succeeded' })],
      want: ['transition AfterReboot'],
    },
    {
      what: 'succeeded, the Plan reboots: grant',
      jobs: [job({ attempt: since, state: 'succeeded' })],
      p: plan({ reboot: true }),
      want: ['grantReboot'],
    },
    {
      what: 'failed: abort',
      jobs: [job({ attempt: since, state: 'failed', message: 'BackoffLimitExceeded: x' })],
      want: ['abort'],
    },
    {
      what: 'the Job rebooted the node: the health gate, no failure',
      jobs: [job({ attempt: since, state: 'failed' })],
      bootId: 'boot-2',
      want: ['transition AfterReboot'],
    },
    {
      what: 'an earlier attempt’s Job: deleted first',
      jobs: [job({ attempt: ago(999), state: 'failed' })],
      want: ['deleteJob'],
    },
    {
      what: 'an earlier attempt’s Job being deleted: wait',
      jobs: [job({ attempt: ago(999), deleting: true })],
      want: ['explain'],
    },
    {
      what: 'the Plan was deleted, its Job runs: delete it',
      jobs: [job({ attempt: since })],
      plans: [],
      want: ['deleteJob'],
    },
    {
      what: 'the Plan was deleted, its Job is going: wait',
      jobs: [job({ attempt: since, deleting: true })],
      plans: [],
      want: ['explain'],
    },
    { what: 'the Plan was deleted, no Job left: the attempt ends', jobs: [], plans: [], want: ['end'] },
  ];
  for (const c of cases) {
    const p = c.p ?? plan();
    const actions = run([upgrading({}, c.bootId, c.ready)], c.plans ?? [p], {
      ledger: ledger(p),
      jobs: { a: c.jobs },
    });
    assert.deepEqual(kinds(actions, 'a'), c.want, c.what);
  }
});

test('a completed Plan attempt labels the node with the hash and the Plan’s labels, and keeps its slot for postCompleteDelay', () => {
  const since = ago(300);
  const p = plan({ completion: { labels: { 'example.com/os': 'v2' }, postCompleteDelayMs: 120_000 } });
  const ledger: Ledger = { slots: { a: { since, plan: slotOf(p) } } };
  const gate = node('a', {
    labels: worker,
    annotations: state(Phase.afterReboot, 100, { [Annotations.plan]: 'ops/os' }),
    readySince: ago(3600),
  });
  const actions = run([gate], [p], {
    ledger,
    healthy: ['a'],
    jobs: { a: [job({ attempt: since, state: 'succeeded' })] },
  });
  const complete = actions.find((a) => a.type === 'complete');
  assert.ok(complete?.type === 'complete');
  assert.deepEqual(complete.plan, {
    label: 'plan.nuo.dev/os',
    hash: 'h2',
    labels: { 'example.com/os': 'v2' },
    rebooted: false,
  });
  const write = patchFor(complete, viewNode(gate), decideConfig, NOW);
  assert.equal(write.labels?.[planLabel('os')], 'h2');
  assert.equal(write.labels?.['example.com/os'], 'v2');
  assert.equal(write.annotations[Annotations.plan], null);
  assert.equal(
    Annotations.rebootRequested in write.annotations,
    false,
    'no reboot happened: a request stands',
  );

  const done = (secondsAgo: number) =>
    node('a', { labels: { ...worker, [planLabel('os')]: 'h2' }, annotations: state(Phase.idle, secondsAgo) });
  const held = run([done(60)], [p], { ledger });
  assert.equal(
    held.some((a) => a.type === 'release'),
    false,
    'kept for the delay',
  );
  assert.deepEqual(kinds(held, 'a'), [], 'nothing to step while the delay runs');
  assert.ok(run([done(121)], [p], { ledger }).some((a) => a.type === 'release' && a.node === 'a'));
  const aborted = node('a', { labels: worker, annotations: state(Phase.pending, 60) });
  assert.ok(
    run([aborted], [p], { ledger }).some((a) => a.type === 'release'),
    'an aborted attempt keeps nothing',
  );
});

test('the write that starts a Plan’s attempt names the Plan and cordons as the Plan prepares', () => {
  const n = viewNode(node('a', { labels: worker }));
  const start = (prepare: PlanSlot['prepare']) =>
    patchFor(
      { type: 'admit', node: 'a', reason: 'r', for: 'Plan', plan: { ...slotOf(plan()), prepare } },
      n,
      decideConfig,
      NOW,
    );
  assert.equal(start('drain').annotations[Annotations.state], Phase.draining);
  assert.equal(start('drain').cordon, true);
  assert.equal(start('cordon').annotations[Annotations.state], Phase.upgrading);
  assert.equal(start('cordon').cordon, true);
  assert.equal(start('none').annotations[Annotations.state], Phase.upgrading);
  assert.equal(start('none').cordon, undefined);
  assert.equal(start('none').annotations[Annotations.plan], 'ops/os');
});

test('a node running a Plan’s Job counts as disrupted, slot or not', () => {
  const p = plansOfPass([plan()], { slots: {} }, new Map([['a', [job()]]]));
  assert.equal(unavailableWithoutSlot(p.view(viewNode(node('a')))), true);
  const finished = plansOfPass([plan()], { slots: {} }, new Map([['a', [job({ state: 'succeeded' })]]]));
  assert.equal(unavailableWithoutSlot(finished.view(viewNode(node('a')))), false);
});

test('the ledger records a Plan’s attempt with its slot, and refuses a malformed one', () => {
  const l = withChanges(
    { slots: {} },
    [{ type: 'admit', node: 'a', reason: 'r', for: 'Plan', plan: slotOf(plan()) }],
    NOW.toISOString(),
    'p',
  );
  assert.deepEqual(l.slots.a, {
    since: NOW.toISOString(),
    attempt: 1,
    pool: 'p',
    plan: slotOf(plan()),
    reason: 'Plan',
  });
  const cm = (slots: unknown) => ({ metadata: {}, data: { 'ledger.json': JSON.stringify({ slots }) } });
  assert.deepEqual(parseLedger(cm(l.slots)).slots.a?.plan, slotOf(plan()));
  assert.throws(() => parseLedger(cm({ a: { since: 'x', plan: { ref: 1 } } })), /"plan" that is not/);
});

test('an attempt ended before its Job because the Plan changed goes back to Pending, no failure counted', () => {
  const since = ago(60);
  const ledger: Ledger = { slots: { a: { since, plan: slotOf(plan()) } } };
  const n = node('a', {
    labels: worker,
    unschedulable: true,
    annotations: state(Phase.upgrading, 50, {
      [Annotations.plan]: 'ops/os',
      [Annotations.cordonedByNuo]: 'true',
    }),
  });
  const end = run([n], [plan({ hash: 'h3' })], { ledger }).find((a) => a.type === 'end');
  assert.ok(end?.type === 'end');
  assert.equal(end.to, Phase.pending, 'the Plan at its new hash is still to apply');
  assert.match(end.reason, /Plan ops\/os has a new hash since this attempt began/);
  const write = patchFor(end, viewNode(n), decideConfig, NOW);
  assert.equal(write.annotations[Annotations.failures], undefined, 'no failure counted');
  assert.equal(write.annotations[Annotations.plan], null);
});

test('a Plan attempt Failed at the health gate resumes there once Ready; one that waited for nuo’s reboot does not', () => {
  const since = ago(600);
  const failedNode = (ready: boolean, extra: Record<string, string> = {}) =>
    node('a', {
      labels: worker,
      ready,
      unschedulable: true,
      annotations: state(Phase.failed, 100, { [Annotations.plan]: 'ops/os', ...extra }),
    });
  const noReboot: Ledger = { slots: { a: { since, plan: slotOf(plan()) } } };
  assert.deepEqual(kinds(run([failedNode(false)], [plan()], { ledger: noReboot }), 'a'), [], 'still down');
  assert.deepEqual(kinds(run([failedNode(true)], [plan()], { ledger: noReboot }), 'a'), [
    'transition AfterReboot',
  ]);
  const rebooting = plan({ reboot: true });
  const withReboot: Ledger = { slots: { a: { since, plan: slotOf(rebooting) } } };
  assert.deepEqual(
    kinds(run([failedNode(true)], [rebooting], { ledger: withReboot }), 'a'),
    [],
    'no reboot happened: it stays Failed',
  );
  const cameBack = failedNode(true, {
    [Annotations.bootIdBefore]: 'boot-0',
    [Annotations.rebootInProgress]: 'true',
  });
  assert.deepEqual(kinds(run([cameBack], [rebooting], { ledger: withReboot }), 'a'), [
    'transition AfterReboot',
  ]);
});

test('a healthy node whose Plan was deleted ends its attempt in Pending while a reboot is still needed', () => {
  const since = ago(300);
  const ledger: Ledger = { slots: { a: { since, plan: slotOf(plan()) } } };
  const gate = node('a', {
    labels: worker,
    annotations: state(Phase.afterReboot, 100, { [Annotations.plan]: 'ops/os', ...needs }),
    readySince: ago(3600),
  });
  const end = run([gate], [], { ledger, healthy: ['a'] }).find((a) => a.type === 'end');
  assert.ok(end?.type === 'end');
  assert.equal(end.to, Phase.pending);
});

test('stoppedOn: under onFailure Stop, a Job failed at this hash and generation, recorded or not yet', () => {
  const failed = job({ state: 'failed', message: 'BackoffLimitExceeded: x' });
  const at = { node: 'a', error: 'BackoffLimitExceeded: x', at: NOW.toISOString() };
  const stop = (generation: number, f: object[] = []) =>
    ({ stop: { generation, failed: f } }) as Partial<PassPlan>;
  const cases: { what: string; p: Partial<PassPlan>; jobs: JobView[]; want: boolean }[] = [
    { what: 'Retry (no stop): never', p: {}, jobs: [failed], want: false },
    { what: 'a failed Job not yet in the status', p: stop(3), jobs: [failed], want: true },
    {
      what: 'recorded at this hash and generation, the Job gone',
      p: stop(3, [{ ...at, hash: 'h2', generation: 3, attempt: ago(60) }]),
      jobs: [],
      want: true,
    },
    {
      what: 'the Plan edited since (another generation): tried again',
      p: stop(4, [{ ...at, hash: 'h2', generation: 3, attempt: ago(60) }]),
      jobs: [failed],
      want: false,
    },
    {
      what: 'a new hash (version, Secret): tried again',
      p: stop(3, [{ ...at, hash: 'h1', generation: 3, attempt: ago(60) }]),
      jobs: [job({ hash: 'h1', state: 'failed' })],
      want: false,
    },
    {
      what: "the retry's own Job failed after the edit",
      p: stop(4, [{ ...at, hash: 'h2', generation: 3, attempt: ago(60) }]),
      jobs: [job({ state: 'failed', attempt: ago(5) })],
      want: true,
    },
    { what: 'a drain failure (no hash) is not a Job failure', p: stop(3, [at]), jobs: [], want: false },
    { what: 'an active Job', p: stop(3), jobs: [job()], want: false },
  ];
  for (const c of cases) assert.equal(stoppedOn(plan(c.p), 'a', c.jobs), c.want, c.what);
});

test('onFailure Stop: a node whose Job failed is not admitted again and says why; Retry admits it after backoff', () => {
  const failed = { a: [job({ state: 'failed', message: 'BackoffLimitExceeded: x' })] };
  const pending = node('a', { labels: worker, annotations: state(Phase.pending, 3600) });
  const stopped = run([pending], [plan({ stop: { generation: 3, failed: [] } })], { jobs: failed });
  assert.ok(
    !kinds(stopped, 'a').some((k) => k.startsWith('admit') || k === 'transition Draining'),
    'not admitted',
  );
  const why = of(stopped, 'a').find((a) => a.type === 'pending' || a.type === 'explain');
  assert.match(why && 'reason' in why ? why.reason : '', /onFailure Stop\): edit the Plan to try again/);
  const retried = run([pending], [plan()], { jobs: failed });
  assert.ok(
    kinds(retried, 'a').some((k) => k.startsWith('admit') || k === 'transition Draining'),
    `Retry: admitted (${kinds(retried, 'a')})`,
  );
});

/** A prepare Job of the Plan on node `a` (its name is deterministic), created `created` seconds ago. */
const prepareJob = (over: Partial<JobView> = {}, created = 120): JobView =>
  job({
    name: 'prepare-os-on-a-with-h2',
    stage: 'prepare',
    attempt: undefined,
    createdAt: Date.parse(ago(created)),
    ...over,
  });
const pendingWorker = (name: string) =>
  node(name, { labels: worker, annotations: state(Phase.pending, 300) });
const reasonOf = (actions: Action[], n: string) => {
  const a = of(actions, n).find((x) => x.type === 'pending' || x.type === 'explain');
  return a && 'reason' in a ? a.reason : '';
};

test("a Plan's prepare runs before its attempt, holding no slot, even with none free: the Job first, then the admission once it succeeded", () => {
  const prepares = plan({ runsPrepare: true });
  const busy: Ledger = { slots: { s: { since: ago(60) } } };
  const server = node('s', { annotations: { ...state(Phase.draining, 60), ...needs } });
  const cases: {
    what: string;
    a: V1Node;
    jobs: JobView[];
    ledger?: Ledger;
    want: string[];
    reason?: RegExp;
  }[] = [
    {
      what: 'Idle: it says first that it waits for its prepare',
      a: node('a', { labels: worker }),
      jobs: [],
      want: ['pending'],
      reason: /prepare starts; the node takes a slot once it has succeeded/,
    },
    { what: 'Pending: the prepare Job is created', a: pendingWorker('a'), jobs: [], want: ['prepareJob'] },
    {
      what: 'Pending, the budget taken: the prepare Job is created all the same',
      a: pendingWorker('a'),
      jobs: [],
      ledger: busy,
      want: ['prepareJob'],
    },
    {
      what: 'its prepare runs: it waits, no slot taken',
      a: pendingWorker('a'),
      jobs: [prepareJob()],
      want: ['explain'],
      reason: /prepare \(Job ops\/prepare-os-on-a-with-h2\) runs; the node takes a slot once/,
    },
    {
      what: 'its prepare succeeded: admitted',
      a: pendingWorker('a'),
      jobs: [prepareJob({ state: 'succeeded' })],
      want: ['admit'],
    },
    {
      what: 'its prepare succeeded, the budget taken: it waits for a slot',
      a: pendingWorker('a'),
      jobs: [prepareJob({ state: 'succeeded' })],
      ledger: busy,
      want: ['explain'],
      reason: /waiting for a free slot/,
    },
    {
      what: 'its prepare failed a moment ago: it waits out the backoff',
      a: pendingWorker('a'),
      jobs: [
        prepareJob({ state: 'failed', message: 'BackoffLimitExceeded: x', finishedAt: Date.parse(ago(10)) }),
      ],
      want: ['explain'],
      reason: /prepare .* failed: BackoffLimitExceeded: x; it runs again after 2026-11-21T12:00:50/,
    },
    {
      what: 'its prepare failed past the backoff: deleted, to run again',
      a: pendingWorker('a'),
      jobs: [prepareJob({ state: 'failed', finishedAt: Date.parse(ago(61)) })],
      want: ['deleteJob'],
    },
    {
      what: 'its prepare was used by an attempt (a Job of the attempt as new): deleted, to run again',
      a: pendingWorker('a'),
      jobs: [prepareJob({ state: 'succeeded' }), job({ state: 'failed', createdAt: Date.parse(ago(120)) })],
      want: ['deleteJob'],
    },
    {
      what: 'an older Job of an attempt does not use it',
      a: pendingWorker('a'),
      jobs: [prepareJob({ state: 'succeeded' }), job({ state: 'failed', createdAt: Date.parse(ago(121)) })],
      want: ['admit'],
    },
    {
      what: 'its prepare being deleted: waits',
      a: pendingWorker('a'),
      jobs: [prepareJob({ state: 'failed', deleting: true })],
      want: ['explain'],
      reason: /of an earlier try to be gone/,
    },
    {
      what: 'a prepare at an earlier hash still running: stopped first',
      a: pendingWorker('a'),
      jobs: [prepareJob({ hash: 'h1', name: 'prepare-os-on-a-with-h1' })],
      want: ['deleteJob'],
    },
  ];
  for (const c of cases) {
    const nodes = c.ledger ? [c.a, server] : [c.a];
    const actions = run(nodes, [prepares], {
      max: '1',
      jobs: { a: c.jobs },
      ...(c.ledger ? { ledger: c.ledger } : {}),
    });
    assert.deepEqual(kinds(actions, 'a'), c.want, c.what);
    if (c.reason) assert.match(reasonOf(actions, 'a'), c.reason, c.what);
    const created = of(actions, 'a').find((x) => x.type === 'prepareJob');
    if (created?.type === 'prepareJob')
      assert.deepEqual(created.plan, slotOf(prepares), `${c.what}: at the Plan's hash`);
  }
  const stale = run([pendingWorker('a')], [prepares], {
    jobs: { a: [prepareJob({ hash: 'h1', name: 'prepare-os-on-a-with-h1' })] },
  });
  const deleted = of(stale, 'a')[0];
  assert.deepEqual(deleted?.type === 'deleteJob' && deleted.job, {
    name: 'prepare-os-on-a-with-h1',
    namespace: 'ops',
  });
});

test("k3s in one pool of budget 1: an agent whose prepare waits for the servers holds no slot, so the servers' Plan is admitted", () => {
  const agents = plan({
    ref: 'ops/agent',
    name: 'agent',
    runsPrepare: true,
    selects: (l) => l.role === 'worker',
  });
  const servers = plan({
    ref: 'ops/server',
    name: 'server',
    concurrency: 1,
    prepare: 'cordon',
    selects: (l) => l.role === 'server',
  });
  const nodes = [
    pendingWorker('a'),
    node('s', { labels: { role: 'server' }, annotations: state(Phase.pending, 10) }),
  ];
  const waiting = job({
    name: 'prepare-agent-on-a-with-h2',
    plan: 'ops/agent',
    stage: 'prepare',
    attempt: undefined,
  });
  const actions = run(nodes, [agents, servers], { max: '1', jobs: { a: [waiting] } });
  assert.deepEqual(kinds(actions, 'a'), ['explain'], 'the agent waits in Pending for its prepare');
  const admitted = of(actions, 's')[0];
  assert.equal(admitted?.type === 'admit' && admitted.plan?.ref, 'ops/server', 'the server takes the slot');
});

test('concurrency counts the nodes preparing the Plan, as SUC counts them applying; a prepare disrupts nothing', () => {
  const one = plan({ runsPrepare: true, concurrency: 1 });
  const b = job({ name: 'prepare-os-on-b-with-h2', stage: 'prepare', attempt: undefined });
  const actions = run([pendingWorker('a'), pendingWorker('b')], [one], { max: '3', jobs: { b: [b] } });
  assert.match(reasonOf(actions, 'a'), /Plan ops\/os runs on 1 node\(s\), its concurrency/);
  assert.deepEqual(kinds(actions, 'b'), ['explain'], 'b goes on waiting for its own prepare');
  for (const [what, j, counted] of [
    ['running', b, true],
    ['succeeded, unused', { ...b, state: 'succeeded' as const }, true],
    ['failed', { ...b, state: 'failed' as const, finishedAt: Date.parse(ago(1)) }, false],
    ['at another hash', { ...b, hash: 'h1' }, false],
  ] as const) {
    const p = plansOfPass([one], { slots: {} }, new Map([['b', [j]]]));
    assert.equal(p.pass.wait(slotOf(one), 'a') !== undefined, counted, what);
    assert.equal(p.pass.wait(slotOf(one), 'b'), undefined, `${what}: b itself is not counted against b`);
    assert.equal(
      unavailableWithoutSlot(p.view(viewNode(pendingWorker('b')))),
      false,
      `${what}: b not disrupted`,
    );
  }
  const two = run([pendingWorker('a'), pendingWorker('b')], [one], { max: '3' });
  assert.deepEqual(
    [...kinds(two, 'a'), ...kinds(two, 'b')].filter((k) => k === 'prepareJob'),
    ['prepareJob'],
    'one prepare started in a pass of concurrency 1',
  );
});

test('Upgrading: the prepare Job that ran before the attempt is not the attempt’s Job', () => {
  const since = ago(60);
  const ledger: Ledger = { slots: { a: { since, plan: slotOf(plan({ runsPrepare: true })) } } };
  const a = node('a', {
    labels: worker,
    annotations: { ...state(Phase.upgrading, 30), [Annotations.plan]: 'ops/os' },
  });
  const actions = run([a], [plan({ runsPrepare: true })], {
    ledger,
    jobs: { a: [prepareJob({ state: 'succeeded' })] },
  });
  assert.deepEqual(kinds(actions, 'a'), ['job'], 'its Job is created; the prepare Job is left as it is');
});

test('more nodes prepared than the concurrency (two passes each started one): the first by name go, the rest wait, never all', () => {
  const two = plan({ runsPrepare: true, concurrency: 2 });
  const prepared = (n: string) =>
    job({ name: `prepare-os-on-${n}-with-h2`, stage: 'prepare', attempt: undefined, state: 'succeeded' });
  const jobs = new Map(['d', 'a', 'c'].map((n) => [n, [prepared(n)]] as const));
  const p = plansOfPass([two], { slots: {} }, jobs);
  assert.equal(p.pass.wait(slotOf(two), 'a'), undefined, 'a is first');
  assert.equal(p.pass.wait(slotOf(two), 'c'), undefined, 'c is second');
  assert.match(p.pass.wait(slotOf(two), 'd')?.reason ?? '', /runs on 2 node\(s\), its concurrency/);
  assert.match(p.pass.wait(slotOf(two), 'b')?.reason ?? '', /runs on 3 node\(s\), its concurrency/);
  // One of them in its attempt (a slot of the Plan) comes first: the next by name after it goes.
  const slot: Ledger = { slots: { d: { since: ago(10), plan: slotOf(two) } } };
  const q = plansOfPass([two], slot, jobs);
  assert.equal(q.pass.wait(slotOf(two), 'a'), undefined);
  assert.match(q.pass.wait(slotOf(two), 'c')?.reason ?? '', /runs on 2 node\(s\)/);
});
