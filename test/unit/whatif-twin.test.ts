import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type Snapshot, SnapshotCollector } from '../../src/whatif/snapshot.ts';
import { buildTwin, TWIN_JOB_RUN } from '../../src/whatif/twin.ts';
import { TWIN_IMAGE } from '../../src/whatif/twin-spec.ts';
import { unreadyPicks } from '../../src/whatif/unready.ts';
import { podStandings } from '../../src/whatif/workloads.ts';
import { rawNode, rawPdb, rawPod, rawWorkload } from './whatif-fixtures.ts';

const owned = (kind: string, name: string, apiVersion = 'apps/v1') => ({
  ownerReferences: [{ apiVersion, kind, name, uid: 'x', controller: true }],
});

/** A shop: three zones (zone-c's node NotReady), a Deployment with one unready and one pending pod, and the rest. */
function shop(): Snapshot {
  const c = new SnapshotCollector();
  const add = (o: unknown) => c.add(o, 'test');
  add({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop', labels: { team: 'web' } } });
  add({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kube-system' } });
  add({ apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name: 'high' }, value: 1000 });
  add({
    apiVersion: 'scheduling.k8s.io/v1',
    kind: 'PriorityClass',
    metadata: { name: 'system-node-critical' },
    value: 2000001000,
  });
  const n1 = rawNode('n1', 'zone-a');
  n1.spec.taints.push(
    { key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule', value: '', timeAdded: '' },
    { key: 'nuo.dev/reboot-pending', effect: 'PreferNoSchedule', value: '', timeAdded: '' },
  );
  add(n1);
  add(rawNode('n2', 'zone-b'));
  const down = rawNode('n3', 'zone-c');
  down.status.conditions = [
    { ...(down.status.conditions[0] as (typeof down.status.conditions)[0]), status: 'Unknown' },
  ];
  add(down);
  add(rawWorkload('Deployment', 'web', { replicas: 3 }, { replicas: 3, readyReplicas: 1 }));
  const rs = rawWorkload('ReplicaSet', 'web-abc123', { replicas: 3 });
  Object.assign(rs.metadata, owned('Deployment', 'web'));
  add(rs);
  add(rawPod('web-1', 'n1', { owner: { kind: 'ReplicaSet', name: 'web-abc123' } }));
  add(rawPod('web-2', 'n2', { owner: { kind: 'ReplicaSet', name: 'web-abc123' }, ready: false }));
  add(rawPod('web-3', undefined, { owner: { kind: 'ReplicaSet', name: 'web-abc123' } }));
  const db = rawWorkload('StatefulSet', 'db', {
    replicas: 2,
    serviceName: 'db',
    podManagementPolicy: 'OrderedReady',
  });
  db.spec.template.spec.priorityClassName = 'gold';
  add(db);
  add(rawPod('db-0', 'n1', { owner: { kind: 'StatefulSet', name: 'db' } }));
  add(rawPod('db-1', 'n2', { owner: { kind: 'StatefulSet', name: 'db' } }));
  add(rawWorkload('DaemonSet', 'logs'));
  for (const n of ['n1', 'n2', 'n3'])
    add(rawPod(`logs-${n}`, n, { owner: { kind: 'DaemonSet', name: 'logs' } }));
  add(rawWorkload('Job', 'batch', { parallelism: 4, completions: 10 }, { active: 1 }));
  add(rawPod('batch-x', 'n2', { owner: { kind: 'Job', name: 'batch' } }));
  add(rawWorkload('Job', 'old', {}, { succeeded: 1 }));
  add(rawPod('old-x', 'n2', { owner: { kind: 'Job', name: 'old' }, phase: 'Succeeded' }));
  const planJob = rawWorkload('Job', 'apply-os-on-n1', {}, { active: 1 });
  planJob.metadata.labels = {
    ...planJob.metadata.labels,
    'nuo.dev/plan': 'os',
  } as typeof planJob.metadata.labels;
  add(planJob);
  add(rawPod('apply-os-on-n1-x', 'n1', { owner: { kind: 'Job', name: 'apply-os-on-n1' } }));
  const bare = rawPod('debug', 'n1');
  Object.assign(bare.spec, { schedulerName: 'my-scheduler' });
  add(bare);
  add(rawPod('lost', 'gone-node'));
  add(rawPod('rollout-1', 'n2', { owner: { kind: 'Rollout', name: 'canary' } }));
  const mirror = rawPod('etcd-n1', 'n1', { namespace: 'kube-system' });
  Object.assign(mirror.metadata.annotations, { 'kubernetes.io/config.mirror': 'hash' });
  Object.assign(mirror.metadata, owned('Node', 'n1', 'v1'));
  add(mirror);
  const elsewhere = rawPod('lonely', 'n1', { namespace: 'other' });
  add(elsewhere);
  add(rawPdb('web', { minAvailable: 2 }, { disruptionsAllowed: 0 }));
  add({
    apiVersion: 'nuo.dev/v1alpha1',
    kind: 'UpdatePolicy',
    metadata: { name: 'all', uid: 'u' },
    spec: { maxUnavailable: 1 },
    status: { nodes: 3 },
  });
  add({
    apiVersion: 'nuo.dev/v1alpha1',
    kind: 'Plan',
    metadata: { name: 'os', namespace: 'shop' },
    spec: { version: 'v2', upgrade: { image: 'os:2', env: [{ name: 'TOKEN', value: 'hunter2' }] } },
  });
  return c.finish();
}

type M = {
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec: Record<string, unknown>;
};
const byName = (objects: object[], kind: string, name: string) => {
  const found = (objects as M[]).find((o) => o.kind === kind && o.metadata.name === name);
  assert.ok(
    found,
    `${kind} ${name} in ${JSON.stringify((objects as M[]).map((o) => `${o.kind} ${o.metadata.name}`))}`,
  );
  return found;
};

test('podStandings: per top owner, live pods placed, Ready and unready, with their zones', () => {
  const st = podStandings(shop());
  assert.deepEqual(st.get('shop/Deployment/web'), {
    pods: 3,
    scheduled: 2,
    ready: 1,
    unready: 1,
    zones: ['zone-a', 'zone-b'],
    unreadyNodes: ['n2'],
  });
  assert.deepEqual(st.get('shop/DaemonSet/logs')?.zones, ['zone-a', 'zone-b', 'zone-c']);
  assert.equal(st.get('shop/Job/old'), undefined, 'a finished pod is not live');
  assert.equal(st.get('kube-system/Pod/etcd-n1'), undefined, 'a mirror pod is not live');
  assert.deepEqual(st.get('shop/Pod/lost')?.zones, ['?'], 'a node the snapshot lacks');
  assert.equal(st.get('shop/Pod/rollout-1')?.pods, 1, 'an owner the snapshot lacks: the pod stands alone');
});

test("buildTwin: nodes as they were, NotReady kept, only people-written nuo annotations, no controller's or nuo's taints", () => {
  const twin = buildTwin(shop());
  assert.deepEqual(
    twin.nodes.map((n) => [n.name, n.labels['topology.kubernetes.io/zone'], n.notReady]),
    [
      ['n1', 'zone-a', false],
      ['n2', 'zone-b', false],
      ['n3', 'zone-c', true],
    ],
  );
  const n1 = twin.nodes[0];
  assert.deepEqual(n1?.annotations, { 'nuo.dev/paused': 'true' });
  assert.deepEqual(n1?.taints, [{ key: 'dedicated', value: 'web', effect: 'NoSchedule' }]);
  assert.equal(n1?.allocatable?.cpu, '3800m');
});

test('buildTwin: namespaces (built-in ones left out, used ones added), PriorityClasses but the system ones', () => {
  const twin = buildTwin(shop());
  assert.deepEqual(twin.namespaces, [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop', labels: { team: 'web' } } },
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'other' } },
  ]);
  assert.deepEqual(twin.priorityClasses, [
    { apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name: 'high' }, value: 1000 },
  ]);
});

test('buildTwin: top owners with their replicas and scheduling constraints; images replaced, env and secrets gone', () => {
  const twin = buildTwin(shop());
  assert.deepEqual(
    (twin.workloads as M[]).map((w) => `${w.kind} ${w.metadata.name}`),
    ['Deployment web', 'StatefulSet db', 'DaemonSet logs', 'Job batch'],
  );
  const web = byName(twin.workloads, 'Deployment', 'web');
  assert.equal(web.spec.replicas, 3);
  const template = web.spec.template as {
    metadata: { labels: Record<string, string> };
    spec: Record<string, unknown>;
  };
  assert.deepEqual(template.metadata.labels, { app: 'web' });
  const spec = template.spec as Record<string, unknown> & {
    containers: { image: string }[];
    volumes: unknown[];
  };
  assert.deepEqual(
    spec.containers.map((c) => c.image),
    [TWIN_IMAGE],
  );
  assert.deepEqual(
    spec.volumes,
    [{ name: 'cache', emptyDir: { sizeLimit: '1Gi' } }],
    'only emptyDir: a drain reads it',
  );
  for (const key of [
    'nodeSelector',
    'affinity',
    'tolerations',
    'topologySpreadConstraints',
    'priorityClassName',
  ])
    assert.ok(spec[key] !== undefined, `${key} kept`);
  assert.equal(spec.priority, undefined, 'the priority admission sets it from the class');
  assert.equal(spec.nodeName, undefined, "an owner's pods are placed by the twin's scheduler");
  const text = JSON.stringify(twin);
  for (const secret of ['hunter2', 'web-creds', 'registry.internal', 'serviceAccountName', 'TOKEN'])
    assert.ok(!text.includes(secret), `${secret} is not in the twin`);

  const db = byName(twin.workloads, 'StatefulSet', 'db');
  assert.equal(db.spec.podManagementPolicy, 'Parallel');
  assert.equal((db.spec.template as { spec: Record<string, unknown> }).spec.priorityClassName, undefined);
  const batch = byName(twin.workloads, 'Job', 'batch');
  assert.equal(batch.spec.parallelism, 1, 'only its running pods');
  assert.equal(batch.spec.completions, 1);
  const batchTemplate = batch.spec.template as {
    metadata: { annotations: Record<string, string> };
    spec: { restartPolicy: string };
  };
  assert.equal(batchTemplate.metadata.annotations['pod-complete.stage.kwok.x-k8s.io/delay'], TWIN_JOB_RUN);
  assert.equal(batchTemplate.spec.restartPolicy, 'Never');
});

test('buildTwin: bare pods on their node; static pods, finished and Plan Jobs left out, each with a note', () => {
  const twin = buildTwin(shop());
  assert.deepEqual(
    (twin.pods as M[]).map(
      (p) => `${p.metadata.namespace}/${p.metadata.name} on ${p.spec.nodeName ?? 'no node'}`,
    ),
    ['shop/debug on n1', 'shop/lost on no node', 'shop/rollout-1 on n2', 'other/lonely on n1'],
  );
  const debug = byName(twin.pods, 'Pod', 'debug');
  assert.equal(debug.spec.schedulerName, undefined);
  assert.deepEqual(debug.metadata.annotations, { 'nuo.dev/do-not-disrupt': '4h' });
  assert.deepEqual(debug.metadata.labels, { app: 'web' }, 'generated labels dropped');
  assert.deepEqual(twin.notes, [
    'shop/StatefulSet/db: left out priorityClassName gold (not in the snapshot)',
    'shop/Job/old: no pod running (a finished Job holds no node)',
    "shop/Job/apply-os-on-n1: a Plan's Job (the twin's operator makes its own)",
    'shop/Pod/debug: left out schedulerName my-scheduler (the twin runs kube-scheduler only)',
    'shop/Pod/lost: left out nodeName gone-node (not in the snapshot)',
    'shop/Pod/rollout-1: its owner Rollout canary is not a kind a snapshot holds: created as a bare pod on its node',
    'kube-system/Pod/etcd-n1: a static pod (a drain skips it; its requests are not held on its node in the twin)',
  ]);
});

test('buildTwin: PDBs, policies and Plans by spec; expectations per workload', () => {
  const twin = buildTwin(shop());
  assert.deepEqual(twin.pdbs, [
    {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name: 'web', namespace: 'shop' },
      spec: { minAvailable: 2, selector: { matchLabels: { app: 'web' } } },
    },
  ]);
  assert.deepEqual(twin.updatePolicies, [
    {
      apiVersion: 'nuo.dev/v1alpha1',
      kind: 'UpdatePolicy',
      metadata: { name: 'all' },
      spec: { maxUnavailable: 1 },
    },
  ]);
  assert.deepEqual(twin.plans, [
    {
      apiVersion: 'nuo.dev/v1alpha1',
      kind: 'Plan',
      metadata: { name: 'os', namespace: 'shop' },
      spec: { version: 'v2', upgrade: { image: 'os:2' } },
    },
  ]);
  const web = twin.expectations.find((e) => e.workload === 'shop/Deployment/web');
  assert.equal(web?.standing.unready, 1);
  assert.deepEqual(
    twin.expectations.map((e) => e.workload),
    [
      'shop/Deployment/web',
      'shop/StatefulSet/db',
      'shop/DaemonSet/logs',
      'shop/Job/batch',
      'shop/Pod/debug',
      'shop/Pod/lost',
      'shop/Pod/rollout-1',
      'other/Pod/lonely',
    ],
  );
});

test("buildTwin: a ReplicaSet of no Deployment in the snapshot is made with its selector and labels less the template's hash", () => {
  const c = new SnapshotCollector();
  const rs = rawWorkload('ReplicaSet', 'web-abc123', {
    replicas: 2,
    selector: { matchLabels: { app: 'web', 'pod-template-hash': 'abc123' } },
  });
  rs.spec.template.metadata.labels = {
    app: 'web',
    'pod-template-hash': 'abc123',
  } as typeof rs.spec.template.metadata.labels;
  Object.assign(rs.metadata, owned('Deployment', 'gone'));
  c.add(rs, 'test');
  const [made] = buildTwin(c.finish()).workloads as M[];
  assert.equal(made?.kind, 'ReplicaSet');
  assert.deepEqual(made?.spec.selector, { matchLabels: { app: 'web' } });
  assert.deepEqual((made?.spec.template as { metadata: object } | undefined)?.metadata, {
    labels: { app: 'web' },
  });
});

test("buildTwin: seeds, pods of a Deployment's ReplicaSet and a StatefulSet on their snapshot nodes, made for their owners to adopt", () => {
  const twin = buildTwin(shop());
  type Seed = M & { spec: { nodeName?: string; containers: { image: string }[] } };
  const seeds = twin.seeds as Seed[];
  assert.deepEqual(
    seeds.map((p) => `${p.metadata.name} on ${p.spec.nodeName}`),
    ['web-1 on n1', 'web-2 on n2', 'db-0 on n1', 'db-1 on n2'],
    'placed pods only (web-3 was pending); no DaemonSet, Job or bare pod among them',
  );
  const web1 = byName(seeds, 'Pod', 'web-1') as Seed;
  assert.deepEqual(web1.metadata.labels, { app: 'web', 'pod-template-hash': 'abc123' });
  assert.equal(web1.spec.containers[0]?.image, TWIN_IMAGE);
  assert.equal(web1.metadata.namespace, 'shop');
  assert.equal(
    (web1 as { metadata: { ownerReferences?: unknown } }).metadata.ownerReferences,
    undefined,
    'an orphan: its owner adopts it',
  );
  assert.deepEqual(byName(seeds, 'Pod', 'db-0').metadata.labels, { app: 'web' }, 'no hash for a StatefulSet');

  const [rs] = twin.seedReplicaSets as M[];
  assert.equal(twin.seedReplicaSets.length, 1);
  assert.equal(rs?.metadata.name, 'web-abc123', "the snapshot's ReplicaSet of those pods");
  assert.equal(rs?.spec.replicas, 3);
  assert.deepEqual(rs?.spec.selector, { matchLabels: { app: 'web', 'pod-template-hash': 'abc123' } });
  const web = byName(twin.workloads, 'Deployment', 'web');
  const rsTemplate = rs?.spec.template as { metadata: { labels: object }; spec: object };
  const webTemplate = web.spec.template as { metadata: { labels: object }; spec: object };
  assert.deepEqual(
    rsTemplate.spec,
    webTemplate.spec,
    "the Deployment's template, so that it is its current one",
  );
  assert.deepEqual(web1.metadata.annotations, (webTemplate.metadata as M['metadata']).annotations);
  assert.deepEqual(rsTemplate.metadata.labels, {
    ...webTemplate.metadata.labels,
    'pod-template-hash': 'abc123',
  });
  assert.deepEqual(
    byName(twin.workloads, 'StatefulSet', 'db').spec.updateStrategy,
    { type: 'OnDelete' },
    'no rolling update replaces its seeds',
  );
});

test('buildTwin: at most replicas seeds; a StatefulSet seeds only its own ordinals; pods on unknown nodes are not seeded', () => {
  const c = new SnapshotCollector();
  const add = (o: unknown) => c.add(o, 'test');
  add(rawNode('n1', 'zone-a'));
  add(rawWorkload('ReplicaSet', 'solo', { replicas: 2 }));
  for (const [name, node] of [
    ['solo-a', 'n1'],
    ['solo-b', 'n1'],
    ['solo-c', 'n1'],
    ['solo-d', 'gone'],
  ])
    add(rawPod(name as string, node, { owner: { kind: 'ReplicaSet', name: 'solo' } }));
  add(rawWorkload('StatefulSet', 'db', { replicas: 2, serviceName: 'db' }));
  for (const name of ['db-0', 'db-2', 'db-01', 'dbx-1'])
    add(rawPod(name, 'n1', { owner: { kind: 'StatefulSet', name: 'db' } }));
  const twin = buildTwin(c.finish());
  assert.deepEqual(
    (twin.seeds as M[]).map((p) => p.metadata.name),
    ['solo-a', 'solo-b', 'db-0'],
  );
  assert.deepEqual(
    (twin.seeds as M[])[0]?.metadata.labels,
    { app: 'web' },
    "a lone ReplicaSet's selector, no hash",
  );
  assert.deepEqual(twin.seedReplicaSets, [], 'a ReplicaSet of no Deployment is made as a workload');
});

test('buildTwin of an empty snapshot is empty', () => {
  const twin = buildTwin(new SnapshotCollector().finish());
  assert.deepEqual(twin, {
    nodes: [],
    namespaces: [],
    priorityClasses: [],
    updatePolicies: [],
    plans: [],
    seeds: [],
    seedReplicaSets: [],
    workloads: [],
    pdbs: [],
    pods: [],
    expectations: [],
    notes: [],
  });
});

test('unreadyPicks: same node first, then same zone, then any; each pod once; never more than there are', () => {
  const zoneOf = (n: string) => ({ n1: 'a', n2: 'a', n3: 'b', n4: 'c' })[n] ?? '';
  const pods = [
    { name: 'p1', node: 'n1', zone: 'a' },
    { name: 'p2', node: 'n2', zone: 'a' },
    { name: 'p3', node: 'n3', zone: 'b' },
  ];
  const cases: { name: string; unreadyNodes: string[]; want: string[] }[] = [
    { name: 'none', unreadyNodes: [], want: [] },
    { name: 'same node', unreadyNodes: ['n3'], want: ['p3'] },
    { name: 'same zone when the node has none', unreadyNodes: ['n2', 'n2'], want: ['p2', 'p1'] },
    { name: 'any when the zone has none', unreadyNodes: ['n4'], want: ['p1'] },
    { name: 'more unready than pods', unreadyNodes: ['n1', 'n1', 'n1', 'n1'], want: ['p1', 'p2', 'p3'] },
  ];
  for (const c of cases)
    assert.deepEqual(unreadyPicks({ unreadyNodes: c.unreadyNodes }, zoneOf, pods), c.want, c.name);
});

test('an owner cycle in a hostile snapshot ends: its pods belong to the last owner reached', () => {
  const c = new SnapshotCollector();
  const a = rawWorkload('ReplicaSet', 'a');
  Object.assign(a.metadata, owned('ReplicaSet', 'b'));
  const b = rawWorkload('ReplicaSet', 'b');
  Object.assign(b.metadata, owned('ReplicaSet', 'a'));
  c.add(a, 'test');
  c.add(b, 'test');
  c.add(rawPod('p', 'n1', { owner: { kind: 'ReplicaSet', name: 'a' } }), 'test');
  const st = podStandings(c.finish());
  assert.equal([...st.keys()].length, 1);
  assert.match([...st.keys()][0] ?? '', /^shop\/ReplicaSet\/[ab]$/);
});
