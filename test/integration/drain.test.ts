/**
 * The drain engine against the real control plane: PDBs answered by the disruption controller,
 * replacements placed by the scheduler, pods deleted by KWOK.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  AppsV1Api,
  BatchV1Api,
  CoreV1Api,
  PolicyV1Api,
  SchedulingV1Api,
  StorageV1Api,
  type V1Pod,
} from '@kubernetes/client-node';
import { Annotations, PodAnnotations } from '../../src/api/keys.ts';
import { cordon, UncordonResult, uncordon, uncordonWith } from '../../src/drain/cordon.ts';
import { Drainer, DrainOutcome } from '../../src/drain/evict.ts';
import { PodAction } from '../../src/drain/plan.ts';
import { podsOnNode } from '../../src/drain/plan-reads.ts';
import type { DrainEvent } from '../../src/drain/progress.ts';
import { statusCode } from '../../src/kube/errors.ts';
import { mergePatch } from '../../src/kube/patch.ts';
import { SimJobAnnotations } from '../../src/sim/job-keys.ts';
import { deployment, waitAvailable } from '../../src/sim/workload.ts';
import { pollUntil } from '../../src/util/poll.ts';
import { useCluster } from './support.ts';

const NODES = ['node-0', 'node-1', 'node-2', 'node-3'];
const cluster = await useCluster({ nodes: NODES.length, zones: 2 });
const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
const apps = cluster.kubeconfig.makeApiClient(AppsV1Api);
const batch = cluster.kubeconfig.makeApiClient(BatchV1Api);
const policy = cluster.kubeconfig.makeApiClient(PolicyV1Api);
const storage = cluster.kubeconfig.makeApiClient(StorageV1Api);
const scheduling = cluster.kubeconfig.makeApiClient(SchedulingV1Api);
const drainer = new Drainer(cluster.kubeconfig);

async function setUnschedulable(node: string, unschedulable: boolean) {
  await core.patchNode({ name: node, body: { spec: { unschedulable } } }, mergePatch);
}

/** Runs `create` with every node but `target` cordoned, so the scheduler puts the new pods on `target`. */
async function onlyOn<T>(target: string, create: () => Promise<T>): Promise<T> {
  const others = NODES.filter((n) => n !== target);
  for (const n of others) await setUnschedulable(n, true);
  try {
    return await create();
  } finally {
    for (const n of others) await setUnschedulable(n, false);
  }
}

async function namespace(name: string) {
  await core.createNamespace({ body: { metadata: { name } } });
  await pollUntil(`default ServiceAccount in ${name}`, () =>
    core.readNamespacedServiceAccount({ name: 'default', namespace: name }).then(() => true),
  );
  return name;
}

async function deployOn(node: string, ns: string, name: string, replicas: number) {
  await onlyOn(node, async () => {
    await apps.createNamespacedDeployment({ namespace: ns, body: deployment(ns, name, replicas) });
    await waitAvailable(apps, ns, name);
  });
}

async function pdb(
  ns: string,
  name: string,
  spec: { minAvailable?: number; maxUnavailable?: number },
  healthy: number,
) {
  await policy.createNamespacedPodDisruptionBudget({
    namespace: ns,
    body: { metadata: { name }, spec: { ...spec, selector: { matchLabels: { app: name } } } },
  });
  await pollUntil(`PDB ${ns}/${name} observed`, async () => {
    const p = await policy.readNamespacedPodDisruptionBudget({ name, namespace: ns });
    return p.status?.observedGeneration === 1 && p.status.currentHealthy === healthy ? true : undefined;
  });
}

function barePod(ns: string, name: string, node: string, extra: Partial<V1Pod['spec']> = {}): V1Pod {
  return {
    metadata: { name, namespace: ns },
    spec: { nodeName: node, containers: [{ name: 'c', image: 'registry.example/x:1' }], ...extra },
  };
}

/**
 * A one-pod Job scheduled onto `node` whose pod runs for `runs` (KWOK's pod-complete stage) and then
 * completes; resolves with the running pod's name and UID.
 */
async function jobOn(node: string, ns: string, name: string, runs: string) {
  const labels = { app: name };
  const pod = await onlyOn(node, async () => {
    await batch.createNamespacedJob({
      namespace: ns,
      body: {
        metadata: { name },
        spec: {
          backoffLimit: 0,
          template: {
            metadata: { labels, annotations: { [SimJobAnnotations.completeDelay]: runs } },
            spec: {
              restartPolicy: 'Never',
              terminationGracePeriodSeconds: 1,
              containers: [{ name: 'c', image: 'registry.example/etl:1' }],
            },
          },
        },
      },
    });
    return pollUntil(`Job ${ns}/${name}'s pod to run on ${node}`, async () => {
      const [p] = (await core.listNamespacedPod({ namespace: ns, labelSelector: `app=${name}` })).items;
      return p?.status?.phase === 'Running' && p.spec?.nodeName === node ? p : undefined;
    });
  });
  return { name: pod.metadata?.name ?? '', uid: pod.metadata?.uid ?? '' };
}

/** The rule the waitFor tests drain by: pods of app=etl, for `seconds`. */
const waitRule = (seconds: number, afterMaxWait: 'Evict' | 'Fail' = 'Evict') => ({
  name: 'drain.waitFor[0]',
  selector: 'app=etl',
  namespaceSelector: '',
  maxWaitSeconds: seconds,
  afterMaxWait,
});

const bin = fileURLToPath(new URL('../../bin/nuo.js', import.meta.url));

/** `nuo drain NODE args...` against the test cluster. */
const nuoDrain = (node: string, ...args: string[]) =>
  spawnSync(process.execPath, [bin, 'drain', node, ...args, '--kubeconfig', cluster.kubeconfigPath], {
    encoding: 'utf8',
  });

async function resetNode(node: string) {
  await uncordon(core, node);
  await setUnschedulable(node, false);
}

describe('drain', () => {
  test('a PDB blocks evictions, then allows them as replacements come up on other nodes', async (t) => {
    t.after(() => resetNode('node-0'));
    const ns = await namespace('pdb-flow');
    await deployOn('node-0', ns, 'web', 4);
    await pdb(ns, 'web', { maxUnavailable: 1 }, 4);
    // Replacements have nowhere to go until the PDB has refused an eviction: KWOK starts pods so fast
    // that otherwise the apiserver's own conflict retries can outlast the refusal.
    const others = NODES.filter((n) => n !== 'node-0');
    for (const n of others) await setUnschedulable(n, true);
    t.after(() => Promise.all(others.map((n) => setUnschedulable(n, false))));
    let released: Promise<unknown> | undefined;
    const events: DrainEvent[] = [];
    // Independent check of the PDB's promise while the drain runs: never fewer than 3 available.
    let minAvailable = Number.POSITIVE_INFINITY;
    const watcher = setInterval(async () => {
      const d = await apps.readNamespacedDeployment({ name: 'web', namespace: ns }).catch(() => undefined);
      if (d) minAvailable = Math.min(minAvailable, d.status?.availableReplicas ?? 0);
    }, 50);
    const result = await drainer.drain({
      node: 'node-0',
      onEvent: (e) => {
        events.push(e);
        if (e.type === 'retry') released ??= Promise.all(others.map((n) => setUnschedulable(n, false)));
      },
      options: { timeoutSeconds: 120 },
    });
    clearInterval(watcher);
    await released;

    assert.equal(result.outcome, DrainOutcome.drained, result.message);
    assert.equal(result.cordoned, true);
    const retries = events.filter((e) => e.type === 'retry');
    assert.ok(retries.length > 0, 'at least one eviction was refused by the PDB');
    assert.ok(
      retries.every(
        (e) =>
          e.type === 'retry' && e.refusedByPdb && e.reason === `blocked by PodDisruptionBudget ${ns}/web`,
      ),
      JSON.stringify(retries),
    );
    assert.ok(minAvailable >= 3, `availability never dropped below 3 (saw ${minAvailable})`);
    const pods = (await core.listNamespacedPod({ namespace: ns })).items;
    assert.equal(pods.filter((p) => p.spec?.nodeName === 'node-0').length, 0);
    await waitAvailable(apps, ns, 'web');
  });

  test('DaemonSet pods stay with ignoreDaemonSets, and refuse the drain without it', async (t) => {
    t.after(() => resetNode('node-1'));
    const ns = await namespace('ds');
    const labels = { app: 'agent' };
    await apps.createNamespacedDaemonSet({
      namespace: ns,
      body: {
        metadata: { name: 'agent' },
        spec: {
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: { containers: [{ name: 'a', image: 'registry.example/a:1' }] },
          },
        },
      },
    });
    const dsPod = await pollUntil('the DaemonSet pod on node-1 to run', async () => {
      const pods = await podsOnNode(core, 'node-1', 'app=agent');
      return pods.find((p) => p.status?.phase === 'Running');
    });

    const refused = await drainer.drain({ node: 'node-1', options: { ignoreDaemonSets: false } });
    assert.equal(refused.outcome, DrainOutcome.refused);
    assert.match(refused.message, /DaemonSet-managed \(use ignoreDaemonSets/);

    const result = await drainer.drain({ node: 'node-1', options: { ignoreDaemonSets: true } });
    assert.equal(result.outcome, DrainOutcome.drained, result.message);
    const skipped = result.pods.find((p) => p.uid === dsPod.metadata?.uid);
    assert.equal(skipped?.action, PodAction.skip);
    const after = await podsOnNode(core, 'node-1', 'app=agent');
    assert.deepEqual(
      after.map((p) => p.metadata?.uid),
      [dsPod.metadata?.uid],
      'the same DaemonSet pod is still there',
    );
    await apps.deleteNamespacedDaemonSet({ name: 'agent', namespace: ns });
  });

  test('an unmanaged pod refuses the drain without force and is evicted with it', async (t) => {
    t.after(() => resetNode('node-2'));
    const ns = await namespace('bare');
    await core.createNamespacedPod({ namespace: ns, body: barePod(ns, 'lonely', 'node-2') });
    await pollUntil('the bare pod to run', async () =>
      (await core.readNamespacedPod({ name: 'lonely', namespace: ns })).status?.phase === 'Running'
        ? true
        : undefined,
    );
    const refused = await drainer.drain({ node: 'node-2' });
    assert.equal(refused.outcome, DrainOutcome.refused);
    assert.match(refused.message, new RegExp(`${ns}/lonely: declares no controller`));
    assert.ok(await core.readNamespacedPod({ name: 'lonely', namespace: ns }), 'nothing was evicted');

    const forced = await drainer.drain({ node: 'node-2', options: { force: true } });
    assert.equal(forced.outcome, DrainOutcome.drained, forced.message);
    assert.equal((await core.listNamespacedPod({ namespace: ns })).items.length, 0);
  });

  test('an emptyDir pod refuses the drain without deleteEmptyDirData', async (t) => {
    t.after(() => resetNode('node-2'));
    const ns = await namespace('scratch');
    await onlyOn('node-2', async () => {
      const d = deployment(ns, 'cache', 1);
      const spec = d.spec?.template.spec;
      if (spec) spec.volumes = [{ name: 'tmp', emptyDir: {} }];
      await apps.createNamespacedDeployment({ namespace: ns, body: d });
      await waitAvailable(apps, ns, 'cache');
    });
    const refused = await drainer.drain({ node: 'node-2' });
    assert.equal(refused.outcome, DrainOutcome.refused);
    assert.match(refused.message, /uses emptyDir local storage/);
    const ok = await drainer.drain({ node: 'node-2', options: { deleteEmptyDirData: true } });
    assert.equal(ok.outcome, DrainOutcome.drained, ok.message);
    await apps.deleteNamespacedDeployment({ name: 'cache', namespace: ns });
    await pollUntil('the emptyDir pod to be gone', async () =>
      (await core.listNamespacedPod({ namespace: ns })).items.length === 0 ? true : undefined,
    );
  });

  test('a timeout fails naming the blocking PDB, what holds it and what would unblock it, and leaves the node cordoned for the caller', async (t) => {
    t.after(() => resetNode('node-3'));
    const ns = await namespace('stuck');
    await deployOn('node-3', ns, 'db', 2);
    await pdb(ns, 'db', { minAvailable: 2 }, 2);
    const result = await drainer.drain({ node: 'node-3', options: { timeoutSeconds: 3 } });
    assert.equal(result.outcome, DrainOutcome.timedOut);
    assert.deepEqual(Object.keys(result.blockingPdbs), [`${ns}/db`]);
    assert.equal(result.blockingPdbs[`${ns}/db`]?.length, 2);
    assert.match(result.message, new RegExp(`blocked by PodDisruptionBudget ${ns}/db \\(2 pod\\(s\\)\\)`));
    // Read when the drain gave up: the counts, why they hold, what would unblock them.
    const hold =
      `${ns}/db: 2 of 2 pod(s) healthy, 2 needed (minAvailable 2), 0 disruption(s) allowed; it allows no ` +
      'eviction even with every pod healthy: lower minAvailable (or raise maxUnavailable) or add replicas, ' +
      'or delete the pod by hand';
    assert.deepEqual(result.pdbHolds, [hold]);
    assert.ok(result.message.endsWith(`; ${hold}`), result.message);
    const node = await core.readNode({ name: 'node-3' });
    assert.equal(node.spec?.unschedulable, true, "still cordoned: uncordon is the caller's decision");
    assert.equal(node.metadata?.annotations?.[Annotations.cordonedByNuo], 'true');
    assert.equal((await podsOnNode(core, 'node-3', 'app=db')).length, 2, 'no pod was lost');
    await policy.deleteNamespacedPodDisruptionBudget({ name: 'db', namespace: ns });
  });

  test("the drain ends once the evicted pods' volumes are detached, and times out naming those still attached", async (t) => {
    t.after(() => resetNode('node-3'));
    const ns = await namespace('volumes');
    const driver = 'csi.example.com';
    await core.createPersistentVolume({
      body: {
        metadata: { name: 'pv-data' },
        spec: {
          capacity: { storage: '1Gi' },
          accessModes: ['ReadWriteOnce'],
          storageClassName: '',
          csi: { driver, volumeHandle: 'vol-1' },
        },
      },
    });
    await core.createNamespacedPersistentVolumeClaim({
      namespace: ns,
      body: {
        metadata: { name: 'data' },
        spec: {
          accessModes: ['ReadWriteOnce'],
          storageClassName: '',
          volumeName: 'pv-data',
          resources: { requests: { storage: '1Gi' } },
        },
      },
    });
    await pollUntil('the claim bound', async () =>
      (await core.readNamespacedPersistentVolumeClaim({ name: 'data', namespace: ns })).status?.phase ===
      'Bound'
        ? true
        : undefined,
    );
    const d = deployment(ns, 'db', 1);
    const spec = d.spec?.template.spec;
    if (spec) {
      spec.volumes = [{ name: 'data', persistentVolumeClaim: { claimName: 'data' } }];
      spec.nodeSelector = { 'kubernetes.io/hostname': 'node-3' };
    }
    await apps.createNamespacedDeployment({ namespace: ns, body: d });
    await waitAvailable(apps, ns, 'db');
    // What a CSI driver's attacher keeps while the volume is attached to the node.
    const attach = () =>
      storage.createVolumeAttachment({
        body: {
          metadata: { name: 'va-data' },
          spec: { attacher: driver, nodeName: 'node-3', source: { persistentVolumeName: 'pv-data' } },
        },
      });
    await attach();

    const held = await drainer.drain({ node: 'node-3', options: { timeoutSeconds: 3 } });
    assert.equal(held.outcome, DrainOutcome.timedOut, held.message);
    assert.match(
      held.message,
      /every pod gone, 1 volume\(s\) of evicted pods still attached to node-3: pv-data \(VolumeAttachment va-data\)$/,
    );
    assert.equal((await podsOnNode(core, 'node-3', 'app=db')).length, 0);

    // Back on the node, attached; drained again, the attachment goes once the pod is gone.
    await setUnschedulable('node-3', false);
    await waitAvailable(apps, ns, 'db');
    const drain = drainer.drain({ node: 'node-3', options: { timeoutSeconds: 60 } });
    await pollUntil('the pod evicted', async () =>
      (await podsOnNode(core, 'node-3', 'app=db')).length === 0 ? true : undefined,
    );
    await storage.deleteVolumeAttachment({ name: 'va-data' });
    const drained = await drain;
    assert.equal(drained.outcome, DrainOutcome.drained, drained.message);
    await apps.deleteNamespacedDeployment({ name: 'db', namespace: ns });
    await core.deleteNamespacedPersistentVolumeClaim({ name: 'data', namespace: ns });
  });

  test('a generic ephemeral volume is waited for too: its claim, deleted with the pod, is read before the eviction', async (t) => {
    t.after(() => resetNode('node-3'));
    const ns = await namespace('ephemeral');
    const driver = 'csi.example.com';
    await core.createPersistentVolume({
      body: {
        metadata: { name: 'pv-scratch' },
        spec: {
          capacity: { storage: '1Gi' },
          accessModes: ['ReadWriteOnce'],
          storageClassName: '',
          csi: { driver, volumeHandle: 'vol-scratch' },
        },
      },
    });
    t.after(() => core.deletePersistentVolume({ name: 'pv-scratch' }).catch(() => {}));
    const d = deployment(ns, 'cache', 1);
    const spec = d.spec?.template.spec;
    if (spec) {
      // The ephemeral volume controller makes the claim <pod>-scratch, bound to pv-scratch by name.
      spec.volumes = [
        {
          name: 'scratch',
          ephemeral: {
            volumeClaimTemplate: {
              spec: {
                accessModes: ['ReadWriteOnce'],
                storageClassName: '',
                volumeName: 'pv-scratch',
                resources: { requests: { storage: '1Gi' } },
              },
            },
          },
        },
      ];
      spec.nodeSelector = { 'kubernetes.io/hostname': 'node-3' };
    }
    await apps.createNamespacedDeployment({ namespace: ns, body: d });
    await waitAvailable(apps, ns, 'cache');
    const [pod] = await podsOnNode(core, 'node-3', 'app=cache');
    const claim = `${pod?.metadata?.name}-scratch`;
    await pollUntil(`the ephemeral claim ${claim} bound`, async () =>
      (await core.readNamespacedPersistentVolumeClaim({ name: claim, namespace: ns })).status?.phase ===
      'Bound'
        ? true
        : undefined,
    );
    await storage.createVolumeAttachment({
      body: {
        metadata: { name: 'va-scratch' },
        spec: { attacher: driver, nodeName: 'node-3', source: { persistentVolumeName: 'pv-scratch' } },
      },
    });
    t.after(() => storage.deleteVolumeAttachment({ name: 'va-scratch' }).catch(() => {}));

    const held = await drainer.drain({ node: 'node-3', options: { timeoutSeconds: 5 } });
    assert.equal(held.outcome, DrainOutcome.timedOut, held.message);
    assert.match(
      held.message,
      /every pod gone, 1 volume\(s\) of evicted pods still attached to node-3: pv-scratch \(VolumeAttachment va-scratch\)$/,
    );
    // The claim goes with its pod (the garbage collector deletes it): only its reading before the
    // eviction named the volume.
    await pollUntil(`the claim ${claim} deleted with its pod`, () =>
      core.readNamespacedPersistentVolumeClaim({ name: claim, namespace: ns }).then(
        (pvc) => (pvc.metadata?.deletionTimestamp ? true : undefined),
        (err: unknown) => (statusCode(err) === 404 ? true : undefined),
      ),
    );
    await apps.deleteNamespacedDeployment({ name: 'cache', namespace: ns });
  });

  test('a pod that asks not to be disrupted while a PDB holds its eviction is not evicted once the PDB allows: the drain ends held', async (t) => {
    t.after(() => resetNode('node-1'));
    const ns = await namespace('dnd-midway');
    await deployOn('node-1', ns, 'db', 1);
    await pdb(ns, 'db', { minAvailable: 1 }, 1);
    const [before] = await podsOnNode(core, 'node-1', 'app=db');
    const name = before?.metadata?.name ?? '';
    let asked: Promise<unknown> | undefined;
    const result = await drainer.drain({
      node: 'node-1',
      options: { podSelector: 'app=db', timeoutSeconds: 60 },
      onEvent: (e) => {
        // The PDB refused: the pod asks not to be disrupted, then the PDB goes (it would allow the retry).
        if (e.type === 'retry' && !asked)
          asked = core
            .patchNamespacedPod(
              {
                name,
                namespace: ns,
                body: { metadata: { annotations: { [PodAnnotations.doNotDisrupt]: 'true' } } },
              },
              mergePatch,
            )
            .then(() => policy.deleteNamespacedPodDisruptionBudget({ name: 'db', namespace: ns }));
      },
    });
    await asked;
    assert.equal(result.outcome, DrainOutcome.held, result.message);
    assert.match(
      result.message,
      new RegExp(`${ns}/${name}: pod ${ns}/${name} has nuo.dev/do-not-disrupt="true"`),
    );
    const [after] = await podsOnNode(core, 'node-1', 'app=db');
    assert.equal(after?.metadata?.uid, before?.metadata?.uid, 'the pod still runs');
    assert.equal(after?.metadata?.deletionTimestamp, undefined, 'and was not evicted');
    await apps.deleteNamespacedDeployment({ name: 'db', namespace: ns });
  });

  test('pods leave in tiers of priority, lowest first: a tier is gone before the next is evicted', async (t) => {
    t.after(() => resetNode('node-2'));
    const ns = await namespace('tiers');
    for (const [name, value] of [
      ['tier-low', -100],
      ['tier-high', 1_000_000],
    ] as const)
      await scheduling.createPriorityClass({ body: { metadata: { name }, value } });
    t.after(async () => {
      for (const name of ['tier-low', 'tier-high']) await scheduling.deletePriorityClass({ name });
    });
    await onlyOn('node-2', async () => {
      for (const [name, priorityClassName] of [
        ['batch', 'tier-low'],
        ['web', undefined],
        ['infra', 'tier-high'],
      ] as const) {
        const d = deployment(ns, name, 2);
        const spec = d.spec?.template.spec;
        if (spec && priorityClassName) spec.priorityClassName = priorityClassName;
        await apps.createNamespacedDeployment({ namespace: ns, body: d });
      }
      for (const name of ['batch', 'web', 'infra']) await waitAvailable(apps, ns, name);
    });
    const order: string[] = [];
    const result = await drainer.drain({
      node: 'node-2',
      options: { podSelector: 'app in (batch,web,infra)' },
      onEvent: (e) => {
        if (e.type === 'evicted' || e.type === 'gone') order.push(`${e.type} ${e.pod.name.split('-')[0]}`);
      },
    });
    assert.equal(result.outcome, DrainOutcome.drained, result.message);
    const last = (what: string) => order.lastIndexOf(what);
    const first = (what: string) => order.indexOf(what);
    assert.equal(order.length, 12, order.join(', '));
    assert.ok(last('gone batch') < first('evicted web'), order.join(', '));
    assert.ok(last('gone web') < first('evicted infra'), order.join(', '));
    for (const name of ['batch', 'web', 'infra'])
      await apps.deleteNamespacedDeployment({ name, namespace: ns });
  });

  test('skipWaitForDeleteTimeout: an evicted pod a finalizer holds stops being waited for once its deletion is older', async (t) => {
    t.after(() => resetNode('node-1'));
    const ns = await namespace('finalizer');
    await deployOn('node-1', ns, 'held', 1);
    const [held] = await podsOnNode(core, 'node-1', 'app=held');
    const name = held?.metadata?.name ?? '';
    const finalizer = { metadata: { finalizers: ['test.nuo.dev/hold'] } };
    await core.patchNamespacedPod({ name, namespace: ns, body: finalizer }, mergePatch);
    t.after(async () => {
      await core.patchNamespacedPod(
        { name, namespace: ns, body: { metadata: { finalizers: null } } },
        mergePatch,
      );
      await apps.deleteNamespacedDeployment({ name: 'held', namespace: ns });
    });
    const options = { podSelector: 'app=held', gracePeriodSeconds: 1 };
    const skips: DrainEvent[] = [];
    const result = await drainer.drain({
      node: 'node-1',
      options: { ...options, skipWaitForDeleteTimeoutSeconds: 2, timeoutSeconds: 60 },
      onEvent: (e) => {
        if (e.type === 'skip') skips.push(e);
      },
    });
    assert.equal(result.outcome, DrainOutcome.drained, result.message);
    const state = result.pods.find((p) => p.name === name);
    assert.equal(state?.phase, 'skipped', JSON.stringify(result.pods));
    assert.match(state?.reason ?? '', /^terminating for \d+s, longer than skipWaitForDeleteTimeout \(2s\)$/);
    assert.equal(skips.length, 1, 'the skip is reported once');
    const stuck = await core.readNamespacedPod({ name, namespace: ns });
    assert.ok(stuck.metadata?.deletionTimestamp, 'the pod was evicted and is still terminating');

    // Without the setting the same pod keeps the drain waiting until it times out.
    const waited = await drainer.drain({ node: 'node-1', options: { ...options, timeoutSeconds: 4 } });
    assert.equal(waited.outcome, DrainOutcome.timedOut, waited.message);
    assert.match(waited.message, /1 pod\(s\) not yet terminated/);
  });

  test('waitFor: a Job pod it matches keeps running while the rest drains, and the drain ends once it completes', async (t) => {
    t.after(() => resetNode('node-0'));
    const ns = await namespace('wait-done');
    await deployOn('node-0', ns, 'front', 1);
    const job = await jobOn('node-0', ns, 'etl', '12s');
    const events: DrainEvent[] = [];
    const started = Date.now();
    const result = await drainer.drain({
      node: 'node-0',
      options: { podSelector: 'app in (front,etl)', timeoutSeconds: 60, waitFor: [waitRule(60)] },
      onEvent: (e) => events.push(e),
    });
    assert.equal(result.outcome, DrainOutcome.drained, result.message);
    const evicted = events.flatMap((e) => (e.type === 'evicted' ? [e.pod.name] : []));
    assert.equal(evicted.length, 1, `only the front pod was evicted: ${evicted.join(', ')}`);
    assert.match(evicted[0] ?? '', /^front-/);
    const waiting = events.find((e) => e.type === 'waiting');
    assert.ok(waiting?.type === 'waiting', 'the drain said what it waits for');
    const until = new Date(started + 60_000).toISOString().slice(0, 16);
    assert.match(
      waiting.holds.join('; '),
      new RegExp(
        `^pod ${ns}/${job.name} \\(drain\\.waitFor\\[0\\]\\) to finish until ${until}.*, then evicted$`,
      ),
    );
    assert.equal(waiting.blocked, false);
    assert.equal(result.pods.find((p) => p.uid === job.uid)?.phase, 'finished');
    const after = await core.readNamespacedPod({ name: job.name, namespace: ns });
    assert.equal(after.metadata?.uid, job.uid, 'the same pod, never evicted');
    assert.equal(after.status?.phase, 'Succeeded');
    assert.ok(Date.now() - started >= 8000, 'the drain waited for the Job to complete');
  });

  test('waitFor: a pod still running at its maxWait is evicted under Evict, and fails the drain untouched under Fail', async (t) => {
    t.after(() => resetNode('node-0'));
    const ns = await namespace('wait-over');
    const job = await jobOn('node-0', ns, 'etl', '1h');
    const options = { podSelector: 'app=etl', timeoutSeconds: 60 };
    const failed = await drainer.drain({
      node: 'node-0',
      options: { ...options, waitFor: [waitRule(2, 'Fail')] },
    });
    assert.equal(failed.outcome, DrainOutcome.waitExpired, failed.message);
    assert.match(
      failed.message,
      new RegExp(
        `^wait-expired after [\\d.]+s: 1 pod\\(s\\) waited for still running when their wait ended, with afterMaxWait Fail: ${ns}/${job.name} \\(drain\\.waitFor\\[0\\]\\); they were not evicted$`,
      ),
    );
    const still = await core.readNamespacedPod({ name: job.name, namespace: ns });
    assert.equal(still.metadata?.uid, job.uid);
    assert.equal(still.metadata?.deletionTimestamp, undefined, 'not evicted');
    // The same through nuo drain's flags, which say what they wait for while they wait.
    const cli = nuoDrain(
      'node-0',
      '--pod-selector',
      'app=etl',
      '--wait-for',
      'app=etl',
      '--max-wait',
      '2s',
      '--after-max-wait',
      'fail',
    );
    assert.equal(cli.status, 1, cli.stderr);
    assert.match(
      cli.stderr,
      new RegExp(
        `^waiting on pod ${ns}/${job.name} \\(--wait-for app=etl\\) to finish until \\S+Z, then the drain fails$`,
        'm',
      ),
    );
    assert.match(cli.stderr, /unable to drain node "node-0": wait-expired after/);
    const untouched = await core.readNamespacedPod({ name: job.name, namespace: ns });
    assert.equal(untouched.metadata?.deletionTimestamp, undefined, 'not evicted by nuo drain either');

    const events: DrainEvent[] = [];
    const evicted = await drainer.drain({
      node: 'node-0',
      options: { ...options, waitFor: [waitRule(2)] },
      onEvent: (e) => events.push(e),
    });
    assert.equal(evicted.outcome, DrainOutcome.drained, evicted.message);
    const released = events.find((e) => e.type === 'released');
    assert.ok(released?.type === 'released' && released.pod.uid === job.uid, JSON.stringify(events));
    assert.equal(released.reason, 'still running when its wait (drain.waitFor[0]) ended: evicted');
    assert.ok(events.some((e) => e.type === 'evicted' && e.pod.uid === job.uid));
    assert.equal(evicted.pods.find((p) => p.uid === job.uid)?.phase, 'gone');
    assert.ok(evicted.elapsedMs >= 2000, `waited out the maxWait first (${evicted.elapsedMs} ms)`);
    await batch.deleteNamespacedJob({ name: 'etl', namespace: ns, propagationPolicy: 'Background' });
  });

  test('an AbortSignal stops the drain cleanly', async (t) => {
    t.after(() => resetNode('node-3'));
    const ns = await namespace('abort');
    await deployOn('node-3', ns, 'q', 1);
    await pdb(ns, 'q', { minAvailable: 1 }, 1);
    const controller = new AbortController();
    const draining = drainer.drain({
      node: 'node-3',
      signal: controller.signal,
      onEvent: (e) => {
        if (e.type === 'retry') controller.abort();
      },
    });
    const result = await draining;
    assert.equal(result.outcome, DrainOutcome.aborted);
    assert.deepEqual(Object.keys(result.blockingPdbs), [`${ns}/q`]);
    await policy.deleteNamespacedPodDisruptionBudget({ name: 'q', namespace: ns });
  });

  test("an admin's cordon is never recorded as nuo's nor removed", async (t) => {
    t.after(() => setUnschedulable('node-1', false));
    await setUnschedulable('node-1', true);
    const result = await drainer.drain({ node: 'node-1' });
    assert.equal(result.outcome, DrainOutcome.drained, result.message);
    assert.equal(result.cordoned, false);
    const node = await core.readNode({ name: 'node-1' });
    assert.equal(node.metadata?.annotations?.[Annotations.cordonedByNuo], undefined);
    assert.equal(await uncordon(core, 'node-1'), UncordonResult.notOurs);
    assert.equal((await core.readNode({ name: 'node-1' })).spec?.unschedulable, true);
  });

  test("the end of an attempt and the undoing of its cordon are one write; an admin's cordon stays", async (t) => {
    t.after(() => setUnschedulable('node-2', false));
    const kept = { key: 'example.com/kept', effect: 'PreferNoSchedule' };
    const also = () => ({ annotations: { 'example.com/attempt': 'over' }, taints: [kept] });
    await cordon(core, 'node-2');
    // ours.node is the answer to the one PATCH: both changes in it.
    const ours = await uncordonWith(core, 'node-2', also);
    assert.equal(ours.result, UncordonResult.uncordoned);
    assert.ok(!ours.node.spec?.unschedulable);
    assert.equal(ours.node.metadata?.annotations?.[Annotations.cordonedByNuo], undefined);
    assert.equal(ours.node.metadata?.annotations?.['example.com/attempt'], 'over');
    assert.deepEqual(
      ours.node.spec?.taints?.map((t) => t.key),
      [kept.key],
      'the taints given are written whole in the same write',
    );

    await setUnschedulable('node-2', true);
    const admin = await uncordonWith(core, 'node-2', () => ({
      annotations: { 'example.com/attempt': null },
    }));
    assert.equal(admin.result, UncordonResult.notOurs);
    assert.equal(admin.node.spec?.unschedulable, true, "an admin's cordon is not undone");
    assert.equal(
      admin.node.metadata?.annotations?.['example.com/attempt'],
      undefined,
      'but the rest is written',
    );
  });

  test('a known copy of the node saves the read when current, and a stale one is read again', async (t) => {
    t.after(() => setUnschedulable('node-2', false));
    // Reads go through this client, counted; writes too: the server is the real one.
    let reads = 0;
    const counting = new Proxy(core, {
      get(target, key, receiver) {
        const value = Reflect.get(target, key, receiver);
        if (key !== 'readNode') return typeof value === 'function' ? value.bind(target) : value;
        return (...args: Parameters<CoreV1Api['readNode']>) => {
          reads++;
          return target.readNode(...args);
        };
      },
    });
    const also = () => ({ annotations: { 'example.com/attempt': 'over' } });

    // A copy read just before is current unless someone writes the node in between (the controller
    // manager untainting it after the last test's uncordon, say): hence a few tries, each on a new copy.
    let fresh: Awaited<ReturnType<typeof uncordonWith>> | undefined;
    for (let attempt = 1; attempt <= 3 && (!fresh || reads > 0); attempt++) {
      const current = await core.readNode({ name: 'node-2' });
      reads = 0;
      fresh = await uncordonWith(counting, 'node-2', also, current);
    }
    assert.equal(fresh?.result, UncordonResult.notCordoned);
    assert.equal(reads, 0, 'a current copy is written on without a read');
    assert.equal(fresh?.node.metadata?.annotations?.['example.com/attempt'], 'over', 'and written');

    // Stale: cordoned since the copy was taken (and the copy says not cordoned).
    const stale = fresh?.node;
    await cordon(core, 'node-2');
    reads = 0;
    const again = await uncordonWith(counting, 'node-2', undefined, stale);
    assert.equal(again.result, UncordonResult.uncordoned, 'decided on the node as read, not on the copy');
    assert.ok(reads >= 1, 'a copy that decides to write nothing is confirmed on a read');
    assert.equal((await core.readNode({ name: 'node-2' })).spec?.unschedulable, undefined);

    const before = (await cordon(core, 'node-2')).node;
    await core.patchNode(
      { name: 'node-2', body: { metadata: { annotations: { 'example.com/admin': 'meanwhile' } } } },
      mergePatch,
    );
    reads = 0;
    const conflicted = await uncordonWith(counting, 'node-2', also, before);
    assert.equal(conflicted.result, UncordonResult.uncordoned);
    assert.ok(reads >= 1, 'a stale copy is a 409, then a read');
    assert.equal(conflicted.node.metadata?.annotations?.['example.com/admin'], 'meanwhile');
    assert.equal(conflicted.node.metadata?.annotations?.['example.com/attempt'], 'over');
  });

  test('a dry run cordons nothing and evicts nothing', async () => {
    const ns = await namespace('dry');
    await deployOn('node-0', ns, 'api', 3);
    const result = await drainer.drain({ node: 'node-0', dryRun: true });
    assert.equal(result.outcome, DrainOutcome.drained);
    assert.equal(
      result.plan.decisions.filter((d) => d.action === PodAction.evict && d.namespace === ns).length,
      3,
    );
    assert.notEqual((await core.readNode({ name: 'node-0' })).spec?.unschedulable, true);
    assert.equal((await podsOnNode(core, 'node-0', 'app=api')).length, 3);
    await apps.deleteNamespacedDeployment({ name: 'api', namespace: ns });
  });

  test('a caller that cordoned the node in a write of its own: the drain skips its cordon', async (t) => {
    t.after(() => resetNode('node-1'));
    const ns = await namespace('precordoned');
    await deployOn('node-1', ns, 'solo', 1);
    const [pod] = await podsOnNode(core, 'node-1', 'app=solo');
    const events: DrainEvent[] = [];
    const result = await drainer.drain({ node: 'node-1', cordoned: true, onEvent: (e) => events.push(e) });
    assert.equal(result.outcome, DrainOutcome.drained, result.message);
    assert.equal(result.cordoned, false);
    assert.equal(events.filter((e) => e.type === 'cordoned').length, 0, 'the drain did not cordon');
    assert.notEqual((await core.readNode({ name: 'node-1' })).spec?.unschedulable, true, 'so nothing did');
    const gone = result.pods.find((p) => p.uid === pod?.metadata?.uid);
    assert.equal(gone?.phase, 'gone', 'and it still evicted the pod');
    await apps.deleteNamespacedDeployment({ name: 'solo', namespace: ns });
  });

  test('110 pods on one node drain in parallel, within the concurrency bound', async (t) => {
    t.after(() => resetNode('node-3'));
    const ns = await namespace('many');
    const existing = (await podsOnNode(core, 'node-3')).filter((p) => !p.metadata?.deletionTimestamp).length;
    const replicas = 110 - existing;
    await deployOn('node-3', ns, 'fleet', replicas);
    assert.equal((await podsOnNode(core, 'node-3')).length, 110, 'the node is full');
    const result = await drainer.drain({ node: 'node-3', options: { concurrency: 40 } });
    assert.equal(result.outcome, DrainOutcome.drained, result.message);
    assert.equal(result.pods.filter((p) => p.action === PodAction.evict).length, 110);
    assert.ok(result.maxInFlight > 1, `evictions overlapped (max in flight ${result.maxInFlight})`);
    assert.ok(result.maxInFlight <= 40, `never more than 40 in flight (saw ${result.maxInFlight})`);
    assert.equal((await podsOnNode(core, 'node-3')).length, 0);
  });
});

describe('nuo drain / nuo uncordon', () => {
  const bin = fileURLToPath(new URL('../../bin/nuo.js', import.meta.url));
  const nuo = (...args: string[]) =>
    spawnSync(process.execPath, [bin, ...args, '--kubeconfig', cluster.kubeconfigPath], { encoding: 'utf8' });

  test('drains with kubectl-like output and undoes its own cordon', async () => {
    const ns = await namespace('cli');
    await deployOn('node-2', ns, 'svc', 2);
    const drained = nuo('drain', 'node-2', '--ignore-daemonsets', '--timeout', '1m');
    assert.equal(drained.status, 0, drained.stderr);
    assert.match(drained.stdout, /^node\/node-2 cordoned$/m);
    assert.match(drained.stdout, new RegExp(`^evicting pod ${ns}/svc-`, 'm'));
    assert.match(drained.stdout, /^pod\/svc-\S+ evicted$/m);
    assert.match(drained.stdout, /^node\/node-2 drained$/m);
    const uncordoned = nuo('uncordon', 'node-2');
    assert.equal(uncordoned.status, 0, uncordoned.stderr);
    assert.match(uncordoned.stdout, /node\/node-2 uncordoned/);
    assert.notEqual((await core.readNode({ name: 'node-2' })).spec?.unschedulable, true);
  });

  test('-l drains every node its selector matches, all cordoned before the first drain, as kubectl does', async (t) => {
    const picked = ['node-0', 'node-1'];
    t.after(async () => {
      for (const n of picked) {
        await resetNode(n);
        await core.patchNode({ name: n, body: { metadata: { labels: { 'drain-me': null } } } }, mergePatch);
      }
    });
    for (const n of picked)
      await core.patchNode({ name: n, body: { metadata: { labels: { 'drain-me': 'yes' } } } }, mergePatch);
    const ns = await namespace('cli-many');
    await deployOn('node-1', ns, 'app', 2);
    const drained = nuo(
      'drain',
      '-l',
      'drain-me=yes',
      '--ignore-daemonsets',
      '--chunk-size',
      '1',
      '--timeout',
      '1m',
    );
    assert.equal(drained.status, 0, drained.stderr);
    const lines = drained.stdout.split('\n');
    const at = (line: string) => lines.indexOf(line);
    assert.ok(at('node/node-1 cordoned') >= 0 && at('node/node-0 cordoned') >= 0, drained.stdout);
    assert.ok(at('node/node-1 cordoned') < at('node/node-0 drained'), 'node-1 cordoned before node-0 drains');
    assert.ok(at('node/node-0 drained') < at('node/node-1 drained'), drained.stdout);
    assert.equal((await podsOnNode(core, 'node-1', 'app=app')).length, 0);
    const none = nuo('drain', '-l', 'drain-me=nobody');
    assert.equal(none.status, 1);
    assert.match(none.stderr, /no node matches the selector "drain-me=nobody"/);
  });

  test('fails clearly for an unknown node and for bad flags, changing nothing', () => {
    const missing = nuo('drain', 'no-such-node');
    assert.equal(missing.status, 1);
    assert.match(missing.stderr, /Error from server \(NotFound\): nodes "no-such-node" not found/);
    const badTimeout = nuo('drain', 'node-0', '--timeout', 'soon');
    assert.equal(badTimeout.status, 2);
    assert.match(badTimeout.stderr, /--timeout: invalid duration "soon"/);
    const server = nuo('drain', 'node-0', '--dry-run=server');
    assert.equal(server.status, 2);
    assert.match(server.stderr, /--dry-run=server is not supported/);
    const unbounded = nuo('drain', 'node-0', '--wait-for', 'app=etl');
    assert.equal(unbounded.status, 2);
    assert.match(unbounded.stderr, /--wait-for needs --max-wait DURATION/);
    const everything = nuo('drain', 'node-0', '--wait-for', '', '--max-wait', '5m');
    assert.equal(everything.status, 2);
    assert.match(everything.stderr, /an empty selector would wait for every pod/);
    const after = nuo(
      'drain',
      'node-0',
      '--wait-for',
      'app=etl',
      '--max-wait',
      '5m',
      '--after-max-wait',
      'kill',
    );
    assert.equal(after.status, 2);
    assert.match(after.stderr, /--after-max-wait must be Evict or Fail, got "kill"/);
  });

  test('refuses to uncordon an admin cordon', async (t) => {
    t.after(() => setUnschedulable('node-0', false));
    await setUnschedulable('node-0', true);
    const r = nuo('uncordon', 'node-0');
    assert.equal(r.status, 1);
    assert.match(r.stderr, /cordoned by someone else, not nuo: leaving it cordoned/);
    assert.equal((await core.readNode({ name: 'node-0' })).spec?.unschedulable, true);
  });

  test('reports a missing kubeconfig and an unreachable API server instead of crashing', async () => {
    const run = (kubeconfig: string) =>
      spawnSync(process.execPath, [bin, 'uncordon', 'node-0', '--kubeconfig', kubeconfig], {
        encoding: 'utf8',
      });
    const missing = run('/nonexistent');
    assert.equal(missing.status, 2);
    assert.match(missing.stderr, /kubeconfig \/nonexistent does not exist/);
    const dead = join(cluster.dir, 'unreachable.kubeconfig');
    await writeFile(
      dead,
      (await readFile(cluster.kubeconfigPath, 'utf8')).replace(cluster.server, 'https://127.0.0.1:1'),
    );
    const unreachable = run(dead);
    assert.equal(unreachable.status, 1);
    assert.match(unreachable.stderr, /cannot reach the Kubernetes API at https:\/\/127\.0\.0\.1:1/);
  });
});
