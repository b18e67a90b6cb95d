/**
 * nuo beside kured during a migration, on the real control plane: some nodes run kured 1.23.0 (the real
 * binary, tools/kured/build.ts, one runc container per node: kured-agent.ts), the others nuo's agent, and
 * one UpdatePolicy over all of them with a budget of 2 and coexistence.kured. The independent checker
 * counts kured's holders as disrupted (a reboot under kured's lock is kured's own) and holds both to the
 * one budget. With holdLock, kured and nuo take turns; without it, kured's holder uses a slot of nuo's
 * budget even once kured has uncordoned it (kured's --lock-release-delay keeps the lock after that).
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';
import { AppsV1Api, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, UPDATE_POLICY } from '../../src/api/crd.ts';
import { Annotations } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import type { UpdatePolicy, UpdatePolicySpec } from '../../src/api/update-policy.ts';
import { mergePatch } from '../../src/kube/patch.ts';
import { KURED_LOCK_ANNOTATION } from '../../src/operator/protocols/kured-lock.ts';
import { Fleet } from '../../src/sim/fleet.ts';
import { KURED_ACCOUNT } from '../../src/sim/kured-agent.ts';
import { installPolicyCrd } from '../../src/sim/policies.ts';
import { pollUntil } from '../../src/util/poll.ts';
import { FAST_LEASE, operatorLog, resetNodes, useCluster } from './support.ts';

const cluster = await useCluster({ nodes: 5 });
const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
const apps = cluster.kubeconfig.makeApiClient(AppsV1Api);
const custom = cluster.kubeconfig.makeApiClient(CustomObjectsApi);
const ref = { group: API_GROUP, version: API_VERSION, plural: UPDATE_POLICY.plural };
const KURED_NODES = ['node-0', 'node-1'];
const NUO_NODES = ['node-2', 'node-3', 'node-4'];
/** kured's --concurrency here: both of its nodes at once, the whole budget. */
const KURED_CONCURRENCY = 2;
const BUDGET = 2;

let fleet: Fleet | undefined;
after(() => fleet?.stop());

before(async () => {
  await core.createNamespace({ body: { metadata: { name: 'nuo-system' } } });
  await installPolicyCrd(cluster);
});

afterEach(async () => {
  await fleet?.stop();
  fleet = undefined;
  const list = (await custom.listClusterCustomObject(ref)) as { items: UpdatePolicy[] };
  for (const p of list.items) await custom.deleteClusterCustomObject({ ...ref, name: p.metadata.name });
  await resetNodes(core, { uncordonAll: true });
  // Each test runs kured with its own --concurrency: the lock's form must be its.
  await apps.patchNamespacedDaemonSet(
    { ...KURED_ACCOUNT, body: { metadata: { annotations: { [KURED_LOCK_ANNOTATION]: null } } } },
    mergePatch,
  );
});

async function createPolicy(name: string, spec: UpdatePolicySpec): Promise<void> {
  await custom.createClusterCustomObject({
    ...ref,
    body: { apiVersion: `${API_GROUP}/${API_VERSION}`, kind: UPDATE_POLICY.kind, metadata: { name }, spec },
  });
}

async function kuredLock(): Promise<string | undefined> {
  const ds = await apps.readNamespacedDaemonSet(KURED_ACCOUNT);
  return ds.metadata?.annotations?.[KURED_LOCK_ANNOTATION];
}

describe('nuo beside kured 1.23.0', () => {
  test("with holdLock: kured waits while nuo's attempts run, the rollout finishes, never more than the budget across both", async () => {
    /** nuo's nodes in an attempt (as the checker's watch sees them) at each moment kured rebooted a node. */
    const nuoBusyAtKuredReboot: string[][] = [];
    const f = new Fleet(cluster, {
      rebootMs: 500,
      budget: BUDGET,
      agentCheckIntervalMs: 2000,
      kuredNodes: KURED_NODES,
      kured: {
        periodSeconds: 2,
        args: [`--concurrency=${KURED_CONCURRENCY}`],
        onReboot: () => nuoBusyAtKuredReboot.push(f.checker.disrupted().filter((n) => NUO_NODES.includes(n))),
      },
    });
    fleet = f;
    await f.start();
    await createPolicy('all', {
      maxUnavailable: BUDGET,
      // A long soak keeps nuo's attempts running past kured's first look at its lock (30–90 s after start).
      reboot: { soak: '60s', retryBackoff: '5s' },
      coexistence: {
        kured: {
          daemonSet: { namespace: KURED_ACCOUNT.namespace, name: KURED_ACCOUNT.name },
          concurrency: KURED_CONCURRENCY,
          holdLock: true,
          lockTTL: '1m',
        },
      },
    });
    f.startOperator('op-a', FAST_LEASE);
    f.stageUpdates();

    // nuo holds kured's lock, in kured's list form, every free place filled.
    const held = await pollUntil(
      "nuo's hold in kured's lock",
      async () => {
        const value = await kuredLock();
        return value?.includes('nuo.dev/all#2') ? value : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    const parsed = JSON.parse(held) as { maxOwners: number; locks: { nodeID: string; TTL: number }[] };
    assert.equal(parsed.maxOwners, KURED_CONCURRENCY);
    assert.deepEqual(
      parsed.locks.map((l) => [l.nodeID, l.TTL]),
      [
        ['nuo.dev/all#1', 60e9],
        ['nuo.dev/all#2', 60e9],
      ],
    );

    await pollUntil(
      'every node rebooted once, by nuo or by kured, and kured has let go of its lock',
      async () => {
        const nodes = (await core.listNode()).items;
        const done = nodes.every((n) => {
          const name = n.metadata?.name ?? '';
          if (KURED_NODES.includes(name))
            return f.checker.kuredRebootsOf(name) === 1 && !n.spec?.unschedulable;
          return (
            f.checker.rebootsOf(name) === 1 &&
            n.metadata?.annotations?.[Annotations.state] === Phase.idle &&
            n.metadata?.annotations?.[Annotations.rebootNeeded] === undefined
          );
        });
        const lock = JSON.parse((await kuredLock()) ?? '{"locks":[]}') as { locks: unknown[] };
        return done && lock.locks.length === 0 ? true : undefined;
      },
      { timeoutMs: 400_000, intervalMs: 1000 },
    );
    await f.checker.settle();

    assert.deepEqual(f.checker.violations, []);
    assert.ok(f.checker.maxDisrupted <= BUDGET, `at most ${BUDGET} disrupted, saw ${f.checker.maxDisrupted}`);
    for (const n of KURED_NODES) {
      const kured = f.kured?.nodes.get(n);
      assert.equal(kured?.reboots, 1, `${n}: kured rebooted it once`);
      // kured found nuo's hold when it first wanted to reboot, and waited.
      assert.match(kured?.output() ?? '', /Lock already held/, n);
    }
    assert.deepEqual(nuoBusyAtKuredReboot, [[], []], "kured rebooted only while none of nuo's attempts ran");
    for (const n of NUO_NODES) assert.equal(f.checker.kuredRebootsOf(n), 0);
    const log = operatorLog(cluster, 'op-a');
    assert.ok(log.some((l) => l.msg === "kured's lock held"));
    assert.ok(log.some((l) => l.msg === "kured's lock released"));
  });

  test('without holdLock: a node kured holds its lock for uses a slot, even uncordoned', async () => {
    const kuredNode = 'node-0';
    const f = new Fleet(cluster, {
      rebootMs: 500,
      budget: BUDGET,
      agentCheckIntervalMs: 2000,
      kuredNodes: [kuredNode],
      // kured uncordons its node after the boot, then keeps its lock this long: schedulable and Ready,
      // disrupted only by the lock.
      kured: { periodSeconds: 2, args: ['--lock-release-delay=60s'] },
    });
    fleet = f;
    await f.start();
    await createPolicy('all', {
      maxUnavailable: BUDGET,
      reboot: { soak: '1s', retryBackoff: '5s' },
      coexistence: { kured: { daemonSet: { namespace: KURED_ACCOUNT.namespace, name: KURED_ACCOUNT.name } } },
    });
    f.startOperator('op-a', FAST_LEASE);
    f.stageUpdates([kuredNode]);
    // kured first looks 30–90 s after each start (its delaytick over a minute): once before the reboot and
    // once after it, before it uncordons. 60–180 s of waiting before drain, reboot and a loaded machine.
    await pollUntil(
      `${kuredNode} rebooted by kured, uncordoned, its lock still held`,
      async () => {
        const n = await core.readNode({ name: kuredNode });
        const lock = await kuredLock();
        return f.checker.kuredRebootsOf(kuredNode) === 1 &&
          !n.spec?.unschedulable &&
          lock?.includes(kuredNode)
          ? true
          : undefined;
      },
      { timeoutMs: 400_000, intervalMs: 500 },
    );

    /** The most of nuo's nodes in an attempt at once while kured's lock named its node. */
    let most = 0;
    f.stageUpdates(NUO_NODES);
    await pollUntil(
      "nuo's nodes rebooted once, Idle, and kured's lock released",
      async () => {
        const [nodes, lock] = await Promise.all([core.listNode(), kuredLock()]);
        const busy = nodes.items.filter((n) => {
          const phase = n.metadata?.annotations?.[Annotations.state];
          return (
            NUO_NODES.includes(n.metadata?.name ?? '') &&
            phase !== undefined &&
            phase !== Phase.idle &&
            phase !== Phase.pending
          );
        });
        if (lock?.includes(kuredNode)) most = Math.max(most, busy.length);
        const done = NUO_NODES.every((n) => f.checker.rebootsOf(n) === 1) && busy.length === 0;
        return done && !lock?.includes(kuredNode) ? true : undefined;
      },
      { timeoutMs: 240_000, intervalMs: 250 },
    );
    await f.checker.settle();
    assert.deepEqual(f.checker.violations, []);
    assert.equal(most, BUDGET - 1, "one slot to nuo's nodes while kured's lock held the other");
  });
});
