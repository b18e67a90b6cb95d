/**
 * nuo whatif on the real control plane: a source cluster (nodes in three zones, one cordoned; a
 * Deployment under a PDB with one unready replica; a DaemonSet; a StatefulSet under a PDB; an
 * UpdatePolicy; a Secret) snapshotted through the CLI as a ServiceAccount that may read everything, with
 * the API server's audit log proving it only listed and never touched a Secret or ConfigMap; then a twin
 * built from the snapshot file on a second cluster, compared with the source workload by workload; then
 * `nuo whatif run`, against the source cluster and against a kubectl dump with known blockers, its report
 * checked for the PDBs that held drains and why, and the nodes that did not finish and why.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  AppsV1Api,
  CoreV1Api,
  PolicyV1Api,
  RbacAuthorizationV1Api,
  SchedulingV1Api,
  type V1Deployment,
  type V1StatefulSet,
} from '@kubernetes/client-node';
import { stringify } from 'yaml';
import type { RunOutput } from '../../src/cli/whatif-run.ts';
import { mergePatch } from '../../src/kube/patch.ts';
import { PooledKubeConfig } from '../../src/kube/pooled-kubeconfig.ts';
import { readAuditLog } from '../../src/sim/cluster/audit.ts';
import { type LocalCluster, startCluster } from '../../src/sim/cluster/cluster.ts';
import { applyPolicy, installPolicyCrd } from '../../src/sim/policies.ts';
import { applyTwin, makePodUnready } from '../../src/sim/whatif-twin.ts';
import { daemonSet, deployment, waitAvailable } from '../../src/sim/workload.ts';
import { pollUntil } from '../../src/util/poll.ts';
import { readSnapshotFiles } from '../../src/whatif/parse.ts';
import { clusterSources, readSnapshotFrom } from '../../src/whatif/read-cluster.ts';
import { type Snapshot, SnapshotCollector } from '../../src/whatif/snapshot.ts';
import { buildTwin } from '../../src/whatif/twin.ts';
import { livePods, nodeZones, type PodStanding, podStandings } from '../../src/whatif/workloads.ts';

const READER = 'system:serviceaccount:default:whatif-reader';
const NS = 'shop';
const ZONE = 'topology.kubernetes.io/zone';
const nuoBin = fileURLToPath(new URL('../../bin/nuo.js', import.meta.url));

/** Clusters started here, stopped after the file (and their logs printed if a test failed). */
const clusters: LocalCluster[] = [];
let failed = false;
afterEach((t) => {
  if ((t as { passed?: boolean }).passed === false) failed = true;
});
after(async () => {
  for (const c of clusters) {
    if (failed) process.stderr.write(`\n=== ${c.dir} logs (a test failed) ===\n${c.logTails(60)}\n`);
    await c.stop();
  }
});

async function cluster(options: Parameters<typeof startCluster>[0]): Promise<LocalCluster> {
  const c = await startCluster(options);
  clusters.push(c);
  return c;
}

/** Six nodes over zones a, b, c (node-5 cordoned), and the workloads a rollout would meet. */
async function buildSource(source: LocalCluster): Promise<void> {
  const kc = source.kubeconfig;
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  const policy = kc.makeApiClient(PolicyV1Api);
  await core.patchNode({ name: 'node-5', body: { spec: { unschedulable: true } } }, mergePatch);
  await core.createNamespace({ body: { metadata: { name: NS, labels: { team: 'web' } } } });
  await kc
    .makeApiClient(SchedulingV1Api)
    .createPriorityClass({ body: { metadata: { name: 'high' }, value: 1000 } });
  await pollUntil(`default ServiceAccount in ${NS}`, () =>
    core.readNamespacedServiceAccount({ name: 'default', namespace: NS }).then(() => true),
  );
  await core.createNamespacedSecret({
    namespace: NS,
    body: { metadata: { name: 'db-password' }, stringData: { password: 'hunter2' } },
  });
  const web: V1Deployment = deployment(NS, 'web', 6);
  const webSpec = web.spec?.template.spec;
  if (!webSpec?.topologySpreadConstraints?.[0]) throw new Error('the demo Deployment has no spread');
  webSpec.topologySpreadConstraints[0].whenUnsatisfiable = 'DoNotSchedule';
  webSpec.priorityClassName = 'high';
  webSpec.containers[0] = {
    ...webSpec.containers[0],
    name: 'web',
    image: 'registry.internal/web:1',
    env: [{ name: 'DB_PASSWORD', valueFrom: { secretKeyRef: { name: 'db-password', key: 'password' } } }],
  };
  await apps.createNamespacedDeployment({ namespace: NS, body: web });
  await policy.createNamespacedPodDisruptionBudget({
    namespace: NS,
    body: { metadata: { name: 'web' }, spec: { minAvailable: 5, selector: { matchLabels: { app: 'web' } } } },
  });
  const db = deployment(NS, 'db', 3);
  const dbSet: V1StatefulSet = {
    metadata: { name: 'db', namespace: NS, labels: { app: 'db' } },
    spec: {
      replicas: 3,
      serviceName: 'db',
      podManagementPolicy: 'Parallel',
      selector: { matchLabels: { app: 'db' } },
      template: {
        ...(db.spec?.template ?? {}),
        spec: {
          ...(db.spec?.template.spec ?? { containers: [] }),
          topologySpreadConstraints: [
            {
              maxSkew: 1,
              topologyKey: ZONE,
              whenUnsatisfiable: 'DoNotSchedule',
              labelSelector: { matchLabels: { app: 'db' } },
            },
          ],
          affinity: {
            podAntiAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: [
                { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: { app: 'db' } } },
              ],
            },
          },
        },
      },
    },
  };
  await apps.createNamespacedStatefulSet({ namespace: NS, body: dbSet });
  await policy.createNamespacedPodDisruptionBudget({
    namespace: NS,
    body: { metadata: { name: 'db' }, spec: { maxUnavailable: 1, selector: { matchLabels: { app: 'db' } } } },
  });
  await apps.createNamespacedDaemonSet({ namespace: NS, body: daemonSet(NS, 'logs') });
  await installPolicyCrd(source);
  await applyPolicy(source, 'all', { maxUnavailable: 1 });
  await waitAvailable(apps, NS, 'web');
  await pollUntil('db and logs to be ready', async () => {
    const s = await apps.readNamespacedStatefulSet({ name: 'db', namespace: NS });
    const d = await apps.readNamespacedDaemonSet({ name: 'logs', namespace: NS });
    return s.status?.readyReplicas === 3 && d.status?.numberReady === 6 ? true : undefined;
  });
  // One web replica fails its readiness probe: the PDB (5 of 6) then allows no disruption.
  const pods = await core.listNamespacedPod({ namespace: NS, labelSelector: 'app=web' });
  const victim = pods.items.find((p) => p.spec?.nodeName === 'node-0') ?? pods.items[0];
  await makePodUnready(source, NS, victim?.metadata?.name ?? '');
  await pollUntil('the web PDB to allow no disruption', async () => {
    const pdb = await policy.readNamespacedPodDisruptionBudget({ name: 'web', namespace: NS });
    return pdb.status?.disruptionsAllowed === 0 && pdb.status.currentHealthy === 5 ? true : undefined;
  });
}

/** A service account allowed to get, list and watch everything, Secrets included: the audit log says what it did. */
async function readerKubeconfig(source: LocalCluster): Promise<string> {
  const rbac = source.kubeconfig.makeApiClient(RbacAuthorizationV1Api);
  await rbac.createClusterRole({
    body: {
      metadata: { name: 'whatif-reader' },
      rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['get', 'list', 'watch'] }],
    },
  });
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name: 'whatif-reader' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'whatif-reader' },
      subjects: [{ kind: 'ServiceAccount', name: 'whatif-reader', namespace: 'default' }],
    },
  });
  return (await source.serviceAccountKubeconfig('default', 'whatif-reader')).path;
}

function nuo(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return nuoWithin(120_000, ...args);
}

function nuoWithin(
  timeoutMs: number,
  ...args: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [nuoBin, ...args],
      { timeout: timeoutMs, maxBuffer: 64 * 2 ** 20 },
      (err, stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr });
      },
    );
  });
}

/** A workload's placement class: how many pods, placed, Ready and unready, in which zones. */
function classes(s: Snapshot): Record<string, object> {
  const zones = nodeZones(s);
  const out: Record<string, object> = {};
  for (const [key, st] of podStandings(s)) {
    const { pods, scheduled, ready, unready, zones: placed } = st as PodStanding;
    const unreadyZones = st.unreadyNodes.map((n) => zones.get(n) ?? '?').sort();
    out[key] = { pods, scheduled, ready, unready, zones: placed, unreadyZones };
  }
  return out;
}

/** Per workload, the nodes of its placed pods, and of its unready ones. */
function placements(s: Snapshot): Record<string, { nodes: string[]; unready: string[] }> {
  const standings = podStandings(s);
  const out: Record<string, { nodes: string[]; unready: string[] }> = {};
  for (const [key, pods] of livePods(s))
    out[key] = {
      nodes: pods.flatMap((p) => p.spec.nodeName ?? []).sort(),
      unready: standings.get(key)?.unreadyNodes ?? [],
    };
  return out;
}

const pdbStatus = (s: Snapshot) =>
  Object.fromEntries(s.pdbs.map((p) => [p.metadata.name, p.status.disruptionsAllowed]));

const nodeClasses = (s: Snapshot) =>
  s.nodes.map((n) => ({
    name: n.metadata.name,
    zone: n.metadata.labels?.[ZONE],
    unschedulable: n.spec.unschedulable ?? false,
    allocatable: n.status.allocatable,
    taints: (n.spec.taints ?? []).filter((t) => !t.key.startsWith('node.kubernetes.io/')),
  }));

const dir = mkdtempSync(join(tmpdir(), 'nuo-whatif-test-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let snapshotFile = '';
let source: Snapshot;
/** The source cluster, kept up for the prediction against it, and its reader's kubeconfig. */
let live: { cluster: LocalCluster; kubeconfig: string } | undefined;

test('nuo whatif snapshot reads the cluster with list requests only, never a Secret or ConfigMap, and keeps no secret', async () => {
  const src = await cluster({ nodes: 6, zones: 3, audit: { users: [READER] } });
  await buildSource(src);
  const kubeconfig = await readerKubeconfig(src);
  const r = await nuo('whatif', 'snapshot', `--kubeconfig=${kubeconfig}`);
  assert.equal(r.code, 0, r.stderr);
  snapshotFile = join(dir, 'cluster.yaml');
  writeFileSync(snapshotFile, r.stdout);
  assert.match(r.stderr, /snapshot of context .*: 6 nodes, 1[0-9] pods, \d+ owners, 2 PDBs/);
  assert.ok(!r.stdout.includes('hunter2'), 'no Secret value');
  assert.ok(r.stdout.includes('image: registry.internal/web:1'), 'a snapshot keeps images as they are');
  assert.ok(!r.stdout.includes('DB_PASSWORD') && !r.stdout.includes('secretKeyRef'), 'no env');

  source = readSnapshotFiles(snapshotFile).snapshot;
  // Pages of 2 (of 500 in the CLI): the API server's continue tokens carry the read to the end.
  const reader = new PooledKubeConfig();
  reader.loadFromFile(kubeconfig);
  const paged = await readSnapshotFrom(clusterSources(reader), 2);
  await reader.close();
  assert.deepEqual(paged.snapshot, source, 'read in pages of 2, the same snapshot');
  assert.deepEqual(pdbStatus(source), { db: 1, web: 0 });
  assert.equal(source.updatePolicies[0]?.metadata.name, 'all');
  assert.deepEqual(
    source.nodes.filter((n) => n.spec.unschedulable).map((n) => n.metadata.name),
    ['node-5'],
  );

  const events = await pollUntil(
    "the reader's pod list in the audit log",
    async () => {
      const all = await readAuditLog(src.auditLogPath ?? '', READER);
      return all.some((e) => e.objectRef?.resource === 'pods' && e.verb === 'list') ? all : undefined;
    },
    { timeoutMs: 15_000, intervalMs: 250 },
  );
  const verbs = new Set(events.map((e) => e.verb));
  assert.deepEqual(
    [...verbs].filter((v) => !['get', 'list', 'watch'].includes(v)),
    [],
    'reads only',
  );
  const resources = new Set(events.flatMap((e) => (e.objectRef?.resource ? [e.objectRef.resource] : [])));
  assert.ok(!resources.has('secrets') && !resources.has('configmaps'), [...resources].join(', '));
  assert.deepEqual([...resources].sort(), [
    'daemonsets',
    'deployments',
    'jobs',
    'namespaces',
    'nodes',
    'plans',
    'poddisruptionbudgets',
    'pods',
    'priorityclasses',
    'replicasets',
    'statefulsets',
    'updatepolicies',
  ]);
  assert.ok(
    events.filter((e) => e.verb === 'list').every((e) => e.responseStatus?.code !== 403),
    'every list was allowed',
  );
  const podPages = events.filter((e) => e.objectRef?.resource === 'pods').map((e) => e.requestURI);
  assert.ok(
    podPages.some((uri) => /limit=500/.test(uri)),
    'the CLI asks for pages of 500',
  );
  // 15 pods in pages of 2: a first request, then 7 with the token the page before returned.
  assert.equal(
    podPages.filter((uri) => /limit=2&continue=|continue=[^&]+&limit=2/.test(uri)).length,
    7,
    podPages.join('\n'),
  );
  live = { cluster: src, kubeconfig };
});

test("nuo whatif run against a live cluster rolls its twin under a policy given on the command line, and predicts that web's PDB, allowing no disruption, keeps the rollout from finishing", async () => {
  assert.ok(live, 'the snapshot test ran');
  // The source's policy soaks each node 30 s (the default) and allows one node down, which the cordoned
  // node-5 takes for good: this one soaks 1 s and allows two, so drains begin within the run.
  const policies = join(dir, 'policies.yaml');
  writeFileSync(
    policies,
    stringify({
      apiVersion: 'nuo.dev/v1alpha1',
      kind: 'UpdatePolicy',
      metadata: { name: 'fast' },
      spec: { maxUnavailable: 2, reboot: { soak: '1s' } },
    }),
  );
  // web (6 replicas on the 5 schedulable nodes, one unready) is held by its PDB at 5 of 6: no healthy
  // web pod may be evicted, so a node holding one can never drain. The run meets one within its minute:
  // at most two nodes hold no healthy web pod.
  const r = await nuoWithin(
    240_000,
    'whatif',
    'run',
    `--kubeconfig=${live.kubeconfig}`,
    `--policies=${policies}`,
    '--reboot-time=1s',
    '--timeout=60s',
    '-o',
    'json',
  );
  await live.cluster.stop();
  clusters.splice(clusters.indexOf(live.cluster), 1);
  const report = JSON.parse(r.stdout) as RunOutput;
  assert.equal(report.finished, false, 'the rollout cannot finish');
  assert.equal(r.code, 3, `unfinished: exit code 3; ${r.stderr}`);
  assert.match(r.stderr, /rolling the twin of context .* \(each host down 1 s, at most 60 s\)/);
  assert.deepEqual(
    report.nodes.map((n) => [n.name, n.pool]),
    [0, 1, 2, 3, 4, 5].map((i) => [`node-${i}`, 'fast']),
    "every node, in the pool of the policy given rather than the snapshot's",
  );
  assert.ok(
    report.nodes.some((n) => n.attempts.length > 0),
    'the operator rolled the twin',
  );
  const web = report.drainWaits.filter((w) => w.pdb === `${NS}/web`);
  assert.ok(web.length > 0, `a drain waited on web's PDB: ${JSON.stringify(report.drainWaits)}`);
  for (const w of report.drainWaits) assert.match(w.pdb, new RegExp(`^${NS}/(web|db)$`));
  assert.ok(report.stuck.length > 0, 'nodes left unfinished, each saying why');
  for (const s of report.stuck)
    for (const w of report.drainWaits.filter((w) => w.node === s.node))
      assert.ok(
        s.why.includes(`drain waited on PDB ${w.pdb} (${w.refusals} eviction(s) refused): ${w.why}`),
        s.node,
      );
  // A drain whose web pod was the unready one goes on (an unhealthy pod may be evicted); one holding a
  // healthy web pod never does: the rollout stops there, the node saying so.
  assert.ok(
    report.stuck.some((s) => s.why.some((w) => w.includes(`waiting on ${NS}/web`))),
    `a node left draining, waiting on web's PDB: ${JSON.stringify(report.stuck)}`,
  );
  assert.deepEqual(report.violations, []);
});

test('the twin of the snapshot stands as the source did: nodes, placement classes, unready replicas, PDB status; NotReady nodes stay so', async () => {
  assert.ok(source, 'the snapshot test ran');
  const twinCluster = await cluster({});
  const twin = buildTwin(source);
  const result = await applyTwin(twinCluster, twin, source, { timeoutMs: 240_000 });
  assert.deepEqual(result.differences, []);
  assert.equal(result.unready.length, 1);
  const read = await readSnapshotFrom(clusterSources(twinCluster.kubeconfig));
  const copy = read.snapshot;
  assert.deepEqual(nodeClasses(copy), nodeClasses(source));
  const sourceClasses = classes(source);
  assert.deepEqual(
    Object.keys(sourceClasses)
      .filter((k) => k.startsWith(`${NS}/`))
      .sort(),
    [`${NS}/DaemonSet/logs`, `${NS}/Deployment/web`, `${NS}/StatefulSet/db`],
  );
  for (const key of Object.keys(sourceClasses).filter((k) => k.startsWith(`${NS}/`)))
    assert.deepEqual(classes(copy)[key], sourceClasses[key], key);
  assert.deepEqual(pdbStatus(copy), pdbStatus(source));
  // Seeds: each pod on its snapshot node, the unready ones too, the Deployment's under one ReplicaSet.
  for (const key of [`${NS}/Deployment/web`, `${NS}/StatefulSet/db`])
    assert.deepEqual(placements(copy)[key], placements(source)[key], `${key} on the same nodes`);
  const replicaSetsOfWeb = (s: Snapshot) =>
    s.workloads
      .filter((w) => w.kind === 'ReplicaSet' && w.metadata.ownerReferences?.some((o) => o.name === 'web'))
      .map((w) => w.metadata.name);
  assert.deepEqual(
    replicaSetsOfWeb(copy),
    replicaSetsOfWeb(source),
    "the Deployment adopted the source's ReplicaSet",
  );
  const logsNodes = (s: Snapshot) =>
    s.pods
      .filter((p) => p.metadata.name.startsWith('logs-'))
      .map((p) => p.spec.nodeName)
      .sort();
  assert.deepEqual(logsNodes(copy), logsNodes(source), 'a DaemonSet pod on every node, the cordoned one too');
  assert.deepEqual(
    copy.updatePolicies.map((p) => p.spec),
    source.updatePolicies.map((p) => p.spec),
  );
  assert.ok(
    copy.pods.every((p) => p.spec.containers.every((c) => c.image !== 'registry.internal/web:1')),
    'images replaced',
  );

  // A pod the twin cannot place ends the wait, naming its workload and the scheduler's reason.
  const c = new SnapshotCollector();
  c.add({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'gpu' } }, 'test');
  c.add(
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'trainer', namespace: 'gpu' },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: 'trainer' } },
        template: {
          metadata: { labels: { app: 'trainer' } },
          spec: { nodeSelector: { gpu: 'true' }, containers: [{ name: 't' }] },
        },
      },
    },
    'test',
  );
  c.add(
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'trainer-1',
        namespace: 'gpu',
        labels: { app: 'trainer' },
        ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'trainer', controller: true }],
      },
      spec: { nodeName: 'node-0', containers: [{ name: 't' }] },
      status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
    },
    'test',
  );
  const unplaceable = c.finish();
  await assert.rejects(
    applyTwin(twinCluster, buildTwin(unplaceable), unplaceable, { timeoutMs: 15_000 }),
    /the twin did not stand as its snapshot within 15 s.*\n {2}gpu\/Deployment\/trainer: 1 of 1 pods, 0 of 1 placed, 0 Ready; trainer-\S+ is not placed \(Unschedulable: 0\/6 nodes are available: .*node affinity\/selector/s,
  );

  // A node NotReady in the snapshot is NotReady in the twin, and its controller taints it so.
  const d = new SnapshotCollector();
  d.add(
    {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'down-0', labels: { [ZONE]: 'zone-d' } },
      status: { conditions: [{ type: 'Ready', status: 'Unknown', reason: 'NodeStatusUnknown' }] },
    },
    'test',
  );
  const down = d.finish();
  await applyTwin(twinCluster, buildTwin(down), down, { timeoutMs: 60_000 });
  const core = twinCluster.kubeconfig.makeApiClient(CoreV1Api);
  const node = await pollUntil(
    'down-0 to be tainted not-ready',
    async () => {
      const n = await core.readNode({ name: 'down-0' });
      return n.spec?.taints?.some((t) => t.key === 'node.kubernetes.io/not-ready') ? n : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 500 },
  );
  assert.equal(node.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'False');
});

test('nuo whatif twin stands the snapshot up on a local cluster, prints a KUBECONFIG and stops on Ctrl-C', async () => {
  assert.ok(snapshotFile, 'the snapshot test ran');
  const child = spawn(
    process.execPath,
    [nuoBin, 'whatif', 'twin', '--from', snapshotFile, '--timeout', '4m'],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => {
    stdout += c.toString();
  });
  child.stderr.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  const gone = new AbortController();
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      gone.abort(new Error(`nuo whatif twin exited ${code}: ${stderr}`));
      resolve(code);
    }),
  );
  try {
    const kubeconfig = await pollUntil(
      'nuo whatif twin to print its KUBECONFIG',
      () => /export KUBECONFIG=(\S+)/.exec(stdout)?.[1],
      { timeoutMs: 300_000, intervalMs: 500, signal: gone.signal },
    );
    assert.match(
      stdout,
      /^Twin of .*cluster\.yaml up in [\d.]+ s: 6 nodes, 15 pods, .*; 1 pods made unready as in the snapshot\.$/m,
    );
    assert.doesNotMatch(stdout, /Differs from the snapshot/);
    const kc = new PooledKubeConfig();
    kc.loadFromFile(kubeconfig);
    const nodes = await kc.makeApiClient(CoreV1Api).listNode();
    assert.equal(nodes.items.length, 6);
    const pdb = await kc
      .makeApiClient(PolicyV1Api)
      .readNamespacedPodDisruptionBudget({ name: 'web', namespace: NS });
    assert.equal(pdb.status?.disruptionsAllowed, 0);
    await kc.close();
    child.kill('SIGINT');
    assert.equal(await exited, 0, stderr);
    assert.match(stderr, /stopping the twin…/);
    assert.equal(existsSync(kubeconfig), false, "the twin's directory is removed");
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
});

/**
 * Nodes 0-3 and 5 in pool main, node-4 in none, node-6 NotReady alone in pool down; api pinned to node-1
 * under a PDB that needs both its pods; a bare pod on node-0; a pod on node-5 that asks not to be
 * disrupted.
 */
function blockedDump(dir: string): void {
  const pools = ['main', 'main', 'main', 'main', 'other', 'main', 'down'];
  const nodes = pools.map((pool, i) => ({
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: `node-${i}`,
      labels: { [ZONE]: `zone-${i % 2}`, 'kubernetes.io/hostname': `node-${i}`, pool },
    },
    status: {
      capacity: { cpu: '8', memory: '32Gi', pods: '110' },
      allocatable: { cpu: '8', memory: '32Gi', pods: '110' },
      conditions: [{ type: 'Ready', status: pool === 'down' ? 'Unknown' : 'True' }],
    },
  }));
  const owned = (app: string, name: string, node: string, annotations?: Record<string, string>) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: 'shop',
      labels: { app },
      ...(annotations ? { annotations } : {}),
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: app, controller: true }],
    },
    spec: { nodeName: node, containers: [{ name: app, image: `registry.internal/${app}:1` }] },
    status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
  });
  const pinned = (app: string, node: string, replicas: number, annotations?: Record<string, string>) => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: app, namespace: 'shop' },
    spec: {
      replicas,
      selector: { matchLabels: { app } },
      template: {
        metadata: { labels: { app }, ...(annotations ? { annotations } : {}) },
        spec: {
          nodeSelector: { 'kubernetes.io/hostname': node },
          containers: [{ name: app, image: `registry.internal/${app}:1` }],
        },
      },
    },
  });
  const hold = { 'nuo.dev/do-not-disrupt': 'true' };
  const items = [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop' } },
    pinned('api', 'node-1', 2),
    {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name: 'api', namespace: 'shop' },
      spec: { minAvailable: 2, selector: { matchLabels: { app: 'api' } } },
      status: { disruptionsAllowed: 0 },
    },
    owned('api', 'api-1', 'node-1'),
    owned('api', 'api-2', 'node-1'),
    pinned('batch', 'node-5', 1, hold),
    owned('batch', 'batch-1', 'node-5', hold),
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'debug', namespace: 'shop' },
      spec: { nodeName: 'node-0', containers: [{ name: 'sh', image: 'busybox' }] },
      status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
    },
    {
      apiVersion: 'nuo.dev/v1alpha1',
      kind: 'UpdatePolicy',
      metadata: { name: 'main' },
      spec: {
        nodeSelector: { matchLabels: { pool: 'main' } },
        maxUnavailable: 1,
        drain: { timeout: '5s' },
        reboot: { soak: '1s' },
      },
    },
    {
      apiVersion: 'nuo.dev/v1alpha1',
      kind: 'UpdatePolicy',
      metadata: { name: 'down' },
      spec: { nodeSelector: { matchLabels: { pool: 'down' } }, maxUnavailable: 1 },
    },
  ];
  mkdirSync(dir);
  writeFileSync(join(dir, 'nodes.json'), JSON.stringify({ apiVersion: 'v1', kind: 'List', items: nodes }));
  writeFileSync(
    join(dir, 'workloads.yaml'),
    stringify({ apiVersion: 'v1', kind: 'List', items }, { aliasDuplicateObjects: false }),
  );
}

test('nuo whatif run --from a dump directory, twice as fast, names the blocking PDB and the nodes that cannot finish: undrainable, held, NotReady, in no pool', async () => {
  const dump = join(dir, 'blocked');
  blockedDump(dump);
  const svg = join(dir, 'timeline.svg');
  const r = await nuo(
    'whatif',
    'run',
    '--from',
    dump,
    '--reboot-time=1s',
    '--return-time=1s',
    '--speed=2',
    '--timeout=60s',
    '-o',
    'json',
    `--svg=${svg}`,
  );
  assert.equal(r.code, 3, `the rollout cannot finish: ${r.stderr}`);
  assert.match(r.stderr, /\(each host down 1 s, at most 30 s, 2× faster than real time\)/);
  const report = JSON.parse(r.stdout) as RunOutput;
  // The twin ran 30 s with every duration halved; the report reads in real-rollout time.
  assert.equal(report.speed, 2);
  assert.equal(report.rebootMs, 2000);
  assert.ok(report.elapsedMs >= 60_000, `elapsed ${report.elapsedMs} ms, mapped back`);
  const byName = new Map(report.nodes.map((n) => [n.name, n]));
  assert.deepEqual(
    report.nodes.filter((n) => n.finished).map((n) => n.name),
    ['node-2', 'node-3'],
    r.stdout,
  );
  for (const n of ['node-2', 'node-3']) {
    const line = byName.get(n);
    assert.ok(line?.startMs !== undefined && line.finishMs !== undefined && line.finishMs > line.startMs, n);
    assert.ok(
      line?.rebootMs !== undefined && line.rebootMs >= (line.drainedMs ?? Number.POSITIVE_INFINITY),
      n,
    );
  }
  assert.deepEqual(
    report.drainWaits.map((w) => [w.node, w.pdb, w.why]),
    [['node-1', 'shop/api', 'minAvailable 2 equals its 2 pod(s): it never allows a disruption']],
  );
  assert.deepEqual(
    report.stuck.map((s) => s.node),
    ['node-0', 'node-1', 'node-4', 'node-5', 'node-6'],
  );
  const why = (node: string) => report.stuck.find((s) => s.node === node)?.why.join('\n') ?? '';
  assert.match(why('node-0'), /last attempt ended: drain refused: .*shop\/debug: declares no controller/);
  assert.match(
    why('node-1'),
    /drain waited on PDB shop\/api \(\d+ eviction\(s\) refused\): minAvailable 2 equals/,
  );
  assert.match(
    why('node-1'),
    /last attempt ended: drain timed-out .*blocked by PodDisruptionBudget shop\/api/,
  );
  assert.match(why('node-4'), /pool: none — no UpdatePolicy selects it/);
  assert.match(
    why('node-5'),
    /now Pending: waiting: pod shop\/batch-\S+ has nuo\.dev\/do-not-disrupt="true"/,
  );
  assert.equal(byName.get('node-5')?.attempts.length, 0, 'never admitted');
  // Down, it fills its pool's budget of one: it is never admitted, and would not come back if it were.
  assert.match(why('node-6'), /^NotReady in the snapshot: the twin keeps it down, so it never returns\n/);
  assert.match(why('node-6'), /budget: 1 of 1 slot\(s\) in use in this pool/);
  assert.equal(byName.get('node-6')?.attempts.length, 0, 'never admitted');
  assert.deepEqual(
    report.pools.map((p) => [p.name, p.nodes, p.finished, p.finishMs]),
    [
      ['down', 1, 0, undefined],
      ['main', 5, 2, undefined],
    ],
  );
  assert.deepEqual(report.violations, []);
  const picture = readFileSync(svg, 'utf8');
  assert.equal([...picture.matchAll(/<g class="node" data-node="node-\d"/g)].length, 7);
  assert.match(picture, /data-node="node-1" data-finished="false"><title>[^<]*shop\/api/);
});
