import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { keepNode, keepPod, keepWorkload } from '../../src/whatif/keep.ts';
import { parseSnapshotText, readSnapshotFiles } from '../../src/whatif/parse.ts';
import { ItemError } from '../../src/whatif/raw.ts';
import {
  formatSnapshot,
  MAX_OBJECTS,
  type Snapshot,
  SnapshotCollector,
  SnapshotError,
} from '../../src/whatif/snapshot.ts';
import { rawNode, rawPdb, rawPod, rawWorkload } from './whatif-fixtures.ts';

const dir = mkdtempSync(join(tmpdir(), 'nuo-whatif-test-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function collect(...objects: unknown[]): { snapshot: Snapshot; notes: string[] } {
  const c = new SnapshotCollector();
  objects.forEach((o, i) => {
    c.add(o, `test item ${i + 1}`);
  });
  return { snapshot: c.finish(), notes: c.notes() };
}

test('keepNode keeps labels, taints, capacity, conditions and nodeInfo; drops uids, managedFields and machine ids', () => {
  const node = keepNode(rawNode('n1', 'zone-a'));
  assert.deepEqual(node, {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: 'n1',
      labels: { 'kubernetes.io/hostname': 'n1', 'topology.kubernetes.io/zone': 'zone-a', pool: 'web' },
      annotations: { 'nuo.dev/paused': 'true' },
      creationTimestamp: '2026-01-01T00:00:00Z',
    },
    spec: { taints: [{ key: 'dedicated', value: 'web', effect: 'NoSchedule' }] },
    status: {
      capacity: { cpu: '4', memory: '16Gi', pods: '110' },
      allocatable: { cpu: '3800m', memory: '15Gi', pods: '110' },
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'KubeletReady',
          message: 'kubelet is posting ready status',
          lastTransitionTime: '2026-01-01T00:00:00Z',
        },
      ],
      nodeInfo: {
        architecture: 'amd64',
        bootID: 'boot-1',
        containerRuntimeVersion: 'containerd://2.0',
        kernelVersion: '6.1.0',
        kubeletVersion: 'v1.37.1',
        operatingSystem: 'linux',
        osImage: 'Flatcar',
      },
    },
  });
});

test('keepPod keeps what scheduling and eviction read, and no env, command, probe, secret name or foreign annotation', () => {
  const pod = keepPod(rawPod('web-1', 'n1', { owner: { kind: 'ReplicaSet', name: 'web-abc123' } }));
  const text = JSON.stringify(pod);
  for (const secret of [
    'hunter2',
    'DB_PASSWORD',
    's3cr3t',
    'web-creds',
    'web-config',
    'web-env',
    'secretKeyRef',
    'last-applied',
    'uid-',
    'managedFields',
    'serviceAccountName',
  ])
    assert.ok(!text.includes(secret), `${secret} is dropped: ${text}`);
  assert.deepEqual(pod.metadata, {
    name: 'web-1',
    namespace: 'shop',
    labels: { app: 'web', 'pod-template-hash': 'abc123' },
    annotations: { 'nuo.dev/do-not-disrupt': '4h' },
    ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-abc123', controller: true }],
  });
  assert.deepEqual(pod.spec.containers, [
    {
      name: 'web',
      image: 'registry.internal/web:1.2.3',
      resources: { requests: { cpu: '250m', memory: '256Mi' }, limits: { memory: '512Mi' } },
      ports: [{ containerPort: 9100, hostPort: 9100, protocol: 'TCP' }],
    },
  ]);
  assert.deepEqual(pod.spec.volumes, [
    { name: 'creds', secret: {} },
    { name: 'cache', emptyDir: { sizeLimit: '1Gi' } },
    { name: 'config', configMap: {} },
  ]);
  assert.equal(pod.spec.nodeName, 'n1');
  assert.deepEqual(pod.spec.nodeSelector, { pool: 'web' });
  assert.equal(pod.spec.priorityClassName, 'high');
  assert.equal(pod.spec.topologySpreadConstraints?.length, 1);
  assert.equal(pod.spec.tolerations?.length, 1);
  assert.ok(pod.spec.affinity?.podAntiAffinity);
  assert.deepEqual(pod.status, {
    phase: 'Running',
    startTime: '2026-01-02T00:00:00Z',
    conditions: [
      { type: 'PodScheduled', status: 'True' },
      { type: 'Ready', status: 'True' },
    ],
  });
});

test('keep refuses objects that lack what a twin needs, naming the field', () => {
  const cases: { name: string; keep: () => unknown; error: RegExp }[] = [
    { name: 'no metadata', keep: () => keepNode({ kind: 'Node' }), error: /^metadata is missing$/ },
    { name: 'no name', keep: () => keepNode({ metadata: {} }), error: /^metadata\.name is missing$/ },
    {
      name: 'a number for a name',
      keep: () => keepNode({ metadata: { name: 7 } }),
      error: /metadata\.name must be a string, not number 7/,
    },
    {
      name: 'a pod without namespace',
      keep: () => keepPod({ metadata: { name: 'p' }, spec: { containers: [{ name: 'c' }] } }),
      error: /metadata\.namespace is missing/,
    },
    {
      name: 'a pod without containers',
      keep: () => keepPod({ metadata: { name: 'p', namespace: 'n' }, spec: { containers: [] } }),
      error: /spec\.containers is missing/,
    },
    {
      name: 'a label that is an object',
      keep: () => keepNode({ metadata: { name: 'n', labels: { a: { b: 1 } } } }),
      error: /metadata\.labels\.a must be a string, not an object/,
    },
    {
      name: 'a taint without effect',
      keep: () => keepNode({ metadata: { name: 'n' }, spec: { taints: [{ key: 'k' }] } }),
      error: /spec\.taints\[0\]\.effect is missing/,
    },
    {
      name: 'containers that are not a list',
      keep: () => keepPod({ metadata: { name: 'p', namespace: 'n' }, spec: { containers: 'web' } }),
      error: /spec\.containers must be a list, not "web"/,
    },
    {
      name: 'a Deployment without selector',
      keep: () =>
        keepWorkload('Deployment', {
          metadata: { name: 'd', namespace: 'n' },
          spec: { template: { spec: { containers: [{ name: 'c' }] } } },
        }),
      error: /spec\.selector is missing/,
    },
    {
      name: 'a StatefulSet without template',
      keep: () =>
        keepWorkload('StatefulSet', { metadata: { name: 's', namespace: 'n' }, spec: { selector: {} } }),
      error: /spec\.template is missing/,
    },
  ];
  for (const c of cases)
    assert.throws(c.keep, (e: Error) => e instanceof ItemError && c.error.test(e.message), c.name);
});

test('a Job needs no selector (the API server makes one); a PDB may set only one of minAvailable and maxUnavailable', () => {
  assert.equal(keepWorkload('Job', rawWorkload('Job', 'j')).spec.selector, undefined);
  const c = new SnapshotCollector();
  c.add(rawPdb('both', { minAvailable: 1, maxUnavailable: 1 }), 'pdbs.yaml item 1');
  assert.throws(
    () => c.finish(),
    /pdbs\.yaml item 1 \(PodDisruptionBudget both\): spec\.minAvailable and spec\.maxUnavailable are both set/,
  );
});

test('the collector drops Secrets and ConfigMaps unread, ignores other kinds and other groups, and says so', () => {
  const { snapshot, notes } = collect(
    rawNode('n1', 'a'),
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 's', namespace: 'x' },
      data: { password: 'aHVudGVyMg==' },
    },
    { apiVersion: 'v1', kind: 'Secret', metadata: { name: 't', namespace: 'x' } },
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'x' }, data: { k: 'v' } },
    { apiVersion: 'v1', kind: 'Service', metadata: { name: 'svc', namespace: 'x' } },
    // Rancher's Plan has nuo's kind name and another group: not nuo's.
    {
      apiVersion: 'upgrade.cattle.io/v1',
      kind: 'Plan',
      metadata: { name: 'k3s', namespace: 'system-upgrade' },
      spec: {},
    },
  );
  assert.equal(snapshot.nodes.length, 1);
  assert.equal(snapshot.plans.length, 0);
  assert.ok(!JSON.stringify(snapshot).includes('aHVudGVyMg'));
  assert.deepEqual(notes, [
    '2 Secrets dropped unread: a snapshot never keeps Secrets or ConfigMaps',
    '1 ConfigMap dropped unread: a snapshot never keeps Secrets or ConfigMaps',
    'ignored (not part of a snapshot): 1 Service (v1), 1 Plan (upgrade.cattle.io/v1)',
  ]);
});

test('the collector reports every bad object at once, each with its place and name, and duplicates', () => {
  const c = new SnapshotCollector();
  c.add(rawNode('n1', 'a'), 'nodes.yaml item 1');
  c.add(rawNode('n1', 'a'), 'nodes.yaml item 2');
  c.add('just a string', 'nodes.yaml item 3');
  c.add({ kind: 'Node', metadata: { name: 'x' } }, 'nodes.yaml item 4');
  c.add({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'n' } }, 'pods.yaml item 1');
  assert.throws(
    () => c.finish(),
    (e: Error) =>
      e instanceof SnapshotError &&
      e.message ===
        [
          '4 objects could not be read:',
          '  nodes.yaml item 2: Node n1 appears twice',
          '  nodes.yaml item 3: not an object',
          '  nodes.yaml item 4: no apiVersion (every object needs apiVersion and kind)',
          '  pods.yaml item 1 (Pod p): spec is missing',
        ].join('\n'),
  );
});

test('the collector lists 20 errors and counts the rest', () => {
  const c = new SnapshotCollector();
  for (let i = 0; i < 25; i++) c.add({ apiVersion: 'v1', kind: 'Node', metadata: {} }, `item ${i + 1}`);
  assert.throws(
    () => c.finish(),
    (e: Error) => e.message.split('\n').length === 22 && e.message.endsWith('  … and 5 more'),
  );
});

test('the collector refuses more objects than a snapshot may hold', () => {
  const c = new SnapshotCollector();
  const ns = { apiVersion: 'v1', kind: 'Service', metadata: { name: 's', namespace: 'n' } };
  for (let i = 0; i < MAX_OBJECTS; i++) c.add(ns, 'x');
  assert.throws(
    () => c.add(ns, 'big.yaml item 500001'),
    /more than 500000 objects \(at big\.yaml item 500001\)/,
  );
});

test('a snapshot written as YAML or JSON reads back the same, as one kind: List', () => {
  const { snapshot } = collect(
    rawNode('n1', 'a'),
    rawPod('web-1', 'n1', { owner: { kind: 'ReplicaSet', name: 'web-abc123' } }),
    rawWorkload('Deployment', 'web', { replicas: 3 }),
    rawPdb('web', { minAvailable: 2 }),
    { apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name: 'high' }, value: 1000 },
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop', labels: { team: 'a' } } },
    {
      apiVersion: 'nuo.dev/v1alpha1',
      kind: 'UpdatePolicy',
      metadata: { name: 'all' },
      spec: { maxUnavailable: 1 },
    },
  );
  for (const format of ['yaml', 'json'] as const) {
    const text = formatSnapshot(snapshot, format, ['made by a test']);
    const list = format === 'yaml' ? parseYaml(text) : JSON.parse(text);
    assert.equal(list.kind, 'List');
    assert.equal(list.items.length, 7);
    if (format === 'yaml') assert.ok(text.startsWith('# made by a test\n'));
    assert.ok(!text.includes('&') && !text.includes('*a'), 'no YAML anchors or aliases');
    const c = new SnapshotCollector();
    parseSnapshotText(text, `snap.${format}`, c);
    assert.deepEqual(c.finish(), snapshot, format);
  }
});

test('files: a directory of kubectl -o yaml and -o json output, multi-document, Lists and single objects', () => {
  const d = join(dir, 'dump');
  rmSync(d, { recursive: true, force: true });
  mkdirs(d);
  writeFileSync(
    join(d, 'nodes.yaml'),
    `apiVersion: v1\nkind: List\nitems:\n- ${JSON.stringify(rawNode('n1', 'a'))}\n- ${JSON.stringify(rawNode('n2', 'b'))}\n`,
  );
  writeFileSync(
    join(d, 'pods.json'),
    JSON.stringify({ apiVersion: 'v1', kind: 'PodList', items: [rawPod('p1', 'n1')] }),
  );
  writeFileSync(
    join(d, 'more.yml'),
    `${JSON.stringify(rawWorkload('Deployment', 'web'))}\n---\n---\n${JSON.stringify(rawPdb('web', { maxUnavailable: 1 }))}\n`,
  );
  writeFileSync(join(d, 'README.md'), 'not read');
  const { snapshot, notes } = readSnapshotFiles(d);
  assert.deepEqual(
    [snapshot.nodes.length, snapshot.pods.length, snapshot.workloads.length, snapshot.pdbs.length],
    [2, 1, 1, 1],
  );
  assert.deepEqual(notes, []);
  assert.equal(readSnapshotFiles(join(d, 'pods.json')).snapshot.pods.length, 1, 'one file');
});

test('files: broken YAML and JSON, a hostile alias bomb, a missing path and an empty directory are refused with the file named', () => {
  const d = join(dir, 'bad');
  mkdirs(d);
  const cases: { file: string; text: string; error: RegExp }[] = [
    {
      file: 'broken.yaml',
      text: 'kind: List\nitems:\n  - [unclosed\n',
      error: /broken\.yaml:4 \(item 1\): not valid YAML: Flow sequence must end with a \]$/m,
    },
    { file: 'broken.json', text: '{"kind": "List", ', error: /broken\.json: not valid JSON/ },
    {
      file: 'bomb.yaml',
      text: [
        'a: &a [x, x, x, x, x, x, x, x, x, x]',
        'b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]',
        'c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]',
        'd: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]',
      ].join('\n'),
      error: /bomb\.yaml:1: not valid YAML: Excessive alias count/,
    },
    { file: 'items.yaml', text: 'kind: List\nitems:\n- 42\n', error: /items\.yaml item 1: not an object/ },
  ];
  for (const c of cases) {
    const f = join(d, c.file);
    writeFileSync(f, c.text);
    assert.throws(
      () => readSnapshotFiles(f),
      (e: Error) => e instanceof SnapshotError && c.error.test(e.message),
      `${c.file}: ${c.error}`,
    );
  }
  assert.throws(() => readSnapshotFiles(join(d, 'absent')), /absent does not exist/);
  const big = join(d, 'big.json');
  writeFileSync(big, JSON.stringify({ kind: 'List', items: [rawNode('n1', 'a')] }));
  assert.throws(
    () => readSnapshotFiles(big, 1024),
    /big\.json is 2 KiB, more than the 1 KiB a file may hold: split it/,
    'refused before it is read',
  );
  assert.equal(readSnapshotFiles(big, 1024 * 1024).snapshot.nodes.length, 1);
  const empty = join(dir, 'empty');
  mkdirs(empty);
  assert.throws(() => readSnapshotFiles(empty), /holds no \.yaml, \.yml or \.json file/);
});

function mkdirs(path: string) {
  rmSync(path, { recursive: true, force: true });
  mkdirSync(path, { recursive: true });
}
