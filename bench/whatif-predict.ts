/**
 * npm run bench:whatif [-- --speeds 1,10 --sources spread,stuck,unready]
 *
 * Does `nuo whatif run` predict? Builds small "source" clusters on the local control plane (workload
 * mixes under PDBs, zones, an undrainable pod, a pod no controller recreates, unhealthy replicas), runs
 * `nuo whatif run` against each (the real CLI: snapshot, twin, rollout of the twin) at each speed, then
 * rolls the source itself the same way (the same operator, simulated hosts and observations) and compares:
 * total time, each node's finish, the nodes that never finished and the PDBs that held them.
 */
import { parseArgs } from 'node:util';
import { AppsV1Api, CoreV1Api, PolicyV1Api, type V1PodDisruptionBudgetSpec } from '@kubernetes/client-node';
import type { UpdatePolicySpec } from '../src/api/update-policy.ts';
import type { RunOutput } from '../src/cli/whatif-run.ts';
import { type LocalCluster, startCluster } from '../src/sim/cluster/cluster.ts';
import { applyPolicy, installPolicyCrd } from '../src/sim/policies.ts';
import { OPERATOR_USER, rollCluster } from '../src/sim/whatif-run.ts';
import { makePodUnready } from '../src/sim/whatif-twin.ts';
import { daemonSet, deployment, undrainablePod, waitAvailable } from '../src/sim/workload.ts';
import { pollUntil } from '../src/util/poll.ts';
import { buildReport, type WhatifReport } from '../src/whatif/report.ts';
import { formatMs } from '../src/whatif/report-table.ts';
import { publish } from './report.ts';
import { whatifRun } from './whatif-cli.ts';
import { type Comparison, compare } from './whatif-compare.ts';

const { values } = parseArgs({
  options: {
    speeds: { type: 'string', default: '1,10' },
    sources: { type: 'string', default: 'spread,stuck,unready' },
  },
  strict: true,
});
const speeds = (values.speeds ?? '').split(',').map(Number);
if (speeds.some((s) => !(s >= 1 && s <= 100)))
  throw new Error(`--speeds: numbers from 1 to 100, got ${values.speeds}`);

/** Each simulated host is down this long per reboot, in the source and (given as --reboot-time) the twin. */
const REBOOT_MS = 10_000;
const POLICY = 'bench';

interface App {
  name: string;
  replicas: number;
  pdb?: V1PodDisruptionBudgetSpec;
  /** Pods of it made unready for good, as replicas failing their readiness probe. */
  unready?: number;
}

interface Source {
  id: string;
  what: string;
  nodes: number;
  zones: number;
  policy: UpdatePolicySpec;
  /** How long the rollout may run: a source with stuck nodes runs to it. */
  timeoutMs: number;
  apps: App[];
  /** A pod pinned to this node whose PDB allows no disruption. */
  undrainable?: string;
  /** A pod with no controller on this node: a drain refuses it. */
  bare?: string;
}

const SOURCES: Source[] = [
  {
    id: 'spread',
    what: '5 Deployments under PDBs (maxUnavailable 1) and a DaemonSet over 3 zones; maxUnavailable 3, 1 per zone',
    nodes: 12,
    zones: 3,
    policy: { maxUnavailable: 3, maxUnavailablePerZone: 1, reboot: { soak: '5s' } },
    timeoutMs: 8 * 60_000,
    apps: ['web', 'api', 'auth', 'search', 'feed'].map((name) => ({
      name,
      replicas: 18,
      pdb: { maxUnavailable: 1 },
    })),
  },
  {
    id: 'stuck',
    what: 'a pinned pod whose PDB allows nothing, a bare pod, a Deployment with 1 of 6 replicas unready under maxUnavailable 1, a DaemonSet; 2 zones, maxUnavailable 4',
    nodes: 16,
    zones: 2,
    policy: { maxUnavailable: 4, reboot: { soak: '5s' } },
    timeoutMs: 4 * 60_000,
    apps: [
      { name: 'web', replicas: 48, pdb: { maxUnavailable: 2 } },
      { name: 'cache', replicas: 6, pdb: { maxUnavailable: 1 }, unready: 1 },
    ],
    undrainable: 'node-05',
    bare: 'node-10',
  },
  {
    id: 'unready',
    what: 'Deployments with unready replicas under minAvailable PDBs, one whose PDB needs all its pods; 2 zones, maxUnavailable 25%',
    nodes: 12,
    zones: 2,
    policy: { maxUnavailable: '25%', reboot: { soak: '5s' } },
    timeoutMs: 5 * 60_000,
    apps: [
      { name: 'shop', replicas: 40, pdb: { minAvailable: '80%' }, unready: 3 },
      { name: 'queue', replicas: 12, pdb: { minAvailable: 10 }, unready: 1 },
      { name: 'ledger', replicas: 2, pdb: { minAvailable: 2 } },
    ],
  },
];

const chosen = (values.sources ?? '').split(',');
const unknown = chosen.filter((id) => !SOURCES.some((s) => s.id === id));
if (unknown.length > 0)
  throw new Error(`--sources: unknown ${unknown.join(', ')}; known: spread, stuck, unready`);

const log = (line: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);

/** Builds the source's workloads and policy, and waits until they stand; returns its pod count. */
async function build(cluster: LocalCluster, source: Source): Promise<number> {
  const kc = cluster.kubeconfig;
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  const pdbs = kc.makeApiClient(PolicyV1Api);
  const ns = 'shop';
  await core.createNamespace({ body: { metadata: { name: ns } } });
  await pollUntil(`default ServiceAccount in ${ns}`, () =>
    core.readNamespacedServiceAccount({ name: 'default', namespace: ns }).then(() => true),
  );
  await apps.createNamespacedDaemonSet({ namespace: ns, body: daemonSet(ns, 'logs') });
  for (const app of source.apps) {
    await apps.createNamespacedDeployment({ namespace: ns, body: deployment(ns, app.name, app.replicas) });
    if (app.pdb)
      await pdbs.createNamespacedPodDisruptionBudget({
        namespace: ns,
        body: {
          metadata: { name: app.name },
          spec: { ...app.pdb, selector: { matchLabels: { app: app.name } } },
        },
      });
  }
  for (const app of source.apps) await waitAvailable(apps, ns, app.name, 300_000);
  for (const app of source.apps.filter((a) => a.unready)) {
    const pods = (await core.listNamespacedPod({ namespace: ns, labelSelector: `app=${app.name}` })).items;
    for (const p of pods.slice(0, app.unready)) await makePodUnready(cluster, ns, p.metadata?.name ?? '');
  }
  if (source.undrainable) await undrainablePod(kc, 'ledger', source.undrainable);
  if (source.bare)
    await core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name: 'debug', labels: { app: 'debug' } },
        spec: { nodeName: source.bare, containers: [{ name: 'debug', image: 'registry.example/debug:1' }] },
      },
    });
  await installPolicyCrd(cluster);
  await applyPolicy(cluster, POLICY, source.policy);
  // Stands when every PDB's status counts its pods as they are (the unready ones included).
  await pollUntil(
    'the PDBs to count the pods as they stand',
    async () => {
      const all = (await pdbs.listPodDisruptionBudgetForAllNamespaces()).items;
      return all.every(
        (p) => p.status?.observedGeneration === p.metadata?.generation && p.status?.expectedPods,
      )
        ? true
        : undefined;
    },
    { timeoutMs: 120_000, intervalMs: 500 },
  );
  const pods = (await core.listPodForAllNamespaces()).items;
  await pollUntil(
    'every pod Running',
    async () => {
      const now = (await core.listPodForAllNamespaces()).items;
      return now.every((p) => p.status?.phase === 'Running') ? true : undefined;
    },
    { timeoutMs: 120_000, intervalMs: 500 },
  );
  return pods.length;
}

/** `nuo whatif run` against the source, as a user runs it; its report and how long it took. */
async function predict(
  cluster: LocalCluster,
  source: Source,
  speed: number,
): Promise<{ report: RunOutput; wallMs: number }> {
  const started = performance.now();
  const report = await whatifRun(
    [
      `--kubeconfig=${cluster.kubeconfigPath}`,
      `--reboot-time=${REBOOT_MS}ms`,
      `--speed=${speed}`,
      `--timeout=${source.timeoutMs}ms`,
    ],
    (line) => log(`  [whatif ×${speed}] ${line}`),
  );
  return { report, wallMs: performance.now() - started };
}

interface Row {
  source: Source;
  pods: number;
  real: WhatifReport;
  predictions: {
    speed: number;
    wallMs: number;
    report: WhatifReport;
    c: Comparison;
    differences: string[];
  }[];
}

const rows: Row[] = [];
let versions: LocalCluster['binaries']['versions'] | undefined;
for (const source of SOURCES.filter((s) => chosen.includes(s.id))) {
  log(`source ${source.id}: ${source.nodes} nodes, ${source.what}`);
  const cluster = await startCluster({
    nodes: source.nodes,
    zones: source.zones,
    audit: { users: [OPERATOR_USER] },
    log,
  });
  versions = cluster.binaries.versions;
  try {
    const pods = await build(cluster, source);
    log(`source ${source.id} stands: ${pods} pods`);
    const runs: { speed: number; wallMs: number; report: RunOutput }[] = [];
    for (const speed of speeds) {
      const { report, wallMs } = await predict(cluster, source, speed);
      log(`prediction ×${speed} took ${formatMs(wallMs)}`);
      runs.push({ speed, wallMs, report });
    }
    const policy = {
      apiVersion: 'nuo.dev/v1alpha1',
      kind: 'UpdatePolicy',
      metadata: { name: POLICY },
      spec: source.policy,
    } as const;
    log(`rolling the source ${source.id} itself`);
    const observed = await rollCluster(cluster, [policy], [], {
      rebootMs: REBOOT_MS,
      timeoutMs: source.timeoutMs,
      log: (line) => log(`  [source] ${line}`),
    });
    const real = buildReport(observed);
    const predictions = runs.map((p) => ({
      ...p,
      c: compare(real, p.report),
      differences: p.report.twin.differences,
    }));
    rows.push({ source, pods, real, predictions });
  } finally {
    await cluster.stop();
  }
}

const pct = (x: number | undefined) => (x === undefined ? '-' : `${x >= 0 ? '+' : ''}${x.toFixed(1)} %`);
const set = (xs: readonly string[]) => (xs.length ? xs.join(', ') : 'none');
const table = [
  '| source | nodes · pods | speed | real last finish | predicted | error | per-node finish error (median / max) | stuck nodes same? | blocked PDBs same? | prediction took |',
  '|---|---|---|---|---|---|---|---|---|---|',
  ...rows.flatMap((r) =>
    r.predictions
      .map((p) =>
        [
          r.source.id,
          `${r.source.nodes} · ${r.pods}`,
          `×${p.speed}`,
          formatMs(p.c.real.lastFinishMs),
          formatMs(p.c.predicted.lastFinishMs),
          pct(p.c.totalErrorPct),
          p.c.finishError
            ? `${formatMs(p.c.finishError.medianMs)} / ${formatMs(p.c.finishError.maxMs)} (${p.c.finishError.nodes} nodes)`
            : '-',
          p.c.sameStuck ? 'yes' : 'no',
          p.c.sameBlockedPdbs ? 'yes' : 'no',
          formatMs(p.wallMs),
        ].join(' | '),
      )
      .map((line) => `| ${line} |`),
  ),
];
const details = rows.flatMap((r) => [
  `- **${r.source.id}** (${r.source.what}; rollout deadline ${formatMs(r.source.timeoutMs)}): real rollout ${r.real.finished ? `finished in ${formatMs(r.real.totalMs)}` : `left ${set(r.real.stuck.map((s) => s.node))} unfinished`}, blocked PDBs ${set(r.predictions[0]?.c.real.blockedPdbs ?? [])}.`,
  ...r.predictions.map(
    (p) =>
      `  ×${p.speed}: predicted stuck ${set(p.c.predicted.stuck)}, blocked PDBs ${set(p.c.predicted.blockedPdbs)}${p.differences.length ? `; twin differed: ${p.differences.join('; ')}` : ''}.`,
  ),
]);

publish({
  id: 'whatif-predict',
  title: '`nuo whatif run` against the rollout it predicts',
  body: [
    `Each source cluster is built on the local control plane and rolled for real by nuo's operator with simulated hosts (each down ${REBOOT_MS / 1000} s per reboot); before that, \`nuo whatif run --reboot-time ${REBOOT_MS / 1000}s --speed N\` predicts it from a snapshot of it. "Last finish" is the total when every node finished; a source with stuck nodes runs to its deadline. The per-node error is over the nodes that finished in both. Blocked PDBs: for each node that never finished, the PDB that refused its drain last. The machine's 2 cores were shared with other workers' builds and tests throughout.`,
    '',
    ...table,
    '',
    ...details,
  ].join('\n'),
  command: `npm run bench:whatif -- --speeds ${speeds.join(',')} --sources ${chosen.join(',')}`,
  ...(versions ? { versions } : {}),
});
