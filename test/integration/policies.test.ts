/**
 * UpdatePolicies on the real control plane: pools with budgets of their own rolling at once, a node two
 * policies select left alone, a per-zone cap, a window that holds a rollout until it opens, a health
 * check on a custom resource that holds it, an invalid policy that admits nothing and says why, a
 * rollout in waves and one halted by its failure budget until `nuo policy resume`; the independent
 * checker holds nuo to each pool's budget, each zone's cap and each wave.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, afterEach, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  AppsV1Api,
  BatchV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubernetesObjectApi,
  PolicyV1Api,
  RbacAuthorizationV1Api,
} from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, UPDATE_POLICY } from '../../src/api/crd.ts';
import { Annotations, Labels } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import type { Condition, UpdatePolicy, UpdatePolicySpec } from '../../src/api/update-policy.ts';
import { whoAmI } from '../../src/cli/who-am-i.ts';
import { statusCode } from '../../src/kube/errors.ts';
import { mergePatch } from '../../src/kube/patch.ts';
import { unmanagedReason } from '../../src/operator/decide/unmanaged.ts';
import { readHealth } from '../../src/operator/read/health-check-reads.ts';
import { LedgerConflict, LedgerStore } from '../../src/operator/read/ledger.ts';
import { resolvePolicy } from '../../src/policy/resolve.ts';
import type { Budget } from '../../src/sim/checker.ts';
import { Fleet, type FleetOptions } from '../../src/sim/fleet.ts';
import { SimJobAnnotations } from '../../src/sim/job-keys.ts';
import { clearNodeProblem, setNodeProblem } from '../../src/sim/node-problem.ts';
import { installPolicyCrd } from '../../src/sim/policies.ts';
import { installWidgetCrd } from '../../src/sim/widgets.ts';
import { deployment, undrainablePod, waitAvailable } from '../../src/sim/workload.ts';
import { pollUntil } from '../../src/util/poll.ts';
import { startPrometheus, Target } from './prometheus-server.ts';
import {
  eventsAbout,
  eventsMark,
  FAST_LEASE,
  operatorLog,
  rebootedOnce,
  resetNodes,
  runNuo,
  setNodeReady,
  useCluster,
} from './support.ts';

const ZONE = 'topology.kubernetes.io/zone';
const cluster = await useCluster({ nodes: 6, zones: 3 });
const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
const custom = cluster.kubeconfig.makeApiClient(CustomObjectsApi);
const apps = cluster.kubeconfig.makeApiClient(AppsV1Api);
const batch = cluster.kubeconfig.makeApiClient(BatchV1Api);
const pdbs = cluster.kubeconfig.makeApiClient(PolicyV1Api);
/** Settings every test policy shares: seconds-long soaks and timeouts. */
const QUICK = { reboot: { soak: '1s', retryBackoff: '5s' } };
const POOL_A = ['node-0', 'node-1', 'node-2'];
const POOL_B = ['node-3', 'node-4', 'node-5'];
const ref = { group: API_GROUP, version: API_VERSION, plural: UPDATE_POLICY.plural };

let fleet: Fleet | undefined;
after(() => fleet?.stop());

before(async () => {
  await core.createNamespace({ body: { metadata: { name: 'nuo-system' } } });
  await installPolicyCrd(cluster);
  for (const [names, pool] of [
    [POOL_A, 'a'],
    [POOL_B, 'b'],
  ] as const) {
    for (const name of names) {
      await core.patchNode({ name, body: { metadata: { labels: { pool } } } }, mergePatch);
    }
  }
});

afterEach(async () => {
  await fleet?.stop();
  fleet = undefined;
  const list = (await custom.listClusterCustomObject(ref)) as { items: UpdatePolicy[] };
  for (const p of list.items) await custom.deleteClusterCustomObject({ ...ref, name: p.metadata.name });
  await resetNodes(core);
});

async function createPolicy(name: string, spec: UpdatePolicySpec): Promise<void> {
  await custom.createClusterCustomObject({
    ...ref,
    body: { apiVersion: `${API_GROUP}/${API_VERSION}`, kind: UPDATE_POLICY.kind, metadata: { name }, spec },
  });
}

async function readPolicy(name: string): Promise<UpdatePolicy> {
  return (await custom.getClusterCustomObject({ ...ref, name })) as UpdatePolicy;
}

/** Polls until the policy's condition `type` matches. */
async function condition(
  name: string,
  type: string,
  want: Partial<Condition>,
  message?: RegExp,
): Promise<Condition> {
  let last: Condition | undefined;
  return pollUntil(
    `${name}: ${type} ${JSON.stringify(want)}${message ? ` ${message}` : ''}`,
    async () => {
      last = (await readPolicy(name)).status?.conditions?.find((c) => c.type === type);
      const matches = Object.entries(want).every(([k, v]) => last?.[k as keyof Condition] === v);
      return last && matches && (!message || message.test(last.message)) ? last : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 200 },
  ).catch((err: Error) => {
    throw new Error(`${err.message}; last: ${JSON.stringify(last)}`);
  });
}

async function startFleet(
  budget: Budget[],
  args: string[] = [],
  options: Partial<FleetOptions> = {},
): Promise<Fleet> {
  fleet = new Fleet(cluster, { rebootMs: 300, budget, agentCheckIntervalMs: 2000, ...options });
  await fleet.start();
  fleet.startOperator('op-a', [...FAST_LEASE, ...args]);
  return fleet;
}

/** Every node in `names` rebooted once and Idle again, its need cleared. */
const rebooted = (f: Fleet, names: readonly string[]) => rebootedOnce(core, f, names, { needCleared: true });

async function assertSafe(f: Fleet): Promise<void> {
  await f.checker.finalCheck();
  assert.deepEqual(f.checker.violations, [], 'the checker saw no violation');
}

const bin = fileURLToPath(new URL('../../bin/nuo.js', import.meta.url));

const stateReason = async (name: string) =>
  (await core.readNode({ name })).metadata?.annotations?.[Annotations.stateReason] ?? '';

const pool = (name: string, max: number, zones?: Budget['zones']): Budget => ({
  name: `pool ${name}`,
  selects: (labels) => labels.pool === name,
  max,
  ...(zones ? { zones } : {}),
});

/** A tiny custom resource whose status a test flips: what a health check reads (as a CephCluster). */
const WIDGETS = { group: 'test.nuo.dev', version: 'v1', plural: 'widgets' };
const rbac = cluster.kubeconfig.makeApiClient(RbacAuthorizationV1Api);

const installWidgets = () => installWidgetCrd(cluster.kubeconfig, WIDGETS, 'default');

/** The health check on the Widget default/ceph: it passes while the Widget's status reads HEALTH_OK. */
const CEPH_CHECK = {
  name: 'ceph',
  object: {
    apiVersion: `${WIDGETS.group}/v1`,
    kind: 'Widget',
    namespace: 'default',
    name: 'ceph',
    expression: "object.status.health == 'HEALTH_OK'",
  },
};

/** Creates the Widget default/ceph with this health, or sets it. */
async function setWidgetHealth(health: string): Promise<void> {
  const body = {
    apiVersion: `${WIDGETS.group}/${WIDGETS.version}`,
    kind: 'Widget',
    metadata: { name: 'ceph' },
    status: { health },
  };
  await custom
    .createNamespacedCustomObject({ ...WIDGETS, namespace: 'default', body })
    .catch((err: unknown) => {
      if (statusCode(err) !== 409) throw err;
      return custom.patchNamespacedCustomObject(
        { ...WIDGETS, namespace: 'default', name: 'ceph', body: { status: { health } } },
        mergePatch,
      );
    });
}

describe('UpdatePolicies', () => {
  test('two pools roll at once, each within its own budget, and each policy reports its progress', async () => {
    await createPolicy('a', { nodeSelector: { matchLabels: { pool: 'a' } }, maxUnavailable: 1, ...QUICK });
    await createPolicy('b', { nodeSelector: { matchLabels: { pool: 'b' } }, maxUnavailable: 2, ...QUICK });
    const f = await startFleet([pool('a', 1), pool('b', 2)]);
    await condition('a', 'Ready', { status: 'True', reason: 'Valid' });
    f.stageUpdates();
    await rebooted(f, [...POOL_A, ...POOL_B]);
    await assertSafe(f);
    assert.ok(
      f.checker.maxDisrupted >= 2,
      `the pools rolled at once (max ${f.checker.maxDisrupted} disrupted)`,
    );
    for (const name of ['a', 'b']) {
      await condition(name, 'Progressing', { status: 'False', reason: 'UpToDate' });
      const status = (await readPolicy(name)).status;
      assert.equal(status?.nodes, 3, name);
      assert.equal(status?.budget, name === 'a' ? 1 : 2);
      assert.ok(status?.lastCompletion, `${name} records its last completion`);
      assert.equal(status?.observedGeneration, 1);
    }
    // Idle, a pass changes nothing and writes no status: the policies stay at their resourceVersion
    // through three resync periods of the operator (an absence cannot be awaited: watched for 3 s).
    const versions = async () =>
      Promise.all(['a', 'b'].map(async (name) => (await readPolicy(name)).metadata.resourceVersion));
    const before = await versions();
    for (const until = Date.now() + 3000; Date.now() < until; ) {
      assert.deepEqual(await versions(), before, 'no status write while idle');
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  });

  test('a node two policies select is left alone, and both policies name it', async () => {
    await createPolicy('a', { nodeSelector: { matchLabels: { pool: 'a' } }, ...QUICK });
    await createPolicy('zone-a', { nodeSelector: { matchLabels: { [ZONE]: 'zone-a' } }, ...QUICK });
    // node-0 is in pool a and in zone-a; node-3 only in zone-a.
    const f = await startFleet([
      pool('a', 1),
      { name: 'zone-a', selects: (l) => l[ZONE] === 'zone-a', max: 1 },
    ]);
    f.stageUpdates(['node-0', 'node-1', 'node-3']);
    await rebooted(f, ['node-1', 'node-3']);
    for (const name of ['a', 'zone-a']) {
      const c = await condition(name, 'NodesConflict', { status: 'True', reason: 'SelectorOverlap' });
      assert.match(c.message, /node-0 \(a, zone-a\)/);
    }
    const explained = await runNuo(cluster, 'policy', 'explain', 'node-0');
    assert.equal(explained.code, 0, explained.stderr);
    assert.match(
      explained.stdout,
      /pool: none — UpdatePolicies a and zone-a both select it; it is left alone/,
    );
    const status = await runNuo(cluster, 'status');
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /^ {2}node-0: selected by a and zone-a: left alone$/m);
    assert.match(status.stdout, /^ {2}no policy selects: node-4, node-5 \(left alone\)$/m);
    assert.match(status.stdout, /^node-1 .* a {2,}/m, 'the POOL column names the policy');
    const reasonBecomes = (name: string, want: string) =>
      pollUntil(
        `${name}'s state-reason: ${want}`,
        async () => ((await stateReason(name)) === want ? true : undefined),
        {
          timeoutMs: 30_000,
        },
      );
    await reasonBecomes('node-0', unmanagedReason(['a', 'zone-a']));
    // node-1, rebooted and healthy in pool a, is claimed by a second policy: its reason says so, not the old one.
    await createPolicy('a-too', { nodeSelector: { matchLabels: { pool: 'a' } }, ...QUICK });
    await reasonBecomes('node-1', unmanagedReason(['a', 'a-too']));
    await assertSafe(f);
    assert.equal(f.checker.rebootsOf('node-0'), 0, 'a node two policies select is never rebooted');
  });

  test('a zone cap of 1: never two nodes of a zone at once, while the pool allows three', async () => {
    await createPolicy('all', { maxUnavailable: 3, maxUnavailablePerZone: 1, ...QUICK });
    const f = await startFleet([
      { name: 'all', selects: () => true, max: 3, zones: { label: ZONE, max: 1 } },
    ]);
    f.stageUpdates();
    await rebooted(f, [...POOL_A, ...POOL_B]);
    await assertSafe(f);
    assert.ok(f.checker.maxDisrupted > 1, `zones rolled in parallel (max ${f.checker.maxDisrupted})`);
  });

  test('outside its window nothing starts and the policy says until when; once the window opens, the rollout runs', async () => {
    const tomorrow = new Date(Date.now() + 86_400_000).toLocaleDateString('en-US', {
      weekday: 'short',
      timeZone: 'UTC',
    });
    await createPolicy('w', {
      nodeSelector: { matchLabels: { pool: 'a' } },
      windows: { weekly: [{ days: [tomorrow as 'Mon'], start: '00:00', end: '00:00' }] },
      ...QUICK,
    });
    const mark = await eventsMark(core);
    const f = await startFleet([pool('a', 1)]);
    f.stageUpdates(['node-0']);
    const blocked = await condition('w', 'Blocked', { status: 'True', reason: 'OutsideWindow' });
    assert.match(blocked.message, /outside every maintenance window/);
    await pollUntil('node-0 to say why it waits', async () =>
      /outside every maintenance window/.test(await stateReason('node-0')) ? true : undefined,
    );
    assert.ok((await readPolicy('w')).status?.nextWindow, 'the next window is shown');
    const explained = await runNuo(cluster, 'policy', 'explain', 'node-0');
    assert.equal(explained.code, 0, explained.stderr);
    assert.match(explained.stdout, /pool: UpdatePolicy w/);
    assert.match(explained.stdout, /waits: waiting: outside every maintenance window.*\(until \d{4}-/);
    const status = await runNuo(cluster, 'status');
    assert.match(
      status.stdout,
      /^ {2}w: 3 node\(s\); 0 of 1 disrupted; blocked \(OutsideWindow\): .*; next window \d{4}-/m,
    );
    assert.equal(f.checker.rebootsOf('node-0'), 0);
    await custom.patchClusterCustomObject(
      { ...ref, name: 'w', body: { spec: { windows: null } } },
      mergePatch,
    );
    await rebooted(f, ['node-0']);
    await condition('w', 'Blocked', { status: 'False', reason: 'NotBlocked' });
    assert.equal((await readPolicy('w')).status?.nextWindow, undefined, 'no next window once it is open');
    await assertSafe(f);
    // What happened is told in Events too: the policy's block and its end, the node's attempt.
    const told = await eventsAbout(core, 'UpdatePolicy', 'w', ['OutsideWindow', 'Unblocked'], mark);
    assert.deepEqual(
      told.map((e) => `${e.type} ${e.reason}`),
      ['Normal OutsideWindow', 'Normal Unblocked'],
    );
    assert.match(told[0]?.message ?? '', /outside every maintenance window/);
    const attempt = await eventsAbout(
      core,
      'Node',
      'node-0',
      ['Admitted', 'RebootGranted', 'Rebooted'],
      mark,
    );
    assert.deepEqual(
      attempt.map((e) => e.reason),
      ['Admitted', 'RebootGranted', 'Rebooted'],
      'admitted, drained and granted, rebooted: once each, in order',
    );
  });

  test('an invalid policy admits nothing and names the field; fixed, it goes on', async () => {
    await createPolicy('bad', {
      nodeSelector: { matchLabels: { pool: 'a' } },
      windows: { weekly: [{ days: ['Mon'], start: '01:00', end: '02:00', timeZone: 'Europe/Berlinn' }] },
      ...QUICK,
    });
    const f = await startFleet([pool('a', 1)]);
    f.stageUpdates(['node-1']);
    const ready = await condition('bad', 'Ready', { status: 'False', reason: 'InvalidSpec' });
    assert.match(ready.message, /windows\.weekly\[0\]\.timeZone: unknown time zone "Europe\/Berlinn"/);
    await condition('bad', 'Blocked', { status: 'True', reason: 'InvalidSpec' });
    assert.equal(f.checker.rebootsOf('node-1'), 0);
    await custom.patchClusterCustomObject(
      { ...ref, name: 'bad', body: { spec: { windows: null } } },
      mergePatch,
    );
    await rebooted(f, ['node-1']);
    await condition('bad', 'Ready', { status: 'True', reason: 'Valid', observedGeneration: 2 });
    await assertSafe(f);
  });

  test('a firing alert holds the pool; resolved, the rollout goes on; Prometheus gone, it holds again and says so', async () => {
    const target = new Target();
    const stop = new AbortController();
    const prometheus = await startPrometheus(target, stop.signal);
    try {
      target.gauge = 1;
      await createPolicy('watched', {
        nodeSelector: { matchLabels: { pool: 'a' } },
        blockers: {
          prometheus: { url: prometheus.url, alerts: 'NuoTest.*', matchers: { severity: 'page' } },
        },
        ...QUICK,
      });
      const f = await startFleet([pool('a', 1)], ['--blocker-interval=1s']);
      const firing = await condition('watched', 'Blocked', { status: 'True', reason: 'AlertFiring' });
      const warned = await eventsAbout(core, 'UpdatePolicy', 'watched', ['AlertFiring']);
      assert.equal(warned.find((e) => e.reason === 'AlertFiring')?.type, 'Warning');
      assert.match(firing.message, /alert NuoTestBlock\{.*\} firing/);
      f.stageUpdates(['node-0']);
      await pollUntil('node-0 to say the alert holds it', async () =>
        /NuoTestBlock/.test(await stateReason('node-0')) ? true : undefined,
      );
      assert.equal(f.checker.rebootsOf('node-0'), 0, 'nothing starts while the alert fires');
      target.gauge = 0;
      await rebooted(f, ['node-0']);
      await condition('watched', 'Blocked', { status: 'False', reason: 'NotBlocked' });
      await prometheus.component.stop();
      const gone = await condition(
        'watched',
        'Blocked',
        { status: 'True', reason: 'PrometheusUnavailable' },
        /unreachable/,
      );
      assert.match(gone.message, /Prometheus unreachable at http:\/\/127\.0\.0\.1:\d+/);
      await assertSafe(f);
    } finally {
      stop.abort();
      await prometheus.stop();
    }
  });

  test("a health check the API server refuses when it is not one kind of check; one on a custom resource holds the pool while its status is unhealthy, keeps a finished node's slot when it turns unhealthy after the reboot, and lets the rollout go on once it passes; a ServiceAccount reads it once granted get and list", async () => {
    await installWidgets();
    await setWidgetHealth('HEALTH_WARN');
    const { object } = CEPH_CHECK;
    const refused: [string, UpdatePolicySpec['healthChecks'], RegExp][] = [
      [
        'both kinds',
        [{ name: 'c', object, prometheus: { url: 'http://p:9090', query: 'up', condition: '== 1' } }],
        /set exactly one of object and prometheus/,
      ],
      ['neither kind', [{ name: 'c' }], /set exactly one of object and prometheus/],
      [
        'name and selector',
        [{ name: 'c', object: { ...object, selector: { matchLabels: { app: 'x' } } } }],
        /set exactly one of name and selector/,
      ],
      [
        'a name twice',
        [
          { name: 'c', object },
          { name: 'c', object },
        ],
        /Duplicate value/,
      ],
    ];
    for (const [what, healthChecks, message] of refused) {
      await assert.rejects(createPolicy('refused', { healthChecks }), (err: Error & { body?: string }) => {
        assert.match(String(err.body ?? err.message), message, what);
        return true;
      });
    }
    await createPolicy('checked', {
      nodeSelector: { matchLabels: { pool: 'a' } },
      healthChecks: [{ name: 'ceph', object }],
      // A soak long enough to turn the widget unhealthy while node-0 is in it.
      reboot: { ...QUICK.reboot, soak: '4s' },
    });
    const f = await startFleet([pool('a', 1)], ['--blocker-interval=1s']);
    const held = await condition(
      'checked',
      'Blocked',
      { status: 'True', reason: 'HealthCheck' },
      /health check ceph fails/,
    );
    assert.match(held.message, /Widget default\/ceph: false; its status: \{"health":"HEALTH_WARN"\}/);
    const warned = await eventsAbout(core, 'UpdatePolicy', 'checked', ['HealthCheck']);
    assert.equal(warned.find((e) => e.reason === 'HealthCheck')?.type, 'Warning');
    f.stageUpdates(['node-0', 'node-1']);
    await pollUntil('node-0 to say the health check holds it', async () =>
      /health check ceph fails/.test(await stateReason('node-0')) ? true : undefined,
    );
    const explained = await runNuo(cluster, 'policy', 'explain', 'node-0');
    assert.equal(explained.code, 0, explained.stderr);
    assert.match(explained.stdout, /waits: waiting: health check ceph fails: Widget default\/ceph: false/);
    assert.equal(f.checker.rebootsOf('node-0') + f.checker.rebootsOf('node-1'), 0, 'nothing starts');

    await setWidgetHealth('HEALTH_OK');
    const first = await pollUntil('a node admitted and back in the health gate', async () => {
      for (const name of ['node-0', 'node-1']) {
        const state = (await core.readNode({ name })).metadata?.annotations?.[Annotations.state];
        if (state === Phase.afterReboot) return name;
      }
      return undefined;
    });
    await setWidgetHealth('HEALTH_ERR');
    const second = first === 'node-0' ? 'node-1' : 'node-0';
    await pollUntil(`${first} to keep its slot past its soak for the failing check`, async () =>
      /health gate: waiting for the health checks \(health check ceph fails\)$/.test(await stateReason(first))
        ? true
        : undefined,
    );
    const inGate = await runNuo(cluster, 'policy', 'explain', first);
    assert.match(
      inGate.stdout,
      /health checks: health check ceph fails: .*HEALTH_ERR.*; once back, it keeps its slot/,
    );
    assert.equal(f.checker.rebootsOf(second), 0, 'the next node waits while the finished one keeps its slot');
    assert.equal(
      (await core.readNode({ name: first })).metadata?.annotations?.[Annotations.state],
      Phase.afterReboot,
    );

    await setWidgetHealth('HEALTH_OK');
    await rebooted(f, ['node-0', 'node-1']);
    await condition('checked', 'Blocked', { status: 'False', reason: 'NotBlocked' });
    await assertSafe(f);

    // Read as a ServiceAccount: forbidden until granted get and list, as docs/policies.md says.
    const resolved = resolvePolicy(await readPolicy('checked'));
    assert.ok(resolved.ok);
    const sa = await cluster.serviceAccountKubeconfig('default', 'health-reader');
    const read = () =>
      readHealth(
        resolved.policy.healthChecks,
        KubernetesObjectApi.makeApiClient(sa.kubeconfig),
        AbortSignal.timeout(10_000),
      );
    const forbidden = await read();
    assert.equal(forbidden.checks[0]?.healthy, false);
    assert.match(
      forbidden.checks[0]?.reading ?? '',
      /^Widget default\/ceph could not be read: forbidden: grant the operator's ServiceAccount get and list on Widget \(test\.nuo\.dev\/v1\) in namespace default: /,
    );
    await rbac.createNamespacedRole({
      namespace: 'default',
      body: {
        metadata: { name: 'health-reader' },
        rules: [{ apiGroups: [WIDGETS.group], resources: [WIDGETS.plural], verbs: ['get', 'list'] }],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: 'default',
      body: {
        metadata: { name: 'health-reader' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'health-reader' },
        subjects: [{ kind: 'ServiceAccount', name: 'health-reader', namespace: 'default' }],
      },
    });
    const granted = await pollUntil('the grant to take effect', async () => {
      const r = await read();
      return r.checks[0]?.healthy ? r : undefined;
    });
    assert.equal(granted.checks[0]?.reading, 'Widget default/ceph: true');
  });

  test('an admission whose node write never happened (a leader died between the two writes) is withdrawn while a health check fails, not redone; the node goes once the check passes', async () => {
    await installWidgets();
    await setWidgetHealth('HEALTH_WARN');
    await createPolicy('unstarted', {
      nodeSelector: { matchLabels: { pool: 'a' } },
      healthChecks: [CEPH_CHECK],
      ...QUICK,
    });
    const f = await startFleet([pool('a', 1)], ['--blocker-interval=1s']);
    f.stageUpdates(['node-0']);
    await pollUntil('node-0 to say the health check holds it', async () =>
      /health check ceph fails/.test(await stateReason('node-0')) ? true : undefined,
    );
    // What a leader leaves that died after its ledger write and before its node write: node-0's slot,
    // with no phase on the node to show for it.
    const store = new LedgerStore(core, 'nuo-system');
    await pollUntil('the slot written as a dying leader would', async () => {
      const from = await store.read();
      const attempt = (from.ledger.attempts ?? 0) + 1;
      const slot = { since: new Date().toISOString(), attempt, pool: 'unstarted', reason: 'Reboot' as const };
      const ledger = { ...from.ledger, attempts: attempt, slots: { ...from.ledger.slots, 'node-0': slot } };
      return store.write(from, ledger).then(
        () => true,
        (err: unknown) => {
          if (err instanceof LedgerConflict) return undefined; // the operator wrote it meanwhile: again
          throw err;
        },
      );
    });
    const slots = async () => (await store.read()).ledger.slots;
    await pollUntil('node-0 slot withdrawn', async () => ('node-0' in (await slots()) ? undefined : true));
    const n0 = await core.readNode({ name: 'node-0' });
    assert.equal(n0.metadata?.annotations?.[Annotations.state], Phase.pending, 'it waits again');
    assert.equal(n0.spec?.unschedulable, undefined, 'never cordoned');
    assert.equal(f.checker.rebootsOf('node-0'), 0);
    // The withdrawal names the hold (its log line may reach the file a moment after the ledger write).
    const withdrawals = () =>
      operatorLog(cluster, 'op-a')
        .map((l) => String(l.reason ?? ''))
        .filter((r) => r.startsWith('admission withdrawn'));
    await pollUntil('the withdrawal to name the hold', async () =>
      withdrawals().some((r) =>
        /admission withdrawn before it started: the pool admits nothing now \(health check ceph fails\)/.test(
          r,
        ),
      )
        ? true
        : undefined,
    ).catch((err: Error) => {
      throw new Error(`${err.message}; withdrawals logged: ${withdrawals().join(' | ') || 'none'}`);
    });
    await setWidgetHealth('HEALTH_OK');
    await rebooted(f, ['node-0']);
    await assertSafe(f);
  });

  test('a node a leader 10 minutes ahead moved to the health gate is freed by the next leader once a health-check reading of its own passes, not 10 minutes later', async () => {
    await installWidgets();
    await setWidgetHealth('HEALTH_OK');
    const hook = 'test.nuo.dev/checked';
    await createPolicy('skewed', {
      nodeSelector: { matchLabels: { pool: 'a' } },
      healthChecks: [CEPH_CHECK],
      reboot: { ...QUICK.reboot, afterRebootAnnotations: [hook] },
    });
    const skewS = 600;
    const f = new Fleet(cluster, { rebootMs: 300, budget: [pool('a', 1)], agentCheckIntervalMs: 2000 });
    fleet = f;
    await f.start();
    f.startOperator('op-ahead', [...FAST_LEASE, '--blocker-interval=1s'], { clockSkewS: skewS });
    f.stageUpdates(['node-0']);
    // The hook holds node-0 at the gate until the leader ahead is gone.
    await pollUntil('node-0 at the health gate, waiting for its hook', async () =>
      (await stateReason('node-0')).includes(`after-reboot hooks: ${hook}`) ? true : undefined,
    );
    await f.killOperator('op-ahead');
    const since = (await core.readNode({ name: 'node-0' })).metadata?.annotations?.[Annotations.stateSince];
    assert.ok(
      Date.parse(since ?? '') > Date.now() + (skewS - 60) * 1000,
      `stateSince ${since}: the clock ahead`,
    );
    f.startOperator('op-b', [...FAST_LEASE, '--blocker-interval=1s']);
    await core.patchNode(
      { name: 'node-0', body: { metadata: { annotations: { [hook]: 'true' } } } },
      mergePatch,
    );
    await pollUntil(
      'node-0 Idle, its slot freed by op-b',
      async () => {
        const n = await core.readNode({ name: 'node-0' });
        return n.metadata?.annotations?.[Annotations.state] === Phase.idle ? true : undefined;
      },
      { timeoutMs: (skewS / 5) * 1000, intervalMs: 250 },
    );
    assert.equal(f.checker.rebootsOf('node-0'), 1);
    await core.patchNode(
      { name: 'node-0', body: { metadata: { annotations: { [hook]: null } } } },
      mergePatch,
    );
    await assertSafe(f);
  });

  test('an undrainable node under onFailure Skip is labelled skipped after its drain failed afterAttempts times in a row (other failures not counted), and the rollout finishes without it', async () => {
    // One pod pinned to node-1 that its PDB never lets go: node-1's drain can only time out.
    await undrainablePod(cluster.kubeconfig, 'stuck', 'node-1');
    // Its last attempt failed elsewhere (say, a hook timed out): not a failed drain, so Skip counts it not.
    await core.patchNode(
      { name: 'node-1', body: { metadata: { annotations: { [Annotations.failures]: '1' } } } },
      mergePatch,
    );
    try {
      await createPolicy('skip', {
        nodeSelector: { matchLabels: { pool: 'a' } },
        drain: { timeout: '3s', onFailure: { action: 'Skip', afterAttempts: 2 } },
        reboot: { soak: '1s', retryBackoff: '2s' },
      });
      const f = await startFleet([pool('a', 1)]);
      f.stageUpdates(POOL_A);
      const first = await pollUntil("node-1's first failed drain", async () => {
        const n = await core.readNode({ name: 'node-1' });
        return n.metadata?.annotations?.[Annotations.drainFailures] === '1' ? n : undefined;
      });
      assert.equal(first.metadata?.annotations?.[Annotations.failures], '2');
      assert.equal(
        first.metadata?.labels?.[Labels.skipped],
        undefined,
        'one failed drain of two: not skipped',
      );
      // While its drain waited, the node said on what, and what would unblock it; its end says it again.
      const hold =
        'stuck/pinned: 1 of 1 pod(s) healthy, 1 needed (maxUnavailable 0), 0 disruption(s) allowed; it allows ' +
        'no eviction even with every pod healthy';
      const events = await eventsAbout(core, 'Node', 'node-1', ['DrainWaiting', 'AttemptAborted']);
      const waiting = events.find((e) => e.reason === 'DrainWaiting');
      assert.ok(waiting?.message?.startsWith(`draining, waiting on ${hold}`), waiting?.message);
      const aborted = events.find((e) => e.reason === 'AttemptAborted');
      assert.ok(aborted?.message?.includes(hold), aborted?.message);
      await rebooted(f, ['node-0', 'node-2']);
      // The others may finish first (the admission order among nodes staged at once is not fixed).
      const node1 = await pollUntil('node-1 labelled skipped', async () => {
        const n = await core.readNode({ name: 'node-1' });
        return n.metadata?.labels?.[Labels.skipped] === 'true' ? n : undefined;
      });
      assert.equal(node1.metadata?.annotations?.[Annotations.drainFailures], '2');
      assert.match(
        node1.metadata?.annotations?.[Annotations.stateReason] ?? '',
        /skipped: its drain failed 2 time\(s\) in a row; remove the label nuo\.dev\/skipped to try again/,
      );
      assert.equal(node1.spec?.unschedulable, undefined, "nuo's cordon of the skipped node is undone");
      assert.equal(f.checker.rebootsOf('node-1'), 0);
      await assertSafe(f);
    } finally {
      await core.deleteNamespace({ name: 'stuck' });
      await core.patchNode(
        {
          name: 'node-1',
          body: {
            metadata: {
              labels: { [Labels.skipped]: null },
              annotations: { [Annotations.failures]: null, [Annotations.drainFailures]: null },
            },
          },
        },
        mergePatch,
      );
    }
  });

  test('a running pod a pod blocker selects holds the pool, naming it; once it is gone, the rollout goes on', async () => {
    await core
      .createNamespace({ body: { metadata: { name: 'backup', labels: { tier: 'data' } } } })
      .catch(() => {});
    await pollUntil('default ServiceAccount in backup', () =>
      core.readNamespacedServiceAccount({ name: 'default', namespace: 'backup' }).then(() => true),
    );
    const job = deployment('backup', 'backup', 1);
    if (job.spec?.template.spec) job.spec.template.spec.nodeSelector = { 'kubernetes.io/hostname': 'node-2' };
    await apps.createNamespacedDeployment({ namespace: 'backup', body: job });
    await waitAvailable(apps, 'backup', 'backup');
    try {
      await createPolicy('guarded', {
        nodeSelector: { matchLabels: { pool: 'a' } },
        blockers: {
          pods: [
            {
              selector: { matchLabels: { app: 'backup' } },
              namespaceSelector: { matchLabels: { tier: 'data' } },
            },
          ],
        },
        ...QUICK,
      });
      const f = await startFleet([pool('a', 1)], ['--blocker-interval=1s']);
      f.stageUpdates(['node-0']);
      // Held from the start (the pods not read yet), then by the pod itself, named.
      const blocked = await condition(
        'guarded',
        'Blocked',
        { status: 'True', reason: 'PodBlocker' },
        /is running/,
      );
      assert.match(blocked.message, /pod backup\/backup-\S+ on node-2 \(blockers\.pods\[0\]\) is running/);
      await pollUntil('node-0 to say the pod holds it', async () =>
        /blockers\.pods\[0\]/.test(await stateReason('node-0')) ? true : undefined,
      );
      assert.equal(f.checker.rebootsOf('node-0'), 0);
      await apps.deleteNamespacedDeployment({ namespace: 'backup', name: 'backup' });
      await rebooted(f, ['node-0']);
      await condition('guarded', 'Blocked', { status: 'False', reason: 'NotBlocked' });
      await assertSafe(f);
    } finally {
      await core.deleteNamespace({ name: 'backup' });
    }
  });

  test('a node-scoped pod blocker holds only the node its pod runs on: the rest of the pool goes on', async () => {
    await core.createNamespace({ body: { metadata: { name: 'nightly' } } });
    await pollUntil('default ServiceAccount in nightly', () =>
      core.readNamespacedServiceAccount({ name: 'default', namespace: 'nightly' }).then(() => true),
    );
    const job = deployment('nightly', 'backup', 1);
    if (job.spec?.template.spec) job.spec.template.spec.nodeSelector = { 'kubernetes.io/hostname': 'node-2' };
    await apps.createNamespacedDeployment({ namespace: 'nightly', body: job });
    await waitAvailable(apps, 'nightly', 'backup');
    try {
      await createPolicy('per-node', {
        nodeSelector: { matchLabels: { pool: 'a' } },
        blockers: { pods: [{ selector: { matchLabels: { app: 'backup' } }, scope: 'Node' }] },
        ...QUICK,
      });
      const f = await startFleet([pool('a', 1)], ['--blocker-interval=1s']);
      f.stageUpdates(['node-0', 'node-2']);
      await rebooted(f, ['node-0']);
      assert.match(
        await stateReason('node-2'),
        /waiting: pod nightly\/backup-\S+ \(blockers\.pods\[0\]\) is running on it/,
      );
      assert.equal(f.checker.rebootsOf('node-2'), 0);
      await condition('per-node', 'Blocked', { status: 'False', reason: 'NotBlocked' });
      await apps.deleteNamespacedDeployment({ namespace: 'nightly', name: 'backup' });
      await rebooted(f, ['node-2']);
      await assertSafe(f);
    } finally {
      await core.deleteNamespace({ name: 'nightly' });
    }
  });

  test('a node an autoscaler is removing is never admitted and uses a slot of the budget, for nuo and the checker alike', async () => {
    // As the cluster autoscaler writes it (cluster-autoscaler/utils/taints/taints.go): the Unix time.
    const taint = {
      key: 'ToBeDeletedByClusterAutoscaler',
      value: String(Math.floor(Date.now() / 1000)),
      effect: 'NoSchedule',
    };
    await core.patchNode({ name: 'node-2', body: { spec: { taints: [taint] } } }, mergePatch);
    try {
      await createPolicy('scaled', { nodeSelector: { matchLabels: { pool: 'a' } }, ...QUICK });
      const f = await startFleet([pool('a', 1)]);
      f.stageUpdates(['node-0', 'node-1', 'node-2']);
      await pollUntil('node-2 to say the autoscaler removes it', async () =>
        /the cluster autoscaler \(taint ToBeDeletedByClusterAutoscaler\) is removing the node/.test(
          await stateReason('node-2'),
        )
          ? true
          : undefined,
      );
      await pollUntil('node-0 to wait for the slot node-2 uses', async () =>
        /waiting for a free slot \(maxUnavailable 1\)/.test(await stateReason('node-0')) ? true : undefined,
      );
      assert.ok(f.checker.disrupted().includes('node-2'), 'the checker counts it disrupted too');
      assert.equal(f.checker.rebootsOf('node-0') + f.checker.rebootsOf('node-1'), 0);
      // The autoscaler gave up on it (it removes its taint): the slot is free again.
      await core.patchNode({ name: 'node-2', body: { spec: { taints: [] } } }, mergePatch);
      await rebooted(f, ['node-0', 'node-1', 'node-2']);
      await assertSafe(f);
    } finally {
      await core.patchNode({ name: 'node-2', body: { spec: { taints: [] } } }, mergePatch);
    }
  });

  test("nuo release ends a Failed node's attempt and frees its slot for the pool, with its reason and who asked in an Event; a node not Failed is refused", async () => {
    await createPolicy('release', {
      nodeSelector: { matchLabels: { pool: 'a' } },
      reboot: { soak: '1s', retryBackoff: '1h', rebootTimeout: '3s' },
    });
    const f = await startFleet([pool('a', 1)]);
    // node-0's agent is gone: a reboot a person asks for is granted, and nobody takes the grant.
    await f.hosts.get('node-0')?.killAgent();
    await core.patchNode(
      {
        name: 'node-0',
        body: { metadata: { annotations: { [Annotations.rebootRequested]: new Date().toISOString() } } },
      },
      mergePatch,
    );
    await pollUntil('node-0 Failed in its slot', async () =>
      (await core.readNode({ name: 'node-0' })).metadata?.annotations?.[Annotations.state] === Phase.failed
        ? true
        : undefined,
    );
    f.stageUpdates(['node-1']);
    await pollUntil('node-1 to wait for the slot node-0 holds', async () =>
      /waiting for a free slot/.test(await stateReason('node-1')) ? true : undefined,
    );
    const nuo = (...args: string[]) =>
      spawnSync(process.execPath, [bin, ...args, '--kubeconfig', cluster.kubeconfigPath], {
        encoding: 'utf8',
      });
    const idle = nuo('release', 'node-2', '--reason', 'x');
    assert.equal(idle.status, 1);
    assert.match(idle.stderr, /cannot release node\/node-2: it is Idle, not Failed/);
    const released = nuo('release', 'node-0', '--reason', 'agent pod gone, ticket OPS-1');
    assert.equal(released.status, 0, released.stderr);
    await rebooted(f, ['node-1']);
    const n0 = await core.readNode({ name: 'node-0' });
    assert.equal(n0.metadata?.annotations?.[Annotations.state], Phase.pending);
    const events = await eventsAbout(core, 'Node', 'node-0', ['AttemptAborted']);
    // Who asked, as the API server authenticated the command's caller.
    const who = await whoAmI(cluster.kubeconfig);
    assert.ok(
      events.some(
        (e) =>
          e.reason === 'AttemptAborted' &&
          e.message?.includes(`released by a person (${who}): agent pod gone, ticket OPS-1`),
      ),
      events.map((e) => `${e.reason}: ${e.message}`).join(' | '),
    );
    assert.equal(n0.metadata?.annotations?.[Annotations.release], undefined, 'the request is consumed');
    assert.equal(n0.spec?.unschedulable, undefined, "nuo's cordon undone");
    assert.equal(f.checker.rebootsOf('node-0'), 0);
    await assertSafe(f);
  });

  test('a node whose reboot outlasts rebootTimeout, its grant removed by a third client meanwhile, goes Failed and, back under a new boot ID, completes', async () => {
    await createPolicy('late', {
      nodeSelector: { matchLabels: { pool: 'a' } },
      reboot: { soak: '1s', retryBackoff: '1h', rebootTimeout: '3s' },
    });
    const f = await startFleet([pool('a', 1)], [], { rebootMsByNode: { 'node-0': 8000 } });
    f.stageUpdates(['node-0']);
    const phase = async () =>
      (await core.readNode({ name: 'node-0' })).metadata?.annotations?.[Annotations.state];
    await pollUntil('node-0 Rebooting', async () => ((await phase()) === Phase.rebooting ? true : undefined));
    await core.patchNode(
      { name: 'node-0', body: { metadata: { annotations: { [Annotations.rebootOk]: null } } } },
      mergePatch,
    );
    await pollUntil('node-0 Failed: no new boot ID within 3 s', async () =>
      (await phase()) === Phase.failed ? true : undefined,
    );
    // No operator sees the node come back before its agent has looked at it: what the agent leaves
    // decides whether the reboot is ever seen.
    const agentLooks = () =>
      readFileSync(join(cluster.dir, 'logs', 'agents.log'), 'utf8')
        .split('\n')
        .filter((l) => l.includes('node-0: agent running')).length;
    const looksBefore = agentLooks();
    await f.killOperator('op-a');
    await pollUntil('node-0 back, its new agent having looked at it', async () =>
      agentLooks() > looksBefore ? true : undefined,
    );
    f.startOperator('op-b', FAST_LEASE);
    // The agent kept its mark while the node is Failed: the changed boot ID is seen, the node resumes at
    // the health gate and completes (with the mark cleared, it stayed Failed for good).
    await rebooted(f, ['node-0']);
    await assertSafe(f);
  });

  test('a budget for reboots of 1 beside maxUnavailable 3: one reboot at a time, the waiting nodes naming it, the checker holding nuo to 1', async () => {
    await createPolicy('budgeted', {
      nodeSelector: { matchLabels: { pool: 'a' } },
      maxUnavailable: 3,
      budgets: [{ name: 'reboots', nodes: 1, reasons: ['Reboot'] }],
      ...QUICK,
    });
    const f = await startFleet([pool('a', 1)]);
    f.stageUpdates(POOL_A);
    await pollUntil('a node waiting on the reboots budget', async () => {
      const reasons = await Promise.all(POOL_A.map(stateReason));
      return reasons.some((r) => r.includes('waiting for a free slot (budget reboots: 1 for Reboot)'))
        ? true
        : undefined;
    });
    await rebooted(f, POOL_A);
    assert.equal(f.checker.maxDisrupted, 1);
    await assertSafe(f);
  });

  test('more of the pool NotReady than circuitBreaker.maxNotReady opens the circuit: nothing is admitted until enough nodes are Ready again', async () => {
    const setReady = (name: string, ready: boolean) => setNodeReady(core, name, ready);
    await createPolicy('breaker', {
      nodeSelector: { matchLabels: { pool: 'a' } },
      maxUnavailable: 2,
      circuitBreaker: { maxNotReady: 1 },
      ...QUICK,
    });
    const f = await startFleet([pool('a', 2)]);
    try {
      await setReady('node-1', false);
      await setReady('node-2', false);
      await condition(
        'breaker',
        'Blocked',
        { status: 'True', reason: 'CircuitOpen' },
        /circuit open: 2 of 3 nodes NotReady \(more than 1\)/,
      );
      f.stageUpdates(['node-0']);
      await pollUntil('node-0 to wait for the open circuit', async () =>
        /circuit open/.test(await stateReason('node-0')) ? true : undefined,
      );
      assert.equal(f.checker.rebootsOf('node-0'), 0, 'no admission while the circuit is open');
      await setReady('node-2', true);
      await rebooted(f, ['node-0']);
      await condition('breaker', 'Blocked', { status: 'False', reason: 'NotBlocked' });
      await assertSafe(f);
    } finally {
      await setReady('node-1', true);
      await setReady('node-2', true);
    }
  });

  test("editing only a pod blocker's namespaceSelector reaches the running leader: the pod it now selects holds the pool", async () => {
    await core
      .createNamespace({ body: { metadata: { name: 'archive', labels: { tier: 'cold' } } } })
      .catch(() => {});
    await pollUntil('default ServiceAccount in archive', () =>
      core.readNamespacedServiceAccount({ name: 'default', namespace: 'archive' }).then(() => true),
    );
    const job = deployment('archive', 'archive', 1);
    if (job.spec?.template.spec) job.spec.template.spec.nodeSelector = { 'kubernetes.io/hostname': 'node-2' };
    await apps.createNamespacedDeployment({ namespace: 'archive', body: job });
    await waitAvailable(apps, 'archive', 'archive');
    try {
      const blocker = (tier: string) => ({
        pods: [
          {
            selector: { matchLabels: { app: 'archive' } },
            namespaceSelector: { matchLabels: { tier } },
          },
        ],
      });
      await createPolicy('guarded', {
        nodeSelector: { matchLabels: { pool: 'a' } },
        paused: true,
        blockers: blocker('hot'),
        ...QUICK,
      });
      const f = await startFleet([pool('a', 1)], ['--blocker-interval=1s']);
      // The leader has read the pods with the first filter: the archive namespace is not selected.
      await condition('guarded', 'Blocked', { status: 'True', reason: 'Paused' });
      await pollUntil('the first blocker round, which the archive pod does not match', async () =>
        operatorLog(cluster, 'op-a').some((l) => l.msg === 'blockers' && l.policy === 'guarded')
          ? true
          : undefined,
      );
      const first = operatorLog(cluster, 'op-a').filter(
        (l) => l.msg === 'blockers' && l.policy === 'guarded',
      );
      assert.deepEqual(first.at(-1)?.pods, [], 'the archive pod is outside the first namespaceSelector');
      // Only the namespaceSelector changes, and the policy is unpaused in the same edit.
      await custom.patchClusterCustomObject(
        { ...ref, name: 'guarded', body: { spec: { paused: false, blockers: blocker('cold') } } },
        mergePatch,
      );
      f.stageUpdates(['node-0']);
      const blocked = await condition(
        'guarded',
        'Blocked',
        { status: 'True', reason: 'PodBlocker' },
        /archive\/archive-\S+ on node-2/,
      );
      assert.match(blocked.message, /\(blockers\.pods\[0\]\) is running/);
      await pollUntil('node-0 to say the pod holds it', async () =>
        /blockers\.pods\[0\]/.test(await stateReason('node-0')) ? true : undefined,
      );
      assert.equal(f.checker.rebootsOf('node-0'), 0, 'no node of the pool rebooted while the pod ran');
      await apps.deleteNamespacedDeployment({ namespace: 'archive', name: 'archive' });
      await rebooted(f, ['node-0']);
      await assertSafe(f);
    } finally {
      await core.deleteNamespace({ name: 'archive' });
    }
  });

  test('a pod with nuo.dev/do-not-disrupt for a duration keeps its node waiting until then; the rest of the pool goes on', async () => {
    await core.createNamespace({ body: { metadata: { name: 'busy' } } }).catch(() => {});
    await pollUntil('default ServiceAccount in busy', () =>
      core.readNamespacedServiceAccount({ name: 'default', namespace: 'busy' }).then(() => true),
    );
    const busy = deployment('busy', 'busy', 1);
    const template = busy.spec?.template;
    if (template?.spec) template.spec.nodeSelector = { 'kubernetes.io/hostname': 'node-1' };
    if (template)
      template.metadata = { ...template.metadata, annotations: { 'nuo.dev/do-not-disrupt': '15s' } };
    await apps.createNamespacedDeployment({ namespace: 'busy', body: busy });
    await waitAvailable(apps, 'busy', 'busy');
    try {
      await createPolicy('opt-out', {
        nodeSelector: { matchLabels: { pool: 'a' } },
        maxUnavailable: 2,
        ...QUICK,
      });
      const f = await startFleet([pool('a', 2)]);
      f.stageUpdates(['node-0', 'node-1']);
      const reason = await pollUntil('node-1 to say its pod asks not to be disrupted', async () => {
        const r = await stateReason('node-1');
        return /nuo\.dev\/do-not-disrupt="15s" until/.test(r) ? r : undefined;
      });
      const until = Date.parse(reason.match(/until (\S+)/)?.[1] ?? '');
      await rebooted(f, ['node-0']);
      assert.equal(f.checker.rebootsOf('node-1'), 0, 'node-1 waits while node-0 reboots');
      // The attempt's first phase is stamped by the operator when it admits the node.
      const admitted = await pollUntil('node-1 to be admitted', async () => {
        const a = (await core.readNode({ name: 'node-1' })).metadata?.annotations ?? {};
        const state = a[Annotations.state];
        return state && state !== Phase.pending && state !== Phase.idle
          ? a[Annotations.stateSince]
          : undefined;
      });
      assert.ok(
        Date.parse(admitted ?? '') >= until,
        `admitted at ${admitted}, not before ${new Date(until).toISOString()}`,
      );
      await rebooted(f, ['node-1']);
      await assertSafe(f);
    } finally {
      await core.deleteNamespace({ name: 'busy' });
    }
  });

  test('drain.waitFor: a Job pod it names keeps running while its node drains, the node saying which pod and until when, and the reboot follows once it completes; the API server refuses a rule that cannot work', async () => {
    const refused: [string, unknown, RegExp][] = [
      ['an empty selector', [{ selector: {}, maxWait: '5m' }], /selector must name at least one label/],
      ['no maxWait', [{ selector: { matchLabels: { app: 'x' } } }], /maxWait: Required value/],
      [
        'a maxWait of 0',
        [{ selector: { matchLabels: { app: 'x' } }, maxWait: '0' }],
        /maxWait must be from 1s/,
      ],
    ];
    for (const [what, waitFor, message] of refused) {
      const spec = { drain: { waitFor } } as UpdatePolicySpec;
      await assert.rejects(createPolicy('refused', spec), (err: Error & { body?: string }) => {
        assert.match(String(err.body ?? err.message), message, what);
        return true;
      });
    }
    await core.createNamespace({ body: { metadata: { name: 'nightly' } } }).catch(() => {});
    await pollUntil('default ServiceAccount in nightly', () =>
      core.readNamespacedServiceAccount({ name: 'default', namespace: 'nightly' }).then(() => true),
    );
    try {
      await createPolicy('batch', {
        nodeSelector: { matchLabels: { pool: 'a' } },
        drain: { waitFor: [{ selector: { matchLabels: { app: 'nightly' } }, maxWait: '5m' }] },
        ...QUICK,
      });
      const f = await startFleet([pool('a', 1)]);
      await batch.createNamespacedJob({
        namespace: 'nightly',
        body: {
          metadata: { name: 'nightly' },
          spec: {
            backoffLimit: 0,
            template: {
              metadata: {
                labels: { app: 'nightly' },
                annotations: { [SimJobAnnotations.completeDelay]: '20s' },
              },
              spec: {
                restartPolicy: 'Never',
                nodeSelector: { 'kubernetes.io/hostname': 'node-2' },
                containers: [{ name: 'c', image: 'registry.example/nightly:1' }],
              },
            },
          },
        },
      });
      const job = await pollUntil("the nightly Job's pod to run on node-2", async () => {
        const [p] = (await core.listNamespacedPod({ namespace: 'nightly' })).items;
        return p?.status?.phase === 'Running' ? p : undefined;
      });
      const mark = await eventsMark(core);
      f.stageUpdates(['node-2']);
      const reason = await pollUntil('node-2 to say which pod its drain waits for', async () => {
        const r = await stateReason('node-2');
        return r.startsWith('draining, waiting on ') ? r : undefined;
      });
      assert.match(
        reason,
        new RegExp(
          `^draining, waiting on pod nightly/${job.metadata?.name} \\(drain\\.waitFor\\[0\\]\\) to finish until \\S+Z, then evicted$`,
        ),
      );
      const since = (await core.readNode({ name: 'node-2' })).metadata?.annotations?.[Annotations.stateSince];
      const until = Date.parse(reason.match(/until (\S+),/)?.[1] ?? '');
      // From the start of Draining as the leader saw it: its own write, or a new leader's first sight.
      const late = until - (Date.parse(since ?? '') + 300_000);
      assert.ok(late >= 0 && late < 60_000, `maxWait counts from the start of Draining (${late} ms later)`);
      const events = await eventsAbout(core, 'Node', 'node-2', ['DrainWaiting'], mark);
      const waiting = events.find((e) => e.reason === 'DrainWaiting');
      assert.equal(waiting?.type, 'Normal');
      assert.equal(waiting?.message, reason);
      await condition(
        'batch',
        'Progressing',
        { status: 'True' },
        /node-2 is draining, waiting on pod nightly\//,
      );
      await rebooted(f, ['node-2']);
      const after = await core.readNamespacedPod({ name: job.metadata?.name ?? '', namespace: 'nightly' });
      assert.equal(after.metadata?.uid, job.metadata?.uid, 'the Job pod was never evicted');
      assert.equal(after.status?.phase, 'Succeeded', 'it ran to completion');
      await assertSafe(f);
    } finally {
      await core.deleteNamespace({ name: 'nightly' });
    }
  });

  test('a pod that asks not to be disrupted after its node was admitted is not evicted: the attempt ends uncordoned, no failure counted, and waits for it', async () => {
    await core.createNamespace({ body: { metadata: { name: 'late' } } }).catch(() => {});
    await pollUntil('default ServiceAccount in late', () =>
      core.readNamespacedServiceAccount({ name: 'default', namespace: 'late' }).then(() => true),
    );
    const late = deployment('late', 'late', 1);
    if (late.spec?.template.spec)
      late.spec.template.spec.nodeSelector = { 'kubernetes.io/hostname': 'node-0' };
    await apps.createNamespacedDeployment({ namespace: 'late', body: late });
    await waitAvailable(apps, 'late', 'late');
    const hook = 'example.com/ready';
    try {
      await createPolicy('late-ask', {
        nodeSelector: { matchLabels: { pool: 'a' } },
        reboot: { ...QUICK.reboot, beforeRebootAnnotations: [hook] },
      });
      const f = await startFleet([pool('a', 1)]);
      f.stageUpdates(['node-0']);
      await pollUntil('node-0 admitted, waiting for its before-reboot hook', async () =>
        (await core.readNode({ name: 'node-0' })).metadata?.annotations?.[Annotations.state] ===
        Phase.beforeReboot
          ? true
          : undefined,
      );
      // Admitted with no pod asking; now one asks, and the hook lets the drain start.
      const [pod] = (await core.listNamespacedPod({ namespace: 'late' })).items;
      const uid = pod?.metadata?.uid;
      await core.patchNamespacedPod(
        {
          name: pod?.metadata?.name ?? '',
          namespace: 'late',
          body: { metadata: { annotations: { 'nuo.dev/do-not-disrupt': 'true' } } },
        },
        mergePatch,
      );
      await core.patchNode(
        { name: 'node-0', body: { metadata: { annotations: { [hook]: 'true' } } } },
        mergePatch,
      );
      const held = await pollUntil('node-0 Pending, its drain held by the pod', async () => {
        const n = await core.readNode({ name: 'node-0' });
        const a = n.metadata?.annotations ?? {};
        return a[Annotations.state] === Phase.pending && /held/.test(a[Annotations.stateReason] ?? '')
          ? n
          : undefined;
      });
      assert.match(
        held.metadata?.annotations?.[Annotations.stateReason] ?? '',
        /late\/late-\S+ has nuo\.dev\/do-not-disrupt="true"/,
      );
      assert.equal(held.spec?.unschedulable, undefined, "nuo's cordon is undone");
      assert.equal(held.metadata?.annotations?.[Annotations.failures], undefined, 'no failure is counted');
      // The pod still runs, never evicted; the node waits for it, naming it.
      let last = '';
      await pollUntil('node-0 to wait for the pod before a new attempt', async () => {
        last = await stateReason('node-0');
        return /^waiting: pod late\/late-\S+ has nuo\.dev\/do-not-disrupt="true"$/.test(last)
          ? true
          : undefined;
      }).catch((err: Error) => {
        throw new Error(`${err.message}; its reason: ${last}`);
      });
      const still = (await core.listNamespacedPod({ namespace: 'late' })).items;
      assert.deepEqual(
        still.map((p) => p.metadata?.uid),
        [uid],
        'the pod that asked was never evicted',
      );
      assert.equal(f.checker.rebootsOf('node-0'), 0);
      await core.patchNamespacedPod(
        {
          name: pod?.metadata?.name ?? '',
          namespace: 'late',
          body: { metadata: { annotations: { 'nuo.dev/do-not-disrupt': null } } },
        },
        mergePatch,
      );
      // Its pods read again (within the reread period), the node is admitted anew and asks for its hook.
      await pollUntil(
        'node-0 admitted again, waiting for its before-reboot hook',
        async () =>
          (await core.readNode({ name: 'node-0' })).metadata?.annotations?.[Annotations.state] ===
          Phase.beforeReboot
            ? true
            : undefined,
        { timeoutMs: 60_000 },
      );
      await core.patchNode(
        { name: 'node-0', body: { metadata: { annotations: { [hook]: 'true' } } } },
        mergePatch,
      );
      await rebooted(f, ['node-0']);
      await assertSafe(f);
    } finally {
      await core.deleteNamespace({ name: 'late' });
    }
  });

  test("a node's condition held for `for` gets one remediation reboot through the budget, with its reason and Event, and the pool's next waits for the rate limit; a node up longer than maxUptime is refreshed, a young one is not", async () => {
    const HOUR = 3_600_000;
    const kernelDeadlock = (name: string, minutesAgo: number) =>
      setNodeProblem(core, name, {
        type: 'KernelDeadlock',
        reason: 'DockerHung',
        message: 'task docker:7 blocked for more than 120 seconds.',
        since: new Date(Date.now() - minutesAgo * 60_000),
      });
    const refused = await createPolicy('short', {
      nodeSelector: { matchLabels: { pool: 'none' } },
      reboot: { maxUptime: '30m' },
    }).then(
      () => undefined,
      (err: unknown) => err,
    );
    assert.equal(statusCode(refused), 422, 'a maxUptime under an hour is refused by the API server');
    await createPolicy('fix', {
      nodeSelector: { matchLabels: { pool: 'a' } },
      // `for` counts from when the operator first saw the condition, not from its transition time.
      remediation: { conditions: [{ type: 'KernelDeadlock', for: '2s' }] },
      ...QUICK,
    });
    await createPolicy('fresh', {
      nodeSelector: { matchLabels: { pool: 'b' } },
      reboot: { ...QUICK.reboot, maxUptime: '1h' },
    });
    const mark = await eventsMark(core);
    const f = await startFleet([pool('a', 1), pool('b', 1)], [], {
      bootedAt: { 'node-3': new Date(Date.now() - 3 * HOUR) },
    });
    // One reboot each and no more: a remediation that loops is a double reboot to the checker.
    f.checker.allowReboots('node-0');
    f.checker.allowReboots('node-3');
    try {
      await kernelDeadlock('node-0', 10);
      await rebooted(f, ['node-3']);
      // Its condition outlived the reboot: counted ineffective at once, so it is Idle only for an instant.
      await pollUntil('node-0 remediated once, its reboot counted ineffective', async () => {
        const a = (await core.readNode({ name: 'node-0' })).metadata?.annotations ?? {};
        return f.checker.rebootsOf('node-0') === 1 && a[Annotations.ineffectiveReboots] === '1'
          ? true
          : undefined;
      });
      const event = (await eventsAbout(core, 'Node', 'node-0', ['Remediation'], mark)).find(
        (e) => e.reason === 'Remediation',
      );
      assert.match(event?.message ?? '', /remediation: KernelDeadlock=True since .* \(for 2s or more\)/);
      const fixed = (await core.readNode({ name: 'node-0' })).metadata?.annotations ?? {};
      assert.ok(fixed[Annotations.remediatedAt], 'the remediation is recorded on the node');
      const refresh = (await eventsAbout(core, 'Node', 'node-3', ['Admitted'], mark)).find(
        (e) => e.reason === 'Admitted',
      );
      assert.match(refresh?.message ?? '', /refresh: up since .* \(maxUptime 1h\)/);
      const bootTime = (await core.readNode({ name: 'node-3' })).metadata?.annotations?.[
        Annotations.bootTime
      ];
      assert.ok(Date.parse(bootTime ?? '') > Date.now() - HOUR, `node-3 reports its new boot (${bootTime})`);

      await kernelDeadlock('node-1', 10);
      for (const name of ['node-0', 'node-1'])
        await pollUntil(`${name} to wait for the remediation rate limit`, async () =>
          /remediation rate limit \(1 an hour in the pool/.test(await stateReason(name)) ? true : undefined,
        );
      assert.equal(f.checker.rebootsOf('node-0'), 1, 'no second remediation within the hour');
      assert.equal(f.checker.rebootsOf('node-1'), 0);
      for (const name of ['node-4', 'node-5']) assert.equal(f.checker.rebootsOf(name), 0, `${name} is young`);
      await assertSafe(f);
    } finally {
      for (const name of ['node-0', 'node-1']) await clearNodeProblem(core, name, 'KernelDeadlock');
    }
  });

  test('a node deleted and registered again mid-remediation comes back without its annotations, and the rate limit still counts its remediation', async () => {
    const hook = 'test.nuo.dev/ready-to-drain';
    const kernelDeadlock = () =>
      setNodeProblem(core, 'node-0', {
        type: 'KernelDeadlock',
        reason: 'DockerHung',
        since: new Date(Date.now() - 10 * 60_000),
      });
    await createPolicy('fix', {
      nodeSelector: { matchLabels: { pool: 'a' } },
      // `for` counts from when the operator first saw the condition, not from its transition time.
      remediation: { conditions: [{ type: 'KernelDeadlock', for: '2s' }] },
      reboot: { ...QUICK.reboot, beforeRebootAnnotations: [hook] },
    });
    const f = await startFleet([pool('a', 1)]);
    try {
      await kernelDeadlock();
      // The hook holds the remediation before its drain, where the node is deleted.
      await pollUntil('node-0 admitted for its remediation, waiting for its hook', async () =>
        (await stateReason('node-0')).includes(`before-reboot hooks: ${hook}`) ? true : undefined,
      );
      const gone = await core.readNode({ name: 'node-0' });
      assert.ok(gone.metadata?.annotations?.[Annotations.remediatedAt], 'recorded on the node as well');
      const host = f.hosts.get('node-0');
      assert.ok(host);
      await host.killAgent();
      await core.deleteNode({ name: 'node-0' });
      await pollUntil('node-0 deleted', async () =>
        (await core.listNode()).items.some((n) => n.metadata?.name === 'node-0') ? undefined : true,
      );
      await cluster.addNodes([{ name: 'node-0', zone: gone.metadata?.labels?.[ZONE] ?? 'zone-a' }]);
      await core.patchNode({ name: 'node-0', body: { metadata: { labels: { pool: 'a' } } } }, mergePatch);
      await host.start();
      // KWOK may still be writing the new node's status when the host takes it over, as in the chaos runs.
      await pollUntil("node-0's boot ID shown again", async () => {
        if ((await core.readNode({ name: 'node-0' })).status?.nodeInfo?.bootID === host.bootIdValue)
          return true;
        await host.publishBootId();
        return undefined;
      });
      await kernelDeadlock();
      await pollUntil('node-0, registered again, waiting for the remediation rate limit', async () =>
        /remediation rate limit \(1 an hour in the pool/.test(await stateReason('node-0')) ? true : undefined,
      );
      const back = await core.readNode({ name: 'node-0' });
      assert.notEqual(back.metadata?.uid, gone.metadata?.uid, 'a new Node object');
      assert.equal(
        back.metadata?.annotations?.[Annotations.remediatedAt],
        undefined,
        'its annotation gone with it',
      );
      assert.equal(back.spec?.unschedulable, undefined, 'not admitted again: never cordoned');
      assert.equal(f.checker.rebootsOf('node-0'), 0);
      await assertSafe(f);
    } finally {
      await clearNodeProblem(core, 'node-0', 'KernelDeadlock');
    }
  });

  test('waves 1, 2, 4: the first wave disrupts one node, each next one twice as many after a pause, a new leader continues the wave, and the checker holds nuo to each wave', async () => {
    await createPolicy('waves', {
      maxUnavailable: 3,
      rollout: { waves: { initial: 1, growth: 2, pauseBetween: '3s' } },
      ...QUICK,
    });
    const all = [...POOL_A, ...POOL_B];
    const f = await startFleet([
      { name: 'waves', selects: () => true, max: 3, waves: { initial: 1, growth: 2 } },
    ]);
    // A standby, ready to take over.
    f.startOperator('op-b', FAST_LEASE);
    const mark = await eventsMark(core);
    f.stageUpdates();
    const first = await pollUntil('wave 1 in the status', async () => {
      const s = (await readPolicy('waves')).status;
      return s?.rollout?.wave === 1 && s.holders?.length === 1 ? s : undefined;
    });
    assert.equal(first.budget, 1, 'wave 1 caps the slots at 1 while maxUnavailable allows 3');
    // The leader dies in the middle of wave 2: the next one goes on with wave 2 from the ledger, then 3.
    await pollUntil('wave 2 under way', async () => {
      const s = (await readPolicy('waves')).status;
      return s?.rollout?.wave === 2 && (s.holders?.length ?? 0) > 0 ? true : undefined;
    });
    await f.killOperator('op-a', 'SIGKILL');
    await rebooted(f, all);
    await assertSafe(f);
    assert.ok(
      f.checker.maxDisrupted >= 2,
      `the waves grew (max ${f.checker.maxDisrupted} disrupted at once)`,
    );
    const paused = await eventsAbout(core, 'UpdatePolicy', 'waves', ['WavePause'], mark);
    assert.match(paused[0]?.message ?? '', /wave 2 starts at .* \(rollout\.waves\.pauseBetween\)/);
    const third = await eventsAbout(core, 'UpdatePolicy', 'waves', ['WavePause'], mark);
    assert.ok(
      third.some((e) => /wave 3 starts/.test(e.message ?? '')),
      `the new leader paused before wave 3: ${third.map((e) => e.message).join(' | ')}`,
    );
    await condition('waves', 'Progressing', { status: 'False', reason: 'UpToDate' });
    const done = await pollUntil('the rollout gone from the status', async () => {
      const s = (await readPolicy('waves')).status;
      return s && s.rollout === undefined ? s : undefined;
    });
    assert.equal(done.budget, 3, 'no rollout: maxUnavailable alone');
  });

  test('a failure budget of 2: two failed attempts halt the pool (Halted, an Event), nothing starts until nuo policy resume, which records who; then the rollout finishes', async () => {
    // node-0 and node-1 each run a pod their PDB never lets go: their drains can only time out.
    await undrainablePod(cluster.kubeconfig, 'stuck0', 'node-0');
    await undrainablePod(cluster.kubeconfig, 'stuck1', 'node-1');
    try {
      await createPolicy('halts', {
        nodeSelector: { matchLabels: { pool: 'a' } },
        drain: { timeout: '2s' },
        reboot: { soak: '1s', retryBackoff: '1s' },
        rollout: { failureBudget: { maxFailedAttempts: 2 } },
      });
      const f = await startFleet([pool('a', 1)]);
      const mark = await eventsMark(core);
      f.stageUpdates(POOL_A);
      const halted = await condition('halts', 'Halted', { status: 'True', reason: 'FailureBudgetSpent' });
      assert.match(halted.message, /2 failed attempt\(s\) .*run "nuo policy resume halts" to go on/);
      await condition('halts', 'Blocked', { status: 'True', reason: 'Halted' });
      const events = await eventsAbout(core, 'UpdatePolicy', 'halts', ['Halted'], mark);
      assert.equal(events[0]?.type, 'Warning');
      assert.equal((await readPolicy('halts')).status?.rollout?.failedAttempts, 2);
      // Halted, nothing starts: node-0 and node-1 still need their reboots, past their backoff, and wait
      // (an absence cannot be awaited: watched for 4 s).
      const inAttempt = async () =>
        (await core.listNode({ labelSelector: 'pool=a' })).items.filter((n) =>
          [Phase.draining, Phase.rebootGranted, Phase.rebooting, Phase.afterReboot].includes(
            (n.metadata?.annotations?.[Annotations.state] ?? '') as never,
          ),
        );
      await pollUntil('the last attempt to end', async () =>
        (await inAttempt()).length === 0 ? true : undefined,
      );
      for (const until = Date.now() + 4000; Date.now() < until; ) {
        assert.deepEqual(
          (await inAttempt()).map((n) => n.metadata?.name),
          [],
          'nothing admitted while halted',
        );
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      assert.match(await stateReason('node-0'), /halted: 2 failed attempt/);
      // The pods may go now; the resume lets the pool go on.
      for (const ns of ['stuck0', 'stuck1'])
        await pdbs.deleteNamespacedPodDisruptionBudget({ name: 'pinned', namespace: ns });
      const resumed = await runNuo(cluster, 'policy', 'resume', 'halts');
      assert.equal(resumed.code, 0, resumed.stderr);
      assert.match(resumed.stdout, /^updatepolicy\/halts resumed at \S+ by \S+/);
      const cleared = await condition(
        'halts',
        'Halted',
        { status: 'False', reason: 'NotHalted' },
        /resumed at/,
      );
      const status = (await readPolicy('halts')).status;
      assert.ok(
        status?.resumed?.by && !status.resumed.by.endsWith('(kubeconfig user)'),
        JSON.stringify(status?.resumed),
      );
      assert.ok(cleared.message.includes(`by ${status?.resumed?.by}`), cleared.message);
      await rebooted(f, POOL_A);
      await assertSafe(f);
    } finally {
      await core.deleteNamespace({ name: 'stuck0' });
      await core.deleteNamespace({ name: 'stuck1' });
    }
  });
});
