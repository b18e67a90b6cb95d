import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { UpdatePolicySpec } from '../../src/api/update-policy.ts';
import type { Ledger } from '../../src/operator/decide/ledger-view.ts';
import { viewNode } from '../../src/operator/decide/node-view.ts';
import type { PolicyEntry, PolicyState } from '../../src/operator/policies/policies.ts';
import { DEFAULT_POOL, planPools } from '../../src/operator/policies/pool-plan.ts';
import { resolvePolicy } from '../../src/policy/resolve.ts';
import { NOW, node } from './operator-fixtures.ts';

const nodes = [
  viewNode(node('w1', { labels: { pool: 'workers' } })),
  viewNode(node('w2', { labels: { pool: 'workers' } })),
  viewNode(node('g1', { labels: { pool: 'gpu' } })),
  viewNode(node('x1', { labels: { pool: 'workers', gpu: 'yes' } })),
  viewNode(node('i1', { labels: { pool: 'infra' } })),
];
const empty: Ledger = { slots: {} };

function entry(name: string, spec: unknown, lastValid?: unknown): PolicyEntry {
  const resolve = (s: unknown) =>
    resolvePolicy({ metadata: { name, generation: 2 }, spec: s as UpdatePolicySpec });
  const current = resolve(spec);
  const previous = lastValid === undefined ? undefined : resolve(lastValid);
  const valid = current.ok ? current.policy : previous?.ok ? previous.policy : undefined;
  return { name, uid: name, generation: 2, current, ...(valid ? { lastValid: valid } : {}) };
}
const state = (policies: PolicyEntry[], known = true): PolicyState => ({
  known,
  crdMissing: false,
  policies,
});
const plan = (s: PolicyState, ledger = empty, now = NOW) =>
  planPools({ state: s, paused: false, nodes, ledger, now });
const summary = (p: ReturnType<typeof plan>) =>
  p.pools.map((pool) => [pool.name, pool.nodes.map((n) => n.name), pool.config.hold?.reason ?? '']);
type Blockers = Parameters<typeof planPools>[0]['blockers'];
/** The pool of one policy `workers` (its spec, and its last valid one), with what the blockers read. */
const workersPool = (spec: unknown, blockers?: Blockers, lastValid?: unknown) =>
  planPools({
    state: state([entry('workers', spec, lastValid)]),
    paused: false,
    nodes,
    ledger: empty,
    now: NOW,
    ...(blockers ? { blockers } : {}),
  }).pools[0];

test('no UpdatePolicy: no pool, every node left alone; an attempt in progress only finishes', () => {
  const none = plan(state([]));
  assert.deepEqual(summary(none), []);
  assert.deepEqual(none.unmatched, ['w1', 'w2', 'g1', 'x1', 'i1']);
  const held = plan(state([]), { slots: { w1: { since: 'S', pool: 'gone' } } });
  assert.deepEqual(summary(held), [
    [
      'gone',
      ['w1'],
      'waiting: UpdatePolicy gone is gone: its attempts in progress finish, nothing new starts',
    ],
  ]);
  assert.equal(held.pools[0]?.config.soakMs, 30_000, "it finishes under a policy's defaults");
  assert.deepEqual(held.unmatched, ['w2', 'g1', 'x1', 'i1']);
});

test('policies make the pools: one pool per policy, two selectors = no pool, none = left alone', () => {
  const p = plan(
    state([
      entry('gpu', {
        nodeSelector: { matchExpressions: [{ key: 'gpu', operator: 'Exists' }] },
        maxUnavailable: 1,
      }),
      entry('workers', { nodeSelector: { matchLabels: { pool: 'workers' } }, maxUnavailable: '50%' }),
    ]),
  );
  assert.deepEqual(summary(p), [
    ['gpu', [], ''],
    ['workers', ['w1', 'w2'], ''],
  ]);
  assert.deepEqual([...p.conflicts], [['x1', ['gpu', 'workers']]]);
  assert.deepEqual(p.unmatched, ['g1', 'i1']);
  assert.deepEqual(p.pools[1]?.config.maxUnavailable, { kind: 'percent', value: 50 });
});

test('a node in an attempt stays in the pool holding its slot; a pool whose policy is gone only finishes', () => {
  const ledger: Ledger = {
    slots: { g1: { since: 'S', pool: 'workers' }, i1: { since: 'S', pool: 'retired' }, w2: { since: 'S' } },
  };
  const p = plan(state([entry('workers', { nodeSelector: { matchLabels: { pool: 'workers' } } })]), ledger);
  assert.deepEqual(summary(p), [
    ['workers', ['w1', 'g1', 'x1'], ''],
    [
      DEFAULT_POOL,
      ['w2'],
      'waiting: no UpdatePolicy holds this attempt (an older operator began it): it finishes, nothing new starts',
    ],
    [
      'retired',
      ['i1'],
      'waiting: UpdatePolicy retired is gone: its attempts in progress finish, nothing new starts',
    ],
  ]);
});

test('an invalid edit keeps the last valid settings and admits nothing, naming the field; never valid: no pool', () => {
  const p = plan(
    state([
      entry(
        'workers',
        {
          nodeSelector: { matchLabels: { pool: 'workers' } },
          windows: { weekly: [{ days: ['Mon'], start: '01:00', end: '02:00', timeZone: 'Mars/Olympus' }] },
        },
        { nodeSelector: { matchLabels: { pool: 'workers' } }, maxUnavailable: 2 },
      ),
      entry('gpu', { nodeSelector: { matchLabels: { pool: 'gpu' } }, drain: { podSelector: 'a in (' } }),
    ]),
  );
  assert.deepEqual(
    p.pools.map((pool) => pool.name),
    ['workers'],
  );
  assert.deepEqual(p.pools[0]?.config.maxUnavailable, { kind: 'count', value: 2 });
  assert.match(
    p.pools[0]?.config.hold?.reason ?? '',
    /UpdatePolicy workers is invalid \(windows.weekly\[0\].timeZone: .*Mars\/Olympus/,
  );
  assert.deepEqual(
    p.pools[0]?.nodes.map((n) => n.name),
    ['w1', 'w2', 'x1'],
  );
  assert.deepEqual(p.unmatched, ['g1', 'i1'], 'a policy that never resolved selects nothing');
});

test("a pool's hold: paused, or outside its window until it opens", () => {
  const closed = plan(
    state([
      entry('workers', {
        nodeSelector: { matchLabels: { pool: 'workers' } },
        windows: { weekly: [{ days: ['Sat'], start: '02:00', end: '04:00' }] },
      }),
      entry('gpu', { nodeSelector: { matchLabels: { pool: 'gpu' } }, paused: true }),
    ]),
  );
  const hold = (p: typeof closed, name: string) => p.pools.find((pool) => pool.name === name)?.config.hold;
  // NOW is Saturday 2026-11-21 12:00 UTC: the window opened at 02:00 and next opens a week later.
  assert.match(hold(closed, 'workers')?.reason ?? '', /^waiting: outside every maintenance window/);
  assert.equal(hold(closed, 'workers')?.until, Date.parse('2026-11-28T02:00:00Z'));
  assert.equal(hold(closed, 'gpu')?.reason, 'waiting: UpdatePolicy gpu is paused');
  const open = plan(
    state(closed.pools.map((p) => p.policy as PolicyEntry)),
    empty,
    new Date('2026-11-21T03:00:00Z'),
  );
  assert.equal(hold(open, 'workers'), undefined);
  // On a simulated clock showing Saturday 01:00 now, 60 times as fast: it opens in one real minute.
  const clock = { origin: Date.parse('2026-11-21T01:00:00Z'), start: NOW.getTime(), speed: 60 };
  const sim = planPools({
    state: state(closed.pools.map((p) => p.policy as PolicyEntry)),
    paused: false,
    nodes,
    ledger: empty,
    now: NOW,
    clock,
  });
  assert.match(hold(sim, 'workers')?.reason ?? '', /next opens 2026-11-21T02:00:00.000Z/);
  assert.equal(hold(sim, 'workers')?.until, NOW.getTime() + 60_000);
});

test("the operator's cluster-wide pause is every pool's", () => {
  const policies = state([entry('workers', { nodeSelector: { matchLabels: { pool: 'workers' } } })]);
  const paused = planPools({ state: policies, paused: true, nodes, ledger: empty, now: NOW });
  assert.equal(paused.pools[0]?.config.paused, true);
  assert.equal(plan(policies).pools[0]?.config.paused, false);
});

test('policies not read yet: only the attempts in progress go on, nothing is admitted', () => {
  const p = plan(state([], false), { slots: { w1: { since: 'S', pool: 'workers' } } });
  assert.deepEqual(summary(p), [['workers', ['w1'], 'waiting: the UpdatePolicies are not read yet']]);
});

test("a pool's pod blockers: a matching running pod on a pool node holds it; elsewhere, not; unread, held", () => {
  const spec = {
    nodeSelector: { matchLabels: { pool: 'workers' } },
    blockers: { pods: [{ selector: { matchLabels: { app: 'backup' } } }] },
  };
  const hold = (blockers: Blockers) => workersPool(spec, blockers)?.hold;
  assert.deepEqual(hold(undefined), {
    code: 'PodBlocker',
    reason: 'waiting: the pod blockers are not read yet',
  });
  assert.equal(
    hold(() => ({ pods: [{ namespace: 'db', name: 'backup-1', node: 'i1', blocker: 0 }] })),
    undefined,
  );
  assert.deepEqual(
    hold(() => ({ pods: [{ namespace: 'db', name: 'backup-1', node: 'w2', blocker: 0 }] })),
    {
      code: 'PodBlocker',
      reason: 'waiting: pod db/backup-1 on w2 (blockers.pods[0]) is running',
    },
  );
  assert.equal(
    hold(() => ({ pods: { error: 'the pods of blockers.pods could not be read: 403' } }))?.code,
    'PodBlocker',
  );
});

test('a node-scoped pod blocker holds only the node its pod runs on; a pool-scoped one beside it, the pool', () => {
  const spec = (scope: 'Pool' | 'Node') => ({
    nodeSelector: { matchLabels: { pool: 'workers' } },
    blockers: {
      pods: [
        { selector: { matchLabels: { app: 'backup' } }, scope: 'Node' as const },
        { selector: { matchLabels: { app: 'etl' } }, scope },
      ],
    },
  });
  const pool = (scope: 'Pool' | 'Node', pods: Blockers) => workersPool(spec(scope), pods);
  const on = (node: string, name: string, blocker: number) => ({ namespace: 'db', name, node, blocker });
  const running = pool('Node', () => ({
    pods: [on('w2', 'backup-1', 0), on('w2', 'etl-1', 1), on('w1', 'backup-2', 0)],
  }));
  assert.equal(running?.hold, undefined, 'no pool hold from node-scoped blockers');
  assert.deepEqual(Object.fromEntries(running?.config.podBlocked ?? []), {
    w2: {
      reason: 'waiting: pod db/backup-1 (blockers.pods[0]), db/etl-1 (blockers.pods[1]) is running on it',
    },
    w1: { reason: 'waiting: pod db/backup-2 (blockers.pods[0]) is running on it' },
  });
  const mixed = pool('Pool', () => ({ pods: [on('w2', 'backup-1', 0), on('w1', 'etl-1', 1)] }));
  assert.equal(mixed?.hold?.reason, 'waiting: pod db/etl-1 on w1 (blockers.pods[1]) is running');
  assert.deepEqual([...(mixed?.config.podBlocked?.keys() ?? [])], ['w2']);
  // Not knowing which pods run holds the whole pool, whatever the scope.
  assert.equal(
    pool('Node', () => ({ pods: { error: 'the pods of blockers.pods could not be read: 403' } }))?.hold?.code,
    'PodBlocker',
  );
  assert.equal(pool('Node', undefined)?.hold?.reason, 'waiting: the pod blockers are not read yet');
});

test("a pool beside kured: kured's holders in it use its slots; its lock holds it, planned or unknown", () => {
  const kured = { daemonSet: { namespace: 'kube-system', name: 'kured' } };
  const plan = (spec: UpdatePolicySpec, blockers: Blockers) =>
    workersPool({ nodeSelector: { matchLabels: { pool: 'workers' } }, ...spec }, blockers);
  const view =
    (holders: string[], held = false) =>
    () => ({ kured: { kured: holders, held, otherNuo: false } });

  const counted = plan({ coexistence: { kured } }, view(['w2', 'i1']));
  assert.deepEqual([...(counted?.config.disruptedElsewhere?.keys() ?? [])], ['w2'], "only the pool's node");
  assert.equal(counted?.hold, undefined, 'without holdLock kured only uses slots');
  assert.equal(plan({ coexistence: { kured } }, undefined)?.hold?.code, 'KuredLockUnknown');
  assert.equal(
    plan({ coexistence: { kured } }, () => ({ kured: { error: '404' } }))?.hold?.code,
    'KuredLockUnknown',
  );

  const holding = { coexistence: { kured: { ...kured, holdLock: true } } };
  assert.deepEqual(plan(holding, view(['i1']))?.hold, {
    code: 'KuredLock',
    reason: "waiting: kured holds kured's lock (kube-system/kured weave.works/kured-node-lock) for i1",
  });
  assert.equal(plan(holding, view([]))?.hold?.code, 'KuredLock', 'taking the lock first');
  assert.equal(plan(holding, view([], true))?.hold, undefined, 'held: admits');
  assert.equal(plan({}, undefined)?.config.disruptedElsewhere, undefined, 'no coexistence: nothing read');
});

test("a pool's health checks: not evaluated or one failing holds it; its finished nodes read the same reading", () => {
  const check = {
    name: 'ceph',
    object: { apiVersion: 'v1', kind: 'ConfigMap', name: 'c', expression: 'true' },
  };
  const spec = { nodeSelector: { matchLabels: { pool: 'workers' } }, healthChecks: [check] };
  const unread = workersPool(spec);
  assert.deepEqual(unread?.hold, {
    code: 'HealthCheck',
    reason: 'waiting: the health checks are not evaluated yet',
  });
  assert.deepEqual(unread?.config.healthChecks, {}, 'a finished node waits for a first reading too');
  const bad = { name: 'ceph', healthy: false, reading: 'ConfigMap c: false' };
  const failing = workersPool(spec, () => ({ health: { at: 5, checks: [bad] } }));
  assert.deepEqual(failing?.hold, {
    code: 'HealthCheck',
    reason: 'waiting: health check ceph fails',
    detail: 'ConfigMap c: false',
  });
  assert.deepEqual(failing?.config.healthChecks, { at: 5, failing: bad });
  const passing = workersPool(spec, () => ({ health: { at: 7, checks: [{ ...bad, healthy: true }] } }));
  assert.equal(passing?.hold, undefined);
  assert.deepEqual(passing?.config.healthChecks, { at: 7 });
  const none = workersPool({ nodeSelector: spec.nodeSelector });
  assert.equal(none?.config.healthChecks, undefined, 'a pool without health checks has no such gate');
  const invalid = workersPool(
    { ...spec, maxUnavailable: '0%' },
    () => ({ health: { at: 5, checks: [bad] } }),
    spec,
  );
  assert.equal(invalid?.hold?.code, 'InvalidSpec');
  assert.equal(invalid?.config.healthChecks, undefined, "an invalid policy's checks are not read");
});

test("a pool's rollout is read through its agents' protocol: FLUO's reboot-needed starts it", () => {
  const fluo = viewNode(
    node('f1', {
      labels: { pool: 'workers' },
      annotations: { 'flatcar-linux-update.v1.flatcar-linux.net/reboot-needed': 'true' },
    }),
  );
  const p = planPools({
    state: state([
      entry('workers', {
        nodeSelector: { matchLabels: { pool: 'workers' } },
        agentProtocol: 'flatcar-update-operator',
        rollout: { waves: { initial: 1 } },
      }),
    ]),
    paused: false,
    nodes: [fluo],
    ledger: empty,
    now: NOW,
    sighting: () => ({}),
  });
  const rollout = p.pools[0]?.rollout;
  assert.equal(rollout?.record?.wave, 1, 'the need its agent reports starts the rollout');
  assert.equal(rollout?.changed, true, 'and the pass records it');
  assert.deepEqual(p.pools[0]?.config.slotCaps, [{ slots: 1, name: 'wave 1 of 1 node(s)' }]);
});
