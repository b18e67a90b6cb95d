/**
 * npm run bench:drain [-- --runs N]
 *
 * Drains one node holding 110 pods with `nuo drain` and with `kubectl drain` (built by tools/cluster,
 * same release as the control plane), alternating runs on the same cluster and workload, and prints
 * the wall-clock times and the ratio nuo/kubectl. Two workloads: no PDB (one Deployment of 110), and
 * 11 Deployments of 10 replicas each with a PDB allowing 1 disruption, so evictions are refused (429)
 * until replacements are Ready on the other nodes.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { AppsV1Api, CoreV1Api, PolicyV1Api } from '@kubernetes/client-node';
import { mergePatch } from '../src/kube/patch.ts';
import { startCluster } from '../src/sim/cluster/cluster.ts';
import { deployment, waitAvailable } from '../src/sim/workload.ts';
import { pollUntil } from '../src/util/poll.ts';
import { publish } from './report.ts';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '3' } }, strict: true });
const runs = Number(values.runs);
if (!Number.isInteger(runs) || runs < 1)
  throw new Error(`--runs must be a positive integer, got ${values.runs}`);

const TARGET = 'node-0';
const NODES = ['node-0', 'node-1', 'node-2', 'node-3'];
const nuoBin = fileURLToPath(new URL('../bin/nuo.js', import.meta.url));

const cluster = await startCluster({ nodes: NODES.length, zones: 2 });
const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
const apps = cluster.kubeconfig.makeApiClient(AppsV1Api);
const policy = cluster.kubeconfig.makeApiClient(PolicyV1Api);

const Workloads = {
  noPdb: { label: '110 pods, no PDB', apps: 1, replicas: 110, pdb: false },
  pdb: { label: '110 pods, 11 PDBs maxUnavailable=1', apps: 11, replicas: 10, pdb: true },
} as const;
type Workload = (typeof Workloads)[keyof typeof Workloads];

async function setUnschedulable(node: string, unschedulable: boolean) {
  await core.patchNode({ name: node, body: { spec: { unschedulable } } }, mergePatch);
}

let seq = 0;
/** Fills TARGET with the workload's 110 pods: every other node is cordoned while they are placed. */
async function prepare(w: Workload): Promise<string> {
  const ns = `bench-${seq++}`;
  await core.createNamespace({ body: { metadata: { name: ns } } });
  await pollUntil('default ServiceAccount', () =>
    core.readNamespacedServiceAccount({ name: 'default', namespace: ns }).then(() => true),
  );
  for (const n of NODES) await setUnschedulable(n, n !== TARGET);
  for (let i = 0; i < w.apps; i++) {
    await apps.createNamespacedDeployment({ namespace: ns, body: deployment(ns, `app-${i}`, w.replicas) });
  }
  for (let i = 0; i < w.apps; i++) await waitAvailable(apps, ns, `app-${i}`);
  if (w.pdb) {
    for (let i = 0; i < w.apps; i++) {
      const name = `app-${i}`;
      await policy.createNamespacedPodDisruptionBudget({
        namespace: ns,
        body: { metadata: { name }, spec: { maxUnavailable: 1, selector: { matchLabels: { app: name } } } },
      });
      await pollUntil(`PDB ${name} ready`, async () => {
        const p = await policy.readNamespacedPodDisruptionBudget({ name, namespace: ns });
        return p.status?.disruptionsAllowed === 1 ? true : undefined;
      });
    }
  }
  for (const n of NODES) if (n !== TARGET) await setUnschedulable(n, false);
  const onTarget = await core.listNamespacedPod({ namespace: ns, fieldSelector: `spec.nodeName=${TARGET}` });
  if (onTarget.items.length !== 110)
    throw new Error(`expected 110 pods on ${TARGET}, got ${onTarget.items.length}`);
  return ns;
}

async function cleanup(ns: string) {
  await setUnschedulable(TARGET, false);
  await core.deleteNamespace({ name: ns });
  await pollUntil(
    `namespace ${ns} deleted`,
    async () => {
      const list = await core.listNamespace();
      return list.items.some((n) => n.metadata?.name === ns) ? undefined : true;
    },
    { timeoutMs: 120_000, intervalMs: 250 },
  );
}

function timed(command: string, args: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    let output = '';
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (d) => {
      output += d;
    });
    child.stderr.on('data', (d) => {
      output += d;
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      if (code === 0) resolve(ms);
      else reject(new Error(`${command} ${args.join(' ')} exited ${code}:\n${output.slice(-2000)}`));
    });
  });
}

const tools = {
  nuo: () =>
    timed(process.execPath, [
      nuoBin,
      'drain',
      TARGET,
      '--ignore-daemonsets',
      '--timeout=10m',
      `--kubeconfig=${cluster.kubeconfigPath}`,
    ]),
  kubectl: () =>
    timed(cluster.binaries.path.kubectl, [
      'drain',
      TARGET,
      '--ignore-daemonsets',
      '--timeout=10m',
      `--kubeconfig=${cluster.kubeconfigPath}`,
    ]),
} as const;

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
};

const results: string[] = [];
try {
  for (const w of Object.values(Workloads)) {
    const times: Record<keyof typeof tools, number[]> = { nuo: [], kubectl: [] };
    for (let run = 0; run < runs; run++) {
      // Alternate which tool goes first so neither always meets a warmer cluster.
      const order = (run % 2 === 0 ? ['nuo', 'kubectl'] : ['kubectl', 'nuo']) as Array<keyof typeof tools>;
      for (const tool of order) {
        const ns = await prepare(w);
        const ms = await tools[tool]();
        times[tool].push(ms);
        process.stderr.write(`  ${w.label}: run ${run + 1} ${tool} ${(ms / 1000).toFixed(2)} s\n`);
        await cleanup(ns);
      }
    }
    const nuo = median(times.nuo);
    const kubectl = median(times.kubectl);
    results.push(
      `| ${w.label} | ${times.nuo.map((t) => (t / 1000).toFixed(2)).join(', ')} | ${times.kubectl
        .map((t) => (t / 1000).toFixed(2))
        .join(
          ', ',
        )} | ${(nuo / 1000).toFixed(2)} | ${(kubectl / 1000).toFixed(2)} | ${(nuo / kubectl).toFixed(2)} |`,
    );
  }
} finally {
  await cluster.stop();
}

publish({
  id: 'drain',
  title: 'Drain of one node with 110 pods: nuo against kubectl',
  versions: cluster.binaries.versions,
  command: `npm run bench:drain -- --runs ${runs}`,
  body: [
    `${runs} alternating run(s) per tool and workload on one local cluster; times from the first eviction request to the`,
    'last pod gone.',
    '',
    '| workload | nuo runs (s) | kubectl runs (s) | nuo median (s) | kubectl median (s) | nuo/kubectl |',
    '|---|---|---|---|---|---|',
    ...results,
  ].join('\n'),
});
