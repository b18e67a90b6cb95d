/**
 * Proves the local control plane is real Kubernetes: the scheduler places pods, cordons are honoured,
 * the disruption controller backs PDBs with 429s on eviction, optimistic concurrency returns 409,
 * RBAC refuses a ServiceAccount what it was not granted, and ValidatingAdmissionPolicy is enforced.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import {
  AdmissionregistrationV1Api,
  AppsV1Api,
  CoreV1Api,
  PolicyV1Api,
  RbacAuthorizationV1Api,
  type V1Pod,
} from '@kubernetes/client-node';
import { mergePatch, strategicMergePatch } from '../../src/kube/patch.ts';
import { KWOK_CUSTOM_STATUS } from '../../src/sim/cluster/cluster.ts';
import { isReady } from '../../src/sim/cluster/nodes.ts';
import { deployment, waitAvailable } from '../../src/sim/workload.ts';
import { pollUntil } from '../../src/util/poll.ts';
import { setNodeReady, statusOf, useCluster } from './support.ts';

const cluster = await useCluster({ nodes: 3, zones: 3 });
const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
const apps = cluster.kubeconfig.makeApiClient(AppsV1Api);
const policy = cluster.kubeconfig.makeApiClient(PolicyV1Api);

async function namespace(name: string): Promise<string> {
  await core.createNamespace({ body: { metadata: { name } } });
  await pollUntil(`default ServiceAccount in ${name}`, () =>
    core.readNamespacedServiceAccount({ name: 'default', namespace: name }).then(() => true),
  );
  return name;
}

async function podsOf(ns: string, app: string): Promise<V1Pod[]> {
  return (await core.listNamespacedPod({ namespace: ns, labelSelector: `app=${app}` })).items;
}

describe('nodes', () => {
  test('are Ready, labelled with zone and hostname, with room for 110 pods', async () => {
    const nodes = (await core.listNode()).items;
    assert.equal(nodes.length, 3);
    for (const node of nodes) {
      assert.ok(isReady(node), `${node.metadata?.name} is Ready`);
      assert.equal(node.metadata?.labels?.['kubernetes.io/hostname'], node.metadata?.name);
      assert.equal(node.status?.allocatable?.pods, '110');
    }
    const zones = new Set(nodes.map((n) => n.metadata?.labels?.['topology.kubernetes.io/zone']));
    assert.deepEqual([...zones].sort(), ['zone-a', 'zone-b', 'zone-c']);
  });
});

describe('scheduling', () => {
  test('a Deployment is placed by kube-scheduler and Running on KWOK nodes', async () => {
    const ns = await namespace('sched');
    await apps.createNamespacedDeployment({ namespace: ns, body: deployment(ns, 'web', 6) });
    await waitAvailable(apps, ns, 'web');
    const pods = await podsOf(ns, 'web');
    assert.equal(pods.length, 6);
    const nodeNames = new Set((await core.listNode()).items.map((n) => n.metadata?.name));
    for (const pod of pods) {
      assert.equal(pod.status?.phase, 'Running');
      assert.ok(nodeNames.has(pod.spec?.nodeName), `${pod.metadata?.name} bound to a KWOK node`);
      const scheduled = pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
      assert.equal(scheduled?.status, 'True');
    }
    // Topology spread over three zones puts two pods in each.
    const perNode = new Map<string, number>();
    for (const pod of pods)
      perNode.set(pod.spec?.nodeName ?? '', (perNode.get(pod.spec?.nodeName ?? '') ?? 0) + 1);
    assert.deepEqual([...perNode.values()].sort(), [2, 2, 2]);
  });

  test('a cordoned node receives no new pods', async () => {
    const ns = await namespace('cordon');
    const cordoned = 'node-0';
    await core.patchNode({ name: cordoned, body: { spec: { unschedulable: true } } }, mergePatch);
    await apps.createNamespacedDeployment({ namespace: ns, body: deployment(ns, 'api', 8) });
    await waitAvailable(apps, ns, 'api');
    const pods = await podsOf(ns, 'api');
    assert.equal(pods.length, 8);
    assert.ok(
      pods.every((p) => p.spec?.nodeName !== cordoned),
      'no pod on the cordoned node',
    );
    await core.patchNode({ name: cordoned, body: { spec: { unschedulable: false } } }, mergePatch);
  });
});

describe('eviction', () => {
  test('a PDB allowing no disruption answers 429, and eviction succeeds once replicas are added', async () => {
    const ns = await namespace('evict');
    await apps.createNamespacedDeployment({ namespace: ns, body: deployment(ns, 'db', 1) });
    await policy.createNamespacedPodDisruptionBudget({
      namespace: ns,
      body: { metadata: { name: 'db' }, spec: { minAvailable: 1, selector: { matchLabels: { app: 'db' } } } },
    });
    await waitAvailable(apps, ns, 'db');
    await pollUntil('the disruption controller to observe the PDB', async () => {
      const pdb = await policy.readNamespacedPodDisruptionBudget({ name: 'db', namespace: ns });
      return pdb.status?.observedGeneration === 1 && pdb.status.currentHealthy === 1 ? true : undefined;
    });
    const [victim] = await podsOf(ns, 'db');
    const name = victim?.metadata?.name ?? '';
    const evict = () =>
      core.createNamespacedPodEviction({ name, namespace: ns, body: { metadata: { name, namespace: ns } } });
    assert.equal(await statusOf(evict()), 429);

    await apps.patchNamespacedDeploymentScale(
      { name: 'db', namespace: ns, body: { spec: { replicas: 2 } } },
      mergePatch,
    );
    await pollUntil('the PDB to allow one disruption', async () => {
      const pdb = await policy.readNamespacedPodDisruptionBudget({ name: 'db', namespace: ns });
      return pdb.status?.disruptionsAllowed === 1 ? true : undefined;
    });
    await evict();
    await pollUntil('the evicted pod to be gone', async () => {
      const pods = await podsOf(ns, 'db');
      return pods.some((p) => p.metadata?.uid === victim?.metadata?.uid) ? undefined : true;
    });
  });
});

describe('kubelet status sync (the harness plays it; KWOK does not)', () => {
  const readiness = async (ns: string, name: string) =>
    (await core.readNamespacedPodStatus({ name, namespace: ns })).status?.conditions?.find(
      (c) => c.type === 'Ready',
    )?.status;
  // As the node-lifecycle controller's MarkPodsNotReady does: only the Ready condition, set False.
  const markNotReady = (ns: string, name: string) =>
    core.patchNamespacedPodStatus(
      { name, namespace: ns, body: { status: { conditions: [{ type: 'Ready', status: 'False' }] } } },
      strategicMergePatch,
    );
  const nodeReady = (name: string, ready: boolean) =>
    setNodeReady(core, name, ready, ready ? undefined : 'Rebooting');

  test('a running pod marked NotReady is Ready again once its node is Ready', async (t) => {
    const ns = await namespace('kubelet-sync');
    await apps.createNamespacedDeployment({ namespace: ns, body: deployment(ns, 'web', 1) });
    await waitAvailable(apps, ns, 'web');
    const [pod] = await podsOf(ns, 'web');
    const name = pod?.metadata?.name ?? '';
    const node = pod?.spec?.nodeName ?? '';

    // On a Ready node: repaired, as a kubelet's next status sync would.
    await markNotReady(ns, name);
    await pollUntil('the pod on a Ready node to be Ready again', async () =>
      (await readiness(ns, name)) === 'True' ? true : undefined,
    );
    await waitAvailable(apps, ns, 'web');

    // On a node that is down (its status held as a rebooting host holds it), then back.
    t.after(async () => {
      await nodeReady(node, true);
      await core.patchNode(
        { name: node, body: { metadata: { annotations: { [KWOK_CUSTOM_STATUS]: null } } } },
        mergePatch,
      );
    });
    await core.patchNode(
      { name: node, body: { metadata: { annotations: { [KWOK_CUSTOM_STATUS]: 'custom' } } } },
      mergePatch,
    );
    await nodeReady(node, false);
    await markNotReady(ns, name);
    await nodeReady(node, true);
    await core.patchNode(
      { name: node, body: { metadata: { annotations: { [KWOK_CUSTOM_STATUS]: null } } } },
      mergePatch,
    );
    await pollUntil('the pod to be Ready again after its node came back', async () =>
      (await readiness(ns, name)) === 'True' ? true : undefined,
    );
    const log = readFileSync(join(cluster.dir, 'logs', 'pod-readiness.log'), 'utf8');
    assert.match(log, new RegExp(`${ns}/${name} on ${node}: Ready again`));
  });
});

describe('optimistic concurrency', () => {
  test('a write with a stale resourceVersion answers 409', async () => {
    const created = await core.createNamespacedConfigMap({
      namespace: 'default',
      body: { metadata: { name: 'occ' }, data: { v: '1' } },
    });
    await core.replaceNamespacedConfigMap({
      name: 'occ',
      namespace: 'default',
      body: { ...created, data: { v: '2' } },
    });
    const stale = { ...created, data: { v: '3' } };
    assert.equal(
      await statusOf(core.replaceNamespacedConfigMap({ name: 'occ', namespace: 'default', body: stale })),
      409,
    );
    const now = await core.readNamespacedConfigMap({ name: 'occ', namespace: 'default' });
    assert.equal(now.data?.v, '2');
  });
});

describe('RBAC', () => {
  test('a ServiceAccount kubeconfig gets what its Role grants and is refused the rest', async () => {
    const ns = await namespace('rbac');
    const rbac = cluster.kubeconfig.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({
      namespace: ns,
      body: {
        metadata: { name: 'pod-reader' },
        rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] }],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: ns,
      body: {
        metadata: { name: 'pod-reader' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'pod-reader' },
        subjects: [{ kind: 'ServiceAccount', name: 'reader', namespace: ns }],
      },
    });
    const { kubeconfig } = await cluster.serviceAccountKubeconfig(ns, 'reader');
    const asReader = kubeconfig.makeApiClient(CoreV1Api);
    const pods = await asReader.listNamespacedPod({ namespace: ns });
    assert.deepEqual(pods.items, []);
    assert.equal(await statusOf(asReader.listNode()), 403);
    assert.equal(await statusOf(asReader.listNamespacedPod({ namespace: 'default' })), 403);
    assert.equal(await statusOf(asReader.deleteCollectionNamespacedPod({ namespace: ns })), 403);
    assert.equal(
      await statusOf(
        asReader.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'x' } } }),
      ),
      403,
    );
  });
});

describe('admission', () => {
  test('a ValidatingAdmissionPolicy is enforced', async () => {
    const admission = cluster.kubeconfig.makeApiClient(AdmissionregistrationV1Api);
    await admission.createValidatingAdmissionPolicy({
      body: {
        metadata: { name: 'no-forbidden-label' },
        spec: {
          failurePolicy: 'Fail',
          matchConstraints: {
            resourceRules: [
              { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] },
            ],
          },
          validations: [
            {
              expression: "!has(object.metadata.labels) || !('forbidden' in object.metadata.labels)",
              message: 'the forbidden label is not allowed',
            },
          ],
        },
      },
    });
    await admission.createValidatingAdmissionPolicyBinding({
      body: {
        metadata: { name: 'no-forbidden-label' },
        spec: { policyName: 'no-forbidden-label', validationActions: ['Deny'] },
      },
    });
    let n = 0;
    const status = await pollUntil('the policy to take effect', async () => {
      const code = await core
        .createNamespacedConfigMap({
          namespace: 'default',
          body: { metadata: { name: `vap-${n++}`, labels: { forbidden: 'yes' } } },
        })
        .then(() => 201)
        .catch((err: { code?: number }) => err.code);
      return code === 201 ? undefined : code;
    });
    assert.equal(status, 422);
  });
});
