import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Annotations, planLabel } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import type { Plan } from '../../src/api/plan.ts';
import type { ClusterState } from '../../src/cli/cluster-state.ts';
import { planLines, planNodeRows } from '../../src/cli/plan.ts';
import { entriesOf } from '../../src/cli/plans.ts';
import { viewNode } from '../../src/operator/decide/node-view.ts';
import { plansOfPass } from '../../src/operator/plans/plan-pass.ts';
import { passPlan } from '../../src/operator/plans/plan-resolve.ts';
import { decideConfig, NOW, node } from './operator-fixtures.ts';

const plan = (name: string, namespace: string, status: Plan['status'] = {}): Plan => ({
  apiVersion: 'nuo.dev/v1alpha1',
  kind: 'Plan',
  metadata: { name, namespace, uid: `${namespace}-${name}`, generation: 1 },
  spec: {
    version: 'v2',
    upgrade: { image: 'example.com/os' },
    nodeSelector: { matchLabels: { role: 'worker' } },
  } as Plan['spec'],
  status: { latestVersion: 'v2', latestHash: 'h2', ...status },
});

/** A cluster as `nuo status` reads it: nodes a..f in one pool, the Plans, a ledger, each pass decision given. */
function state(
  plans: Plan[],
  o: { unmanaged?: string[]; reasons?: Record<string, string> } = {},
): ClusterState {
  const worker = { role: 'worker' };
  const raw = [
    node('a', { labels: { ...worker, [planLabel('os')]: 'h2' } }),
    node('b', {
      labels: worker,
      annotations: {
        [Annotations.state]: Phase.upgrading,
        [Annotations.stateReason]: 'Plan ops/os: Job ops/j is running',
      },
    }),
    node('c', { labels: worker }),
    node('d', { labels: { ...worker, [planLabel('os')]: 'disabled' } }),
    node('h', { labels: { ...worker, 'plan.upgrade.cattle.io/os': 'disabled', [planLabel('os')]: 'h1' } }),
    node('e', { labels: worker }),
    node('f', { labels: { ...worker, [planLabel('os')]: 'h1' } }),
    node('g', { labels: { role: 'db' } }),
    node('i', { labels: { ...worker, 'plan.upgrade.cattle.io/os': 's2' } }),
  ];
  const entries = entriesOf(plans);
  const passPlans = entries.map((e) => passPlan(e, NOW.getTime()));
  const ledger = {
    slots: {
      b: {
        since: NOW.toISOString(),
        plan: { ref: 'ops/os', hash: 'h2', version: 'v2', prepare: 'drain' as const, reboot: false },
      },
    },
  };
  const ofPass = plansOfPass(passPlans, ledger, new Map());
  const nodes = raw.map((n) => ofPass.view(viewNode(n)));
  const managed = nodes.filter((n) => !(o.unmanaged ?? []).includes(n.name));
  const reasons = Object.entries(o.reasons ?? {}).map(([n, reason]) => ({
    type: 'explain' as const,
    node: n,
    reason,
  }));
  return {
    nodes,
    conditions: new Map(),
    ledger,
    policies: { known: true, crdMissing: false, policies: [] },
    raw: [],
    plan: {
      pools: [{ name: 'fleet', config: decideConfig, nodes: managed }],
      conflicts: new Map(),
      unmatched: [],
    },
    decisions: new Map([['fleet', { actions: reasons, requeueAfterMs: 1000 } as never]]),
    plans: { crdMissing: false, entries, jobs: new Map() },
    passPlans,
  };
}

test('nuo plan: every node the Plan selects, applied or why not', () => {
  const s = state([plan('os', 'ops')], {
    unmanaged: ['e'],
    reasons: { c: 'waiting: Plan ops/os runs on 1 node(s), its concurrency' },
  });
  assert.deepEqual(planNodeRows(s, 'ops/os'), [
    ['NODE', 'APPLIED', 'PHASE', 'WHY'],
    ['a', 'yes', 'Idle', '-'],
    ['b', 'no', 'Upgrading', 'Plan ops/os: Job ops/j is running'],
    ['c', 'no', 'Idle', 'waiting: Plan ops/os runs on 1 node(s), its concurrency'],
    ['d', 'disabled', 'Idle', 'opted out (label plan.nuo.dev/os=disabled): not touched'],
    ['h', 'disabled', 'Idle', 'opted out (label plan.upgrade.cattle.io/os=disabled): not touched'],
    ['e', 'no', 'Idle', "in no UpdatePolicy's pool: nuo leaves it alone"],
    ['f', 'older hash', 'Idle', 'waiting for the next pass'],
    ['i', 'no', 'Idle', 'waiting for the next pass'],
  ]);
  assert.deepEqual(planNodeRows(s, 'ops/none'), [], 'an unknown Plan: no rows');
});

test("nuo plan: a node SUC applied (its label at the Plan's sucLatestHash) is applied, by system-upgrade-controller", () => {
  const rows = planNodeRows(state([plan('os', 'ops', { sucLatestHash: 's2' })]), 'ops/os');
  assert.deepEqual(
    rows.find((r) => r[0] === 'i'),
    [
      'i',
      'yes',
      'Idle',
      "applied by system-upgrade-controller (label plan.upgrade.cattle.io/os = SUC's hash of this Plan)",
    ],
  );
  assert.deepEqual(
    rows.find((r) => r[0] === 'a'),
    ['a', 'yes', 'Idle', '-'],
  );
});

test('nuo plan: a node another Plan comes first for says so', () => {
  const s = state([plan('os', 'ops'), plan('agent', 'apps')]);
  const rows = planNodeRows(s, 'ops/os');
  assert.deepEqual(
    rows.find((r) => r[0] === 'c'),
    ['c', 'no', 'Idle', 'Plan apps/agent comes first'],
  );
});

test('nuo status: one line per Plan; invalid ones say why; none says so; no CRD says nothing', () => {
  const applying = plan('os', 'ops', {
    applying: ['b'],
    conditions: [
      {
        type: 'Complete',
        status: 'False',
        reason: 'Applying',
        message: '1 of 5 selected node(s) applied, 1 applying',
        lastTransitionTime: NOW.toISOString(),
      },
    ],
  });
  const twin = plan('os', 'zz');
  const lines = planLines(state([applying, twin]));
  assert.equal(lines[0], 'plans:');
  assert.equal(
    lines[1],
    '  ops/os: version v2; applying on b; Applying: 1 of 5 selected node(s) applied, 1 applying',
  );
  assert.match(
    lines[2] ?? '',
    /^ {2}zz\/os: version v2; invalid: metadata\.name: Plan ops\/os has this name: .*; no status yet$/,
  );
  assert.deepEqual(planLines(state([])), ['plans: none']);
  const noCrd = { ...state([]), plans: { crdMissing: true, entries: [], jobs: new Map() } };
  assert.deepEqual(planLines(noCrd), []);
});
