/**
 * The node lifecycle conditions (KEP-5683) nuo publishes, on the real control plane: they appear in order
 * on the node being updated and are gone once its attempt ends (also after an abort); they survive the
 * kubelet's own status writes (KWOK's, and the simulated host's across its reboot); an admin's condition
 * of the same type survives nuo's writes.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import {
  AppsV1Api,
  CoreV1Api,
  PolicyV1Api,
  type V1Node,
  type V1NodeCondition,
  Watch,
} from '@kubernetes/client-node';
import { Annotations, LifecycleConditions as C, LIFECYCLE_CONDITIONS } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import { mergePatch, strategicMergePatch } from '../../src/kube/patch.ts';
import { Fleet } from '../../src/sim/fleet.ts';
import { deployment, waitAvailable } from '../../src/sim/workload.ts';
import { pollUntil } from '../../src/util/poll.ts';
import { operatorUnder, runNuo, useCluster } from './support.ts';

const cluster = await useCluster({ nodes: 3, zones: 3 });
const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
const apps = cluster.kubeconfig.makeApiClient(AppsV1Api);
const policy = cluster.kubeconfig.makeApiClient(PolicyV1Api);

await core.createNamespace({ body: { metadata: { name: 'nuo-system' } } });
await core.createNamespace({ body: { metadata: { name: 'app' } } });
await pollUntil('default ServiceAccount in app', () =>
  core.readNamespacedServiceAccount({ name: 'default', namespace: 'app' }).then(() => true),
);
// Two pods per node under a PDB that lets one go at a time: each drain waits for a replacement, so it
// lasts long enough to be seen.
await apps.createNamespacedDeployment({ namespace: 'app', body: deployment('app', 'web', 6) });
await policy.createNamespacedPodDisruptionBudget({
  namespace: 'app',
  body: { metadata: { name: 'web' }, spec: { maxUnavailable: 1, selector: { matchLabels: { app: 'web' } } } },
});
await waitAvailable(apps, 'app', 'web');

const ADMIN = {
  type: C.maintenancePlanned,
  status: 'True',
  reason: 'AdminRequested',
  message: 'disk replacement planned by the storage team',
};

let fleet: Fleet | undefined;

const lifecycle = (n: V1Node | undefined) =>
  (n?.status?.conditions ?? []).filter((c) => (LIFECYCLE_CONDITIONS as readonly string[]).includes(c.type));
const conditionOf = (n: V1Node | undefined, type: string): V1NodeCondition | undefined =>
  n?.status?.conditions?.find((c) => c.type === type);
const ready = (n: V1Node | undefined) => conditionOf(n, 'Ready')?.status === 'True';
const time = (t: unknown) => (t instanceof Date ? t.toISOString() : String(t));

async function setNeed(name: string, value: 'true' | null) {
  await core.patchNode(
    { name, body: { metadata: { annotations: { [Annotations.rebootNeeded]: value } } } },
    mergePatch,
  );
}

describe('node lifecycle conditions', () => {
  // Before the cluster's own after() (file-level hooks run in order): agents must not outlive it.
  after(() => fleet?.stop());

  test("a waiting node is MaintenancePlanned; KWOK's status writes keep it; an admin's is left alone", async () => {
    // The admin's own, written before nuo runs.
    await core.patchNodeStatus(
      { name: 'node-1', body: { status: { conditions: [ADMIN] } } },
      strategicMergePatch,
    );
    await setNeed('node-0', 'true');
    await setNeed('node-1', 'true');
    // Paused cluster-wide: both wait in Pending. No simulated hosts: KWOK plays every kubelet.
    const f = new Fleet(cluster, { rebootMs: 300, budget: 1 });
    await operatorUnder(f, 'op-paused', { maxUnavailable: 1 }, ['--paused=true']);
    try {
      const planned = await pollUntil('nuo to publish MaintenancePlanned on node-0', async () => {
        const c = conditionOf(await core.readNode({ name: 'node-0' }), C.maintenancePlanned);
        return c?.reason === 'NuoRebootNeeded' ? c : undefined;
      });
      assert.equal(planned.status, 'True');
      assert.match(planned.message ?? '', /^reboot needed; nuo maintains it when its pool allows/);
      const pendingOne = await pollUntil('node-1 to wait in Pending', async () => {
        const n = await core.readNode({ name: 'node-1' });
        return n.metadata?.annotations?.[Annotations.state] === Phase.pending ? n : undefined;
      });
      assert.deepEqual(
        lifecycle(pendingOne).map(({ type, status, reason, message }) => ({ type, status, reason, message })),
        [ADMIN],
        "the admin's MaintenancePlanned stands, and nuo published none beside it",
      );

      // `nuo status` shows them, and whose the admin's is.
      const status = await runNuo(cluster, 'status');
      assert.equal(status.code, 0, status.stderr);
      const row = (node: string) => status.stdout.split('\n').find((l) => l.startsWith(`${node} `)) ?? '';
      assert.match(row('node-0'), / MaintenancePlanned +[^(]/);
      assert.match(row('node-1'), / MaintenancePlanned \(AdminRequested\) /);
      assert.doesNotMatch(row('node-2'), /Maintenance/);

      // KWOK writes node-0's status as the kubelet would once it reports again: its own conditions, by
      // a strategic merge patch (its node-initialize stage, run again on a node that is not Ready).
      const before = await core.readNode({ name: 'node-0' });
      await core.patchNodeStatus(
        {
          name: 'node-0',
          body: { status: { conditions: [{ type: 'Ready', status: 'False', reason: 'NodeStatusUnknown' }] } },
        },
        strategicMergePatch,
      );
      const rewritten = await pollUntil(
        "KWOK to write node-0's status again",
        async () => {
          const n = await core.readNode({ name: 'node-0' });
          return ready(n) && conditionOf(n, 'Ready')?.reason === 'KubeletReady' ? n : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 200 },
      );
      const kept = conditionOf(rewritten, C.maintenancePlanned);
      assert.equal(kept?.reason, 'NuoRebootNeeded', "KWOK's write kept nuo's condition");
      assert.equal(
        time(kept?.lastHeartbeatTime),
        time(conditionOf(before, C.maintenancePlanned)?.lastHeartbeatTime),
        'kept, not written again by nuo',
      );
      assert.notEqual(
        time(conditionOf(rewritten, 'Ready')?.lastHeartbeatTime),
        time(conditionOf(before, 'Ready')?.lastHeartbeatTime),
        'KWOK did write the status',
      );

      // The need gone: nuo removes its own condition, and still not the admin's.
      await setNeed('node-0', null);
      await setNeed('node-1', null);
      await pollUntil('nuo to remove its MaintenancePlanned from node-0', async () =>
        lifecycle(await core.readNode({ name: 'node-0' })).length === 0 ? true : undefined,
      );
      assert.equal(
        conditionOf(await core.readNode({ name: 'node-1' }), C.maintenancePlanned)?.reason,
        'AdminRequested',
      );
    } finally {
      await f.killOperator('op-paused');
    }
  });

  test('during a rollout each condition appears in order, survives the reboot, and is gone after', async () => {
    // Every version of every node the watch delivers, in order.
    const seen = new Map<string, V1Node[]>();
    const watch = await new Watch(cluster.kubeconfig).watch(
      '/api/v1/nodes',
      {},
      (_type: string, n: V1Node) => {
        const name = n.metadata?.name ?? '';
        seen.set(name, [...(seen.get(name) ?? []), n]);
      },
      () => {},
    );
    try {
      fleet = new Fleet(cluster, { rebootMs: 1000, budget: 1, agentCheckIntervalMs: 2000 });
      await fleet.start();
      const f = fleet;
      await operatorUnder(f, 'op-a', { maxUnavailable: 1 });
      f.stageUpdates();
      await pollUntil(
        "every node rebooted once, back to Idle, and its last watched version without nuo's conditions",
        async () => {
          const nodes = (await core.listNode()).items;
          // The writer removes the conditions in a pass after Idle: wait for that version to arrive.
          const cleared = (name: string) => {
            const last = seen.get(name)?.at(-1);
            return last !== undefined && lifecycle(last).every((c) => !c.reason?.startsWith('Nuo'));
          };
          const done = nodes.every(
            (n) =>
              n.metadata?.annotations?.[Annotations.state] === Phase.idle &&
              f.checker.rebootsOf(n.metadata?.name ?? '') === 1 &&
              cleared(n.metadata?.name ?? ''),
          );
          return done ? true : undefined;
        },
        { timeoutMs: 240_000, intervalMs: 250 },
      );
      // The checker fails the run on any of nuo's conditions left outside an attempt.
      await f.checker.finalCheck();
      assert.deepEqual(f.checker.violations, []);

      for (const name of ['node-0', 'node-1', 'node-2']) {
        const versions = seen.get(name) ?? [];
        const nuos = versions.map((n) => lifecycle(n).filter((c) => c.reason?.startsWith('Nuo')));
        const first = (type: string) => nuos.findIndex((cs) => cs.some((c) => c.type === type));
        const last = (type: string) => nuos.findLastIndex((cs) => cs.some((c) => c.type === type));
        const order = [C.drainInProgress, C.drained, C.maintenanceInProgress].map(first);
        const [draining = -1, drained = -1, inProgress = -1] = order;
        assert.ok(
          draining >= 0 && draining < drained && drained === inProgress,
          `${name}: DrainInProgress, then Drained with MaintenanceInProgress (first seen at ${order})`,
        );
        // Drained and MaintenanceInProgress stand without a gap until the attempt ends.
        for (const type of [C.drained, C.maintenanceInProgress]) {
          const gap = nuos.slice(first(type), last(type) + 1).some((cs) => !cs.some((c) => c.type === type));
          assert.equal(gap, false, `${name}: ${type} never dropped mid-attempt`);
        }
        // The reboot: the host posted NotReady, then Ready, and nuo's conditions stayed through both.
        const down = versions.findIndex((n, i) => i > first(C.maintenanceInProgress) && !ready(n));
        assert.ok(down > 0 && down < last(C.maintenanceInProgress), `${name}: NotReady while in maintenance`);
        assert.deepEqual(
          nuos[down]?.map((c) => c.type).sort(),
          [C.drained, C.maintenanceInProgress].sort(),
          `${name}: the host's NotReady kept nuo's conditions`,
        );
        const up = versions.findIndex((n, i) => i > down && ready(n));
        assert.ok(
          up > down && up <= last(C.maintenanceInProgress),
          `${name}: Ready again, still in maintenance`,
        );
        assert.deepEqual(nuos.at(-1), [], `${name}: none of nuo's conditions once the attempt ended`);
        if (name === 'node-1') {
          // nuo published no MaintenancePlanned of its own here: the admin's stood throughout.
          assert.ok(
            versions.every((n) => conditionOf(n, C.maintenancePlanned)?.reason === 'AdminRequested'),
            "node-1: the admin's MaintenancePlanned stood through nuo's writes",
          );
        } else {
          const planned = first(C.maintenancePlanned);
          assert.ok(planned >= 0 && planned <= draining, `${name}: MaintenancePlanned first`);
          assert.ok(last(C.maintenancePlanned) < inProgress, `${name}: no longer planned once in progress`);
        }
      }
    } finally {
      watch.abort();
    }
  });

  test('an aborted attempt leaves only MaintenancePlanned: its drain is no longer in progress', async () => {
    await fleet?.stop();
    // A pod no controller manages: a drain without force refuses it, and the attempt is aborted.
    const bare = {
      metadata: { name: 'bare' },
      spec: { nodeName: 'node-0', containers: [{ name: 'c', image: 'registry.example/x:1' }] },
    };
    await core.createNamespacedPod({ namespace: 'app', body: bare });
    try {
      fleet = new Fleet(cluster, { rebootMs: 300, budget: 1, agentCheckIntervalMs: 2000 });
      await fleet.start();
      await operatorUnder(fleet, 'op-abort', { maxUnavailable: 1, reboot: { retryBackoff: '1h' } });
      fleet.stageUpdates(['node-0']);
      await pollUntil('node-0 aborted back to Pending', async () => {
        const a = (await core.readNode({ name: 'node-0' })).metadata?.annotations ?? {};
        return a[Annotations.state] === Phase.pending && a[Annotations.failures] === '1' ? true : undefined;
      });
      const left = await pollUntil('only MaintenancePlanned left on node-0', async () => {
        const conditions = lifecycle(await core.readNode({ name: 'node-0' }));
        return conditions.length === 1 && conditions[0]?.type === C.maintenancePlanned
          ? conditions
          : undefined;
      });
      assert.equal(left[0]?.reason, 'NuoRebootNeeded');
      assert.equal(fleet.checker.rebootsOf('node-0'), 0, 'not rebooted');
    } finally {
      await core.deleteNamespacedPod({ name: 'bare', namespace: 'app', gracePeriodSeconds: 0 });
    }
  });
});
