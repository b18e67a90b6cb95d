import assert from 'node:assert/strict';
import test from 'node:test';
import { Annotations, planLabel } from '../../src/api/keys.ts';
import type { Plan, PlanStatus } from '../../src/api/plan.ts';
import { NUO_PLANS } from '../../src/api/plan-groups.ts';
import type { Ledger } from '../../src/operator/decide/ledger-view.ts';
import { viewNode } from '../../src/operator/decide/node-view.ts';
import type { JobView } from '../../src/operator/decide/plan-work.ts';
import type { PassPlan } from '../../src/operator/plans/plan-pass.ts';
import type { PlanEntry } from '../../src/operator/plans/plan-resolve.ts';
import { type PlanStatusInput, planStatus } from '../../src/operator/plans/plan-status.ts';
import { ago, NOW, node, state } from './operator-fixtures.ts';

const p: PassPlan = {
  ref: 'ops/os',
  name: 'os',
  ready: true,
  selects: () => true,
  hash: 'h2',
  version: 'v2',
  prepare: 'drain',
  reboot: false,
  concurrency: 1,
  completion: { labels: {}, postCompleteDelayMs: 0 },
};

const entry = (status?: PlanStatus, over: Partial<PlanEntry> = {}): PlanEntry => {
  const plan: Plan = {
    apiVersion: 'nuo.dev/v1alpha1',
    kind: 'Plan',
    metadata: { name: 'os', namespace: 'ops', uid: 'u', generation: 3 },
    spec: { version: 'v2', upgrade: { image: 'example.com/os' } } as Plan['spec'],
    ...(status ? { status } : {}),
  };
  return {
    ref: 'ops/os',
    group: NUO_PLANS,
    name: 'os',
    namespace: 'ops',
    uid: 'u',
    generation: 3,
    plan,
    errors: [],
    version: 'v2',
    hash: 'h2',
    ...over,
  };
};

const failedJob = (message: string, hash = 'h2'): JobView => ({
  name: `apply-os-on-b-with-${hash}`,
  namespace: 'ops',
  stage: 'upgrade',
  plan: 'ops/os',
  hash,
  state: 'failed',
  message,
  deleting: false,
});

function status(o: {
  status?: PlanStatus;
  labels?: Record<string, Record<string, string>>;
  annotations?: Record<string, Record<string, string>>;
  plan?: Partial<PassPlan>;
  jobs?: Record<string, JobView[]>;
  ledger?: Ledger;
  entry?: Partial<PlanEntry>;
  managed?: string[];
  now?: Date;
}) {
  const nodes = ['a', 'b', 'c'].map((n) =>
    viewNode(node(n, { labels: o.labels?.[n] ?? {}, annotations: o.annotations?.[n] ?? {} })),
  );
  const input: PlanStatusInput = {
    entry: entry(o.status, o.entry),
    plan: { ...p, ...o.plan },
    nodes,
    managed: (n) => (o.managed ?? ['a', 'b', 'c']).includes(n),
    ledger: o.ledger ?? { slots: {} },
    jobs: new Map(Object.entries(o.jobs ?? {})),
    now: o.now ?? NOW,
  };
  return planStatus(input);
}
const cond = (s: PlanStatus, type: string) => s.conditions?.find((c) => c.type === type);
const applied = { [planLabel('os')]: 'h2' };

test('Complete counts the selected nodes carrying the hash; applying lists the ledger’s attempts of the Plan', () => {
  const s = status({
    labels: { a: applied },
    ledger: {
      slots: {
        b: {
          since: ago(10),
          plan: { ref: 'ops/os', hash: 'h2', version: 'v2', prepare: 'drain', reboot: false },
        },
        c: { since: ago(5) },
      },
    },
  });
  assert.equal(s.complete, 1);
  assert.deepEqual(s.applying, ['b'], 'c holds a reboot’s slot, not the Plan’s');
  assert.equal(s.observedGeneration, 3);
  assert.equal(cond(s, 'Complete')?.status, 'False');
  assert.equal(cond(s, 'Complete')?.reason, 'Applying');
  assert.match(cond(s, 'Complete')?.message ?? '', /1 of 3 selected node\(s\) applied, 1 applying/);
  const preparing: JobView = {
    name: 'prepare-os-on-c-with-h2',
    namespace: 'ops',
    stage: 'prepare',
    plan: 'ops/os',
    hash: 'h2',
    state: 'active',
    deleting: false,
  };
  const prepared = status({ plan: { runsPrepare: true }, jobs: { c: [preparing] } });
  assert.deepEqual(prepared.applying, ['c'], 'as SUC lists them: a node running its prepare');
  assert.equal(
    status({ jobs: { c: [{ ...preparing, state: 'failed' }] }, plan: { runsPrepare: true } }).applying
      ?.length,
    0,
    'a failed prepare applies nothing',
  );
  const all = status({ labels: { a: applied, b: applied, c: applied } });
  assert.equal(cond(all, 'Complete')?.status, 'True');
  assert.equal(all.latestHash, 'h2');
  assert.equal(all.latestVersion, 'v2');
});

test('a node in no pool is counted and named as left alone; an opted-out node is not selected', () => {
  const s = status({ labels: { a: applied, b: { [planLabel('os')]: 'disabled' } }, managed: ['a', 'b'] });
  assert.match(
    cond(s, 'Complete')?.message ?? '',
    /1 of 2 selected node\(s\) applied.*1 selected node\(s\) are in no UpdatePolicy's pool.*1 node\(s\) opted out/,
  );
});

test("concurrency 0 (SUC's: the Plan selects no node) says so in Complete's message", () => {
  const input = (labels: Record<string, Record<string, string>>): PlanStatusInput => ({
    entry: entry(),
    plan: { ...p, concurrency: 0 },
    nodes: ['a', 'b'].map((n) => viewNode(node(n, { labels: labels[n] ?? {} }))),
    managed: () => true,
    ledger: { slots: {} },
    jobs: new Map(),
    now: NOW,
  });
  const s = planStatus(input({ a: applied }));
  assert.equal(cond(s, 'Complete')?.status, 'False');
  assert.equal(
    cond(s, 'Complete')?.message,
    '1 of 2 selected node(s) applied, 0 applying; concurrency 0: the Plan starts on no node',
  );
  assert.equal(cond(planStatus(input({ a: applied, b: applied })), 'Complete')?.status, 'True');
});

test("nodes opted out with SUC's label or nuo's are not selected, and the status says so; complete without them", () => {
  const out = status({
    labels: {
      a: applied,
      b: { 'plan.upgrade.cattle.io/os': 'disabled' },
      c: { [planLabel('os')]: 'disabled' },
    },
  });
  assert.equal(cond(out, 'Complete')?.status, 'True');
  assert.equal(
    cond(out, 'Complete')?.message,
    'applied on all 1 selected node(s) at version v2; 2 node(s) opted out (label plan.upgrade.cattle.io/os or plan.nuo.dev/os = disabled): not touched',
  );
  const pending = status({ labels: { b: { 'plan.upgrade.cattle.io/os': 'disabled' } } });
  assert.match(
    cond(pending, 'Complete')?.message ?? '',
    /0 of 2 selected node\(s\) applied.*1 node\(s\) opted out/,
  );
});

test("a node SUC applied (its label at SUC's hash of the Plan) counts as applied, and the status says by whom", () => {
  const bySuc = { 'plan.upgrade.cattle.io/os': 's2' };
  const input = (labels: Record<string, Record<string, string>>): PlanStatusInput => ({
    entry: entry(undefined, { sucHash: 's2' }),
    plan: { ...p, sucHash: 's2' },
    nodes: ['a', 'b', 'c'].map((n) => viewNode(node(n, { labels: labels[n] ?? {} }))),
    managed: () => true,
    ledger: { slots: {} },
    jobs: new Map([['c', [failedJob('old failure')]]]),
    now: NOW,
  });
  const s = planStatus(input({ a: applied, b: bySuc, c: bySuc }));
  assert.equal(s.complete, 3);
  assert.equal(s.sucLatestHash, 's2');
  assert.deepEqual(s.failed, [], 'a node SUC applied is not pending: its old failure is not shown');
  assert.equal(
    cond(s, 'Complete')?.message,
    "applied on all 3 selected node(s) (2 applied by system-upgrade-controller: label plan.upgrade.cattle.io/os = SUC's hash s2) at version v2",
  );
  const older = planStatus(input({ a: applied, b: bySuc, c: { 'plan.upgrade.cattle.io/os': 's1' } }));
  assert.equal(older.complete, 2);
  assert.match(
    cond(older, 'Complete')?.message ?? '',
    /^2 of 3 selected node\(s\) applied \(1 applied by system-upgrade-controller: .*\), 0 applying/,
  );
  const noSucHash = status({ labels: { a: applied, b: bySuc, c: bySuc } });
  assert.equal(noSucHash.complete, 1, "without SUC's hash resolved, SUC's label counts for nothing");
});

test('a failed Job shows in failed and in Complete’s reason, and stays after the Job is gone until the node applies', () => {
  const first = status({ jobs: { b: [failedJob('BackoffLimitExceeded: disk full')] } });
  assert.deepEqual(first.failed, [
    { node: 'b', error: 'BackoffLimitExceeded: disk full', at: NOW.toISOString(), hash: 'h2', generation: 3 },
  ]);
  assert.equal(cond(first, 'Complete')?.reason, 'JobFailed');
  assert.match(cond(first, 'Complete')?.message ?? '', /last on b: BackoffLimitExceeded: disk full/);
  const later = new Date(NOW.getTime() + 60_000);
  const gone = status({ status: first, now: later });
  assert.deepEqual(
    gone.failed,
    first.failed,
    'the Job deleted for the retry: the failure stays, its time too',
  );
  const again = status({ status: first, now: later, jobs: { b: [failedJob('DeadlineExceeded: too slow')] } });
  assert.deepEqual(again.failed, [
    { node: 'b', error: 'DeadlineExceeded: too slow', at: later.toISOString(), hash: 'h2', generation: 3 },
  ]);
  const retried = status({
    status: first,
    now: later,
    jobs: { b: [{ ...failedJob('BackoffLimitExceeded: disk full'), attempt: ago(1) }] },
  });
  assert.deepEqual(
    retried.failed,
    [
      {
        node: 'b',
        error: 'BackoffLimitExceeded: disk full',
        at: later.toISOString(),
        hash: 'h2',
        generation: 3,
        attempt: ago(1),
      },
    ],
    "a later attempt's failure with the same error is recorded as its own",
  );
  const done = status({ status: first, now: later, labels: { b: applied } });
  assert.deepEqual(done.failed, [], 'applied since: no failure left');
  const older = status({ jobs: { b: [failedJob('old error', 'h1')] } });
  assert.deepEqual(older.failed, [], 'a failed Job of an earlier hash is not this hash’s failure');
});

test('conditions: LatestResolved and Validated say why; a transition time moves only with the status', () => {
  const fromSpec = status({});
  assert.equal(cond(fromSpec, 'LatestResolved')?.reason, 'Version');
  assert.equal(cond(fromSpec, 'Validated')?.status, 'True');
  const invalid = status({
    entry: { errors: [{ field: 'spec.window.timeZone', message: 'unknown time zone "Mars/Base"' }] },
  });
  assert.equal(cond(invalid, 'Validated')?.status, 'False');
  assert.match(
    cond(invalid, 'Validated')?.message ?? '',
    /spec\.window\.timeZone: unknown time zone "Mars\/Base"; no node is started/,
  );
  const kept = status({ entry: { resolveError: 'secret ops/os-config does not exist' } });
  assert.match(
    cond(kept, 'LatestResolved')?.message ?? '',
    /does not exist; version v2 from before stays in use/,
  );
  const none = status({ entry: { resolveError: 'secret ops/os-config does not exist', hash: undefined } });
  assert.match(
    cond(none, 'LatestResolved')?.message ?? '',
    /does not exist; no node is started until it resolves/,
  );
  const later = new Date(NOW.getTime() + 60_000);
  const same = status({ status: fromSpec, now: later });
  assert.equal(cond(same, 'Validated')?.lastTransitionTime, NOW.toISOString());
  const flipped = status({ status: fromSpec, now: later, entry: { errors: [{ field: 'x', message: 'y' }] } });
  assert.equal(cond(flipped, 'Validated')?.lastTransitionTime, later.toISOString());
});

const planSlot = (since: string) => ({
  since,
  plan: { ref: 'ops/os', hash: 'h2', version: 'v2', prepare: 'drain' as const, reboot: false },
});

test("outside the Plan's window with nothing applying, Complete is False/Waiting with SUC's message", () => {
  const hold = { reason: "waiting: outside Plan ops/os's window", until: NOW.getTime() + 3_600_000 };
  const closed = status({ labels: { a: applied }, plan: { hold } });
  assert.equal(cond(closed, 'Complete')?.status, 'False');
  assert.equal(cond(closed, 'Complete')?.reason, 'Waiting');
  assert.match(
    cond(closed, 'Complete')?.message ?? '',
    /^current time is not within configured window; opens 2026.*1 of 3 selected node\(s\) applied/,
  );
  const running = status({ plan: { hold }, ledger: { slots: { b: planSlot(ago(10)) } } });
  assert.equal(cond(running, 'Complete')?.reason, 'Applying', 'an attempt in progress goes on past the end');
  const done = status({ labels: { a: applied, b: applied, c: applied }, plan: { hold } });
  assert.equal(cond(done, 'Complete')?.status, 'True', 'nothing left to do: complete, window or not');
});

test('Complete turns True only once no node applies the Plan (its postCompleteDelay passed)', () => {
  const delayed = status({
    labels: { a: applied, b: applied, c: applied },
    ledger: { slots: { c: planSlot(ago(10)) } },
  });
  assert.equal(cond(delayed, 'Complete')?.status, 'False');
  assert.equal(cond(delayed, 'Complete')?.reason, 'Applying');
  assert.match(cond(delayed, 'Complete')?.message ?? '', /3 of 3 selected node\(s\) applied, 1 applying/);
  assert.deepEqual(delayed.applying, ['c']);
});

test('LatestResolved is never True without status.latestVersion and latestHash', () => {
  const early = status({ entry: { version: undefined, hash: undefined } });
  assert.equal(cond(early, 'LatestResolved')?.status, 'False');
  assert.equal(cond(early, 'LatestResolved')?.reason, 'Resolving');
  assert.doesNotMatch(cond(early, 'LatestResolved')?.message ?? '', /undefined/);
  assert.equal(early.latestVersion, undefined);
  const noHash = status({ entry: { hash: undefined } });
  assert.notEqual(cond(noHash, 'LatestResolved')?.status, 'True', 'the version alone is not resolved');
  const both = status({});
  assert.equal(cond(both, 'LatestResolved')?.status, 'True');
  assert.equal(both.latestVersion, 'v2');
  assert.equal(both.latestHash, 'h2');
});

test("a Plan attempt's failed drain shows in failed and in Complete as a Job failure does, naming the node", () => {
  const reason =
    'Plan ops/os: drain timed out after 60s: 1 pod(s) left (PDB web allows 0); retrying after backoff';
  const s = status({ annotations: { b: state('Pending', 5, { [Annotations.stateReason]: reason }) } });
  assert.deepEqual(s.failed, [
    {
      node: 'b',
      error: 'drain timed out after 60s: 1 pod(s) left (PDB web allows 0); retrying after backoff',
      at: NOW.toISOString(),
    },
  ]);
  assert.equal(cond(s, 'Complete')?.reason, 'JobFailed');
  assert.match(cond(s, 'Complete')?.message ?? '', /last on b: drain timed out after 60s/);
  const other = status({
    annotations: {
      b: state('Pending', 5, { [Annotations.stateReason]: reason.replace('ops/os', 'ops/kernel') }),
    },
  });
  assert.deepEqual(other.failed, [], "another Plan's drain is not this Plan's failure");
});
