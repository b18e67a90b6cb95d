/**
 * Reboot coordination end to end on the real control plane: `nuo operator` processes, one agent per
 * simulated node, workloads under PDBs, and an independent checker that fails the test on any breach.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { AppsV1Api, CoreV1Api, PolicyV1Api, type V1Pod, Watch } from '@kubernetes/client-node';
import { Annotations, Taints } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import { mergePatch } from '../../src/kube/patch.ts';
import { Fleet } from '../../src/sim/fleet.ts';
import { RebootBehaviour } from '../../src/sim/host.ts';
import { movesLine } from '../../src/sim/moves.ts';
import { MovesObserver } from '../../src/sim/moves-observe.ts';
import { daemonSet, deployment, waitAvailable } from '../../src/sim/workload.ts';
import { pollUntil } from '../../src/util/poll.ts';
import { eventsAbout, operatorUnder, useCluster } from './support.ts';

const NODES = 6;
const cluster = await useCluster({ nodes: NODES, zones: 3 });
const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
const apps = cluster.kubeconfig.makeApiClient(AppsV1Api);
const policy = cluster.kubeconfig.makeApiClient(PolicyV1Api);

await core.createNamespace({ body: { metadata: { name: 'nuo-system' } } });
await core.createNamespace({ body: { metadata: { name: 'app' } } });
await pollUntil('default ServiceAccount in app', () =>
  core.readNamespacedServiceAccount({ name: 'default', namespace: 'app' }).then(() => true),
);
for (const [name, replicas] of [
  ['web', 6],
  ['api', 3],
] as const) {
  await apps.createNamespacedDeployment({ namespace: 'app', body: deployment('app', name, replicas) });
  await policy.createNamespacedPodDisruptionBudget({
    namespace: 'app',
    body: { metadata: { name }, spec: { maxUnavailable: 1, selector: { matchLabels: { app: name } } } },
  });
}
await apps.createNamespacedDaemonSet({ namespace: 'app', body: daemonSet('app', 'node-agent') });
await waitAvailable(apps, 'app', 'web');
await waitAvailable(apps, 'app', 'api');

let fleet: Fleet | undefined;

async function nodeStates() {
  return (await core.listNode()).items.map((n) => ({
    name: n.metadata?.name ?? '',
    state: n.metadata?.annotations?.[Annotations.state],
    needed: n.metadata?.annotations?.[Annotations.rebootNeeded],
    reason: n.metadata?.annotations?.[Annotations.stateReason],
  }));
}

async function rolloutDone(f: Fleet, timeoutMs = 240_000) {
  await pollUntil(
    'every node rebooted once and back to Idle',
    async () => {
      const states = await nodeStates();
      const done = states.every(
        (s) => s.state === Phase.idle && s.needed === undefined && f.checker.rebootsOf(s.name) === 1,
      );
      return done ? true : undefined;
    },
    { timeoutMs, intervalMs: 250 },
  ).catch(async (err) => {
    throw new Error(`${err.message}\n${JSON.stringify(await nodeStates(), null, 1)}`);
  });
}

/** `nodes` each rebooted once and back to Idle (the others may still wait). */
async function rebootedOnce(f: Fleet, nodes: readonly string[]) {
  await pollUntil(
    `${nodes.join(', ')} rebooted once and back to Idle`,
    async () => {
      const states = await nodeStates();
      const done = nodes.every(
        (n) => f.checker.rebootsOf(n) === 1 && states.find((s) => s.name === n)?.state === Phase.idle,
      );
      return done ? true : undefined;
    },
    { timeoutMs: 240_000, intervalMs: 250 },
  );
}

async function newFleet(budget: number, options: Partial<ConstructorParameters<typeof Fleet>[1]> = {}) {
  await fleet?.stop();
  fleet = new Fleet(cluster, { rebootMs: 300, budget, agentCheckIntervalMs: 2000, ...options });
  await fleet.start();
  return fleet;
}

/**
 * Puts every app pod on `loaded` (one node per zone): the other nodes cordoned meanwhile, the pods
 * deleted and placed again by the scheduler's zone spreading. Call with no fleet running: the checker
 * would see the cordons.
 */
async function placeAppPodsOn(loaded: string[]) {
  const others = (await core.listNode()).items
    .map((n) => n.metadata?.name ?? '')
    .filter((n) => !loaded.includes(n));
  const appPods = async () =>
    (await core.listNamespacedPod({ namespace: 'app' })).items.filter(
      (p) => !p.metadata?.ownerReferences?.some((o) => o.kind === 'DaemonSet'),
    );
  for (const name of others)
    await core.patchNode({ name, body: { spec: { unschedulable: true } } }, mergePatch);
  try {
    for (const p of await appPods())
      await core.deleteNamespacedPod({ name: p.metadata?.name ?? '', namespace: 'app' });
    await pollUntil(`every app pod on ${loaded.join(', ')}`, async () => {
      const pods = await appPods();
      const placed = pods.filter(
        (p) => !p.metadata?.deletionTimestamp && loaded.includes(p.spec?.nodeName ?? ''),
      );
      return pods.length === 9 && placed.length === 9 ? true : undefined;
    });
  } finally {
    for (const name of others)
      await core.patchNode({ name, body: { spec: { unschedulable: false } } }, mergePatch);
  }
  await waitAvailable(apps, 'app', 'web');
  await waitAvailable(apps, 'app', 'api');
}

async function assertSafe(f: Fleet) {
  await f.checker.finalCheck();
  assert.deepEqual(f.checker.violations, [], 'the checker saw no violation');
  assert.deepEqual(f.runaways, [], 'no operator ran away with its memory');
}

describe('rollout', () => {
  // Before the cluster's own after() (file-level hooks run in order): agents must not outlive it.
  after(() => fleet?.stop());

  test('maxUnavailable=1: every node reboots exactly once, never two at a time', async () => {
    const f = await newFleet(1);
    await operatorUnder(f, 'op-a', { maxUnavailable: 1 });
    f.stageUpdates();
    await rolloutDone(f);
    await assertSafe(f);
    assert.equal(f.checker.maxDisrupted, 1);
    // Each freed slot went to the node promised it while the last one soaked, straight from the write
    // that ended the attempt (no pass, no ledger write between them).
    const log = await readFile(join(cluster.dir, 'logs', 'operator-op-a.log'), 'utf8');
    assert.ok(log.includes('"slot handed over"'), 'a promised slot was handed over');
    await waitAvailable(apps, 'app', 'web');
  });

  test('maxUnavailable=3: three at a time, never more, and pods evicted no more than the bound', async () => {
    // Every pod on node-0, node-1 and node-2, first by name: the first wave must be the three empty nodes.
    await fleet?.stop();
    await placeAppPodsOn(['node-0', 'node-1', 'node-2']);
    const f = await newFleet(3);
    await operatorUnder(f, 'op-a', { maxUnavailable: 3 });
    const moves = new MovesObserver(cluster.kubeconfig, 'app');
    await moves.start();
    try {
      f.stageUpdates();
      await rolloutDone(f);
      await assertSafe(f);
      assert.ok(f.checker.maxDisrupted > 1, `used the budget in parallel (max ${f.checker.maxDisrupted})`);
      assert.ok(f.checker.maxDisrupted <= 3);
      // Every node drains, so P evictions at least, and the first wave's pods move again: with the three
      // empty nodes first, none does (the bound, P + the pods of the 3 least-loaded nodes, is P).
      const m = moves.moves([...f.hosts.keys()], 3);
      assert.equal(m.missed, 0, movesLine(m));
      assert.equal(m.evictions, m.bound, movesLine(m));
    } finally {
      await moves.stop();
    }
  });

  test('an admin-cordoned node stays cordoned, and counts against the budget', async () => {
    await fleet?.stop();
    // Cordoned before the checker starts, so the checker knows it as an admin's cordon.
    await core.patchNode({ name: 'node-5', body: { spec: { unschedulable: true } } }, mergePatch);
    try {
      const f = await newFleet(2);
      await operatorUnder(f, 'op-a', { maxUnavailable: 2 });
      f.stageUpdates();
      await rolloutDone(f);
      await assertSafe(f);
      assert.ok(f.checker.maxDisrupted <= 2);
      const node5 = await core.readNode({ name: 'node-5' });
      assert.equal(node5.spec?.unschedulable, true, "the admin's cordon is still there");
      assert.equal(node5.metadata?.annotations?.[Annotations.cordonedByNuo], undefined);
    } finally {
      await core.patchNode({ name: 'node-5', body: { spec: { unschedulable: false } } }, mergePatch);
    }
  });

  test('nodes waiting for their reboot are tainted PreferNoSchedule, so an evicted pod is not evicted again', async () => {
    // Zones alternate a, b, c: nodes 0 and 3 share zone a, 1 and 4 zone b. Spreading by zone, the
    // scheduler would put a pod evicted from node-0 on node-3, which drains next; tainted, it does not:
    // an untainted node scores 3 × 100 more on taints, zone spreading at most 2 × 100 (decision 0065).
    const waiting = ['node-0', 'node-1', 'node-3', 'node-4'];
    const taintsOf = async (name: string) => (await core.readNode({ name })).spec?.taints ?? [];
    const tainted = async (name: string) =>
      (await taintsOf(name)).some((t) => t.key === Taints.rebootPending);
    // Pods created once the drains begin, and those of them deleted again before the rollout ended.
    const created = new Set<string>();
    const deleted = new Set<string>();
    const watch = await new Watch(cluster.kubeconfig).watch(
      '/api/v1/namespaces/app/pods',
      {},
      (type: string, pod: V1Pod) => {
        const name = pod.metadata?.name ?? '';
        if (type === 'ADDED') created.add(name);
        if (type === 'DELETED') deleted.add(name);
      },
      () => {},
    );
    try {
      // Paused cluster-wide, nuo admits nobody: the four nodes wait, tainted.
      const f = await newFleet(1);
      await operatorUnder(f, 'op-a', { maxUnavailable: 1 }, ['--paused=true']);
      f.stageUpdates(waiting);
      await pollUntil('the waiting nodes to be tainted', async () => {
        for (const n of waiting) if (!(await tainted(n))) return undefined;
        return true;
      });
      for (const n of ['node-2', 'node-5'])
        assert.equal(await tainted(n), false, `${n} needs no reboot: untainted`);
      created.clear();
      await f.killOperator('op-a');
      await operatorUnder(f, 'op-b', { maxUnavailable: 1 });
      await rebootedOnce(f, waiting);
      await assertSafe(f);
      assert.ok(created.size > 0, 'the drains evicted pods, and their replacements were created');
      const evictedAgain = [...created].filter((p) => deleted.has(p));
      assert.deepEqual(evictedAgain, [], 'no replacement pod landed on a node that was still to drain');
      for (const n of waiting) assert.equal(await tainted(n), false, `${n}: taint removed once done`);
    } finally {
      watch.abort();
    }
  });
  test("beside an admin's soft taints, waiting nodes carry more of nuo's, and an evicted pod is not evicted again", async () => {
    // The scheduler scores soft taints relative to the node carrying the most: beside node-2's two, one
    // taint would cost a waiting node 150 points, less than the 200 zone spreading gives the zone whose
    // pods were all evicted. So node-0 holds every pod of zone a, and node-3 (zone a) waits after it.
    await fleet?.stop();
    const waiting = ['node-0', 'node-1', 'node-3', 'node-4'];
    const admins = [
      { key: 'example.com/admin', effect: 'PreferNoSchedule' },
      { key: 'example.com/scale-down-candidate', effect: 'PreferNoSchedule' },
    ];
    const taintsOf = async (name: string) => (await core.readNode({ name })).spec?.taints ?? [];
    const nuos = async (name: string) =>
      (await taintsOf(name)).filter((t) => t.key.startsWith(Taints.rebootPending)).map((t) => t.key);
    await placeAppPodsOn(['node-0', 'node-1', 'node-2']);
    await core.patchNode({ name: 'node-2', body: { spec: { taints: admins } } }, mergePatch);
    const moves = new MovesObserver(cluster.kubeconfig, 'app');
    try {
      const f = await newFleet(1);
      await operatorUnder(f, 'op-a', { maxUnavailable: 1 }, ['--paused=true']);
      f.stageUpdates(waiting);
      const three = [Taints.rebootPending, `${Taints.rebootPendingMore}2`, `${Taints.rebootPendingMore}3`];
      await pollUntil(
        "the waiting nodes to carry three taints of nuo's, one more than node-2's",
        async () => {
          for (const n of waiting) if ((await nuos(n)).sort().join() !== three.join()) return undefined;
          return true;
        },
      );
      await moves.start();
      await f.killOperator('op-a');
      await operatorUnder(f, 'op-b', { maxUnavailable: 1 });
      await rebootedOnce(f, waiting);
      await assertSafe(f);
      const m = moves.moves(waiting, 1);
      assert.equal(m.evictions, 6, `node-0's and node-1's pods evicted, each once: ${movesLine(m)}`);
      assert.equal(m.again, 0, movesLine(m));
      for (const n of waiting) assert.deepEqual(await nuos(n), [], `${n}: nuo's taints removed once done`);
      assert.deepEqual(
        (await taintsOf('node-2')).map(({ key, effect }) => ({ key, effect })),
        admins,
        "the admin's taints kept as they were",
      );
    } finally {
      await moves.stop();
      await core.patchNode({ name: 'node-2', body: { spec: { taints: null } } }, mergePatch);
    }
  });
  test('a node that never comes back keeps its slot; the others wait, and the reason is visible', async () => {
    const f = await newFleet(1, { behaviours: { 'node-0': RebootBehaviour.neverReturns } });
    await operatorUnder(f, 'op-a', {
      maxUnavailable: 1,
      reboot: { returnTimeout: '3s', rebootTimeout: '3s' },
    });
    f.stageUpdates(['node-0', 'node-1']);
    const failed = await pollUntil(
      'node-0 to be Failed',
      async () => {
        const s = (await nodeStates()).find((n) => n.name === 'node-0');
        return s?.state === Phase.failed ? s : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 250 },
    );
    assert.match(failed.reason ?? '', /boot ID unchanged|not Ready within/);
    const told = await eventsAbout(core, 'Node', 'node-0', ['RebootFailed']);
    assert.equal(told.find((e) => e.reason === 'RebootFailed')?.type, 'Warning', 'the failure is a Warning');
    // node-1 needs a reboot too but must keep waiting while node-0 holds the only slot.
    const node1 = await pollUntil('node-1 to explain why it waits', async () => {
      const s = (await nodeStates()).find((n) => n.name === 'node-1');
      return s?.state === Phase.pending && s.reason?.startsWith('waiting for a free slot') ? s : undefined;
    });
    assert.equal(f.checker.rebootsOf('node-1'), 0);
    assert.ok(node1);
    // Not finished by design (node-0 fails closed, cordoned): no final check, but nothing else broke.
    assert.deepEqual(f.checker.violations, []);
  });
});
