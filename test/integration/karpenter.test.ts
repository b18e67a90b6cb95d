/**
 * nuo beside a real Karpenter (v1.15.0 with its KWOK cloud provider, tools/karpenter/build.ts) on the
 * local control plane. Karpenter provisions the nodes of a NodePool that consolidates empty and
 * underutilised nodes one second after they become so; nuo's agents run on those nodes and one
 * UpdatePolicy rolls them while Karpenter provisions nodes for the pods nuo's drains evict and
 * consolidates the nodes the workload, scaled down mid-rollout, leaves empty. nuo's drain empties each
 * node it reboots, and an after-reboot hook keeps the first attempts open until Karpenter has removed a
 * node: Karpenter picks among empty nodes, nuo's among them, and the protection nuo sets for the
 * attempt (karpenter.sh/do-not-disrupt) keeps it off nuo's until the attempt ends; Karpenter's
 * disruption taint keeps nuo off a node Karpenter removes.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { AppsV1Api, CoreV1Api, CustomObjectsApi, type V1Node } from '@kubernetes/client-node';
import { Annotations, AutoscalerTaints, Labels, ScaleDownProtection } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import { ResilientInformer } from '../../src/kube/informer.ts';
import { mergePatch } from '../../src/kube/patch.ts';
import { inAttemptPhase } from '../../src/sim/checker-phases.ts';
import { Fleet } from '../../src/sim/fleet.ts';
import { Karpenter } from '../../src/sim/karpenter.ts';
import { pollUntil } from '../../src/util/poll.ts';
import { operatorUnder, useCluster } from './support.ts';

const cluster = await useCluster();
const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
const apps = cluster.kubeconfig.makeApiClient(AppsV1Api);
const custom = cluster.kubeconfig.makeApiClient(CustomObjectsApi);
/** The label Karpenter puts on each node of a NodePool (pkg/apis/v1/labels.go, NodePoolLabelKey). */
const NODEPOOL_LABEL = 'karpenter.sh/nodepool';
const REPLICAS = 4;
const BUDGET = 2;
/** The after-reboot hook the test plays: "true" once Karpenter has started removing a node. */
const HOOK = 'example.com/karpenter-seen';

let karpenter: Karpenter | undefined;
let fleet: Fleet | undefined;
after(async () => {
  await fleet?.stop();
  await karpenter?.stop();
});

before(async () => {
  await core.createNamespace({ body: { metadata: { name: 'nuo-system' } } });
  karpenter = await Karpenter.start(cluster);
  await custom.createClusterCustomObject({
    group: 'karpenter.kwok.sh',
    version: 'v1alpha1',
    plural: 'kwoknodeclasses',
    body: { apiVersion: 'karpenter.kwok.sh/v1alpha1', kind: 'KWOKNodeClass', metadata: { name: 'default' } },
  });
  await custom.createClusterCustomObject({
    group: 'karpenter.sh',
    version: 'v1',
    plural: 'nodepools',
    body: {
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodePool',
      metadata: { name: 'default' },
      spec: {
        template: {
          spec: {
            requirements: [
              { key: 'kubernetes.io/os', operator: 'In', values: ['linux'] },
              { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] },
            ],
            nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'default' },
          },
        },
        // As eager as Karpenter gets: any node empty or underused for a second, all of them at once.
        disruption: {
          consolidationPolicy: 'WhenEmptyOrUnderutilized',
          consolidateAfter: '1s',
          budgets: [{ nodes: '100%' }],
        },
      },
    },
  });
});

/** One web pod per node (hostname anti-affinity): each pod a drain evicts needs a node of its own. */
async function createWorkload(): Promise<void> {
  const labels = { app: 'web' };
  await apps.createNamespacedDeployment({
    namespace: 'default',
    body: {
      metadata: { name: 'web', labels },
      spec: {
        replicas: REPLICAS,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            affinity: {
              podAntiAffinity: {
                requiredDuringSchedulingIgnoredDuringExecution: [
                  { labelSelector: { matchLabels: labels }, topologyKey: 'kubernetes.io/hostname' },
                ],
              },
            },
            containers: [
              { name: 'web', image: 'registry.example/web:1', resources: { requests: { cpu: '500m' } } },
            ],
            terminationGracePeriodSeconds: 1,
          },
        },
      },
    },
  });
}

/** Says the after-reboot hook is done on each node that asks for it (nuo's label) and has not had it. */
async function runHooks(nodes: V1Node[]): Promise<void> {
  for (const n of nodes) {
    if (n.metadata?.labels?.[Labels.afterReboot] !== 'true' || n.metadata.annotations?.[HOOK] === 'true')
      continue;
    await core.patchNode(
      { name: n.metadata.name ?? '', body: { metadata: { annotations: { [HOOK]: 'true' } } } },
      mergePatch,
    );
  }
}

/** What a watch of every Node saw of nuo's attempts and Karpenter's disruptions, node by node. */
class Observer {
  /** Nodes on which Karpenter's disruption taint appeared, and nodes deleted. */
  readonly disruptedByKarpenter = new Set<string>();
  readonly deleted = new Set<string>();
  /** Each moment a node was both in nuo's attempt and being removed by Karpenter (must stay empty). */
  readonly overlaps: string[] = [];
  /** When Karpenter's disruption taint was first seen, and the nodes in nuo's attempts then. */
  firstRemovalAt = Number.POSITIVE_INFINITY;
  attemptsAtFirstRemoval: string[] = [];
  /** Nodes seen in Draining, with the protection they carried then. */
  readonly protectionWhileDraining = new Map<string, Record<string, string | undefined>>();
  readonly #informer = new ResilientInformer<V1Node>({
    kubeconfig: cluster.kubeconfig,
    path: '/api/v1/nodes',
    list: (opts) => core.listNode(opts),
    name: 'karpenter-test',
  });

  constructor() {
    this.#informer.onEvent((type, node) => this.#observe(type, node));
  }

  start = () => this.#informer.start();
  stop = () => this.#informer.stop();

  #observe(type: string, node: V1Node): void {
    const name = node.metadata?.name ?? '';
    const a = node.metadata?.annotations ?? {};
    const inAttempt = inAttemptPhase(node);
    if (type === 'delete') {
      this.deleted.add(name);
      if (inAttempt) this.overlaps.push(`${name} deleted while nuo's attempt was in ${a[Annotations.state]}`);
      return;
    }
    const removing = (node.spec?.taints ?? []).some((t) => t.key === AutoscalerTaints.karpenter);
    if (removing) this.disruptedByKarpenter.add(name);
    if (removing && !Number.isFinite(this.firstRemovalAt)) {
      this.firstRemovalAt = Date.now();
      this.attemptsAtFirstRemoval = this.#informer
        .list()
        .filter(inAttemptPhase)
        .map((n) => n.metadata?.name ?? '');
    }
    if (removing && inAttempt)
      this.overlaps.push(`${name} tainted by Karpenter while nuo's attempt was in ${a[Annotations.state]}`);
    if (a[Annotations.state] === Phase.draining && !this.protectionWhileDraining.has(name)) {
      this.protectionWhileDraining.set(
        name,
        Object.fromEntries(Object.values(ScaleDownProtection).map((k) => [k, a[k]])),
      );
    }
  }
}

describe('nuo beside Karpenter v1.15.0 (KWOK provider)', () => {
  test('a rollout while Karpenter provisions and consolidates: no violation, Karpenter never removes a node in an attempt, nuo never reboots one Karpenter removes', async () => {
    await createWorkload();
    const pool = async () =>
      (await core.listNode({ labelSelector: NODEPOOL_LABEL })).items.map((n) => n.metadata?.name ?? '');
    const nodes = await pollUntil(
      `Karpenter to provision ${REPLICAS} nodes for the web pods, all running`,
      async () => {
        const pods = (await core.listNamespacedPod({ namespace: 'default' })).items;
        const running = pods.filter((p) => p.status?.phase === 'Running' && p.spec?.nodeName);
        const names = await pool();
        return running.length === REPLICAS && names.length === REPLICAS ? names : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    );

    const observer = new Observer();
    await observer.start();
    // Hosts (nuo's agents) on the nodes Karpenter made; the checker holds the whole cluster to the budget.
    const f = new Fleet(cluster, { rebootMs: 5000, budget: BUDGET, agentCheckIntervalMs: 2000 });
    fleet = f;
    await f.start();
    await operatorUnder(f, 'op', {
      nodeSelector: { matchLabels: { [NODEPOOL_LABEL]: 'default' } },
      maxUnavailable: BUDGET,
      reboot: { afterRebootAnnotations: [HOOK] },
    });
    f.stageUpdates(nodes);
    // The first drains evict pods that fit nowhere else: Karpenter provisions nodes for them.
    await pollUntil(
      'Karpenter to provision a node for a pod a drain evicted',
      async () => {
        const added = (await pool()).filter((n) => !nodes.includes(n));
        return added.length > 0 ? added : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    // The workload shrinks (the newest pods go first): Karpenter consolidates what it leaves empty.
    await apps.patchNamespacedDeploymentScale(
      { namespace: 'default', name: 'web', body: { spec: { replicas: REPLICAS / 2 } } },
      mergePatch,
    );

    await pollUntil(
      'each node of the pool rebooted once by nuo and Idle, or removed by Karpenter',
      async () => {
        const live = new Map((await core.listNode()).items.map((n) => [n.metadata?.name ?? '', n]));
        // The hook: the nodes waiting for it go on once Karpenter has removed (or is removing) a node.
        if (Number.isFinite(observer.firstRemovalAt)) await runHooks([...live.values()]);
        const done = nodes.every((name) => {
          const n = live.get(name);
          if (!n) return true;
          return (
            n.metadata?.annotations?.[Annotations.state] === Phase.idle && f.checker.rebootsOf(name) === 1
          );
        });
        return done ? true : undefined;
      },
      { timeoutMs: 240_000, intervalMs: 500 },
    );
    await f.checker.finalCheck();
    await f.checker.settle();
    await observer.stop();

    assert.deepEqual(f.checker.violations, [], 'the independent checker saw no violation');
    assert.deepEqual(observer.overlaps, [], 'no node both in an attempt of nuo and removed by Karpenter');
    const rebooted = nodes.filter((n) => f.checker.rebootsOf(n) === 1);
    assert.ok(rebooted.length > 0, 'nuo rebooted nodes of the pool');
    for (const name of rebooted) {
      assert.deepEqual(
        observer.protectionWhileDraining.get(name),
        { [ScaleDownProtection.clusterAutoscaler]: 'true', [ScaleDownProtection.karpenter]: 'true' },
        `${name}: protected from both autoscalers while nuo drained it`,
      );
    }
    for (const name of nodes.filter((n) => f.checker.rebootsOf(n) === 0)) {
      assert.ok(observer.deleted.has(name), `${name} was neither rebooted by nuo nor removed by Karpenter`);
    }
    assert.ok(
      observer.attemptsAtFirstRemoval.length > 0,
      `Karpenter started removing nodes (${[...observer.disruptedByKarpenter].join(', ')}) while nuo's attempts ran`,
    );
  });
});
