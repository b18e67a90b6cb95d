/**
 * npm run bench:whatif-large [-- --nodes 1000 --apps 100 --replicas 100 --speed 10]
 *
 * How long `nuo whatif run` takes at scale: a source cluster of `nodes` KWOK nodes in 3 zones with `apps`
 * Deployments of `replicas` pods under PDBs (maxUnavailable 10 %) and an UpdatePolicy (maxUnavailable 10 %,
 * soak 10 s) is built on the local control plane, snapshotted with `nuo whatif snapshot -o json`, and
 * stopped; then `nuo whatif run --from` the snapshot at `--speed` (60 s reboots) stands the twin up and
 * rolls it. Publishes the wall time of each step and the predicted rollout.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { AppsV1Api, CoreV1Api, PolicyV1Api } from '@kubernetes/client-node';
import type { RunOutput } from '../src/cli/whatif-run.ts';
import { startCluster } from '../src/sim/cluster/cluster.ts';
import { applyPolicy, installPolicyCrd } from '../src/sim/policies.ts';
import { deployment, waitAvailable } from '../src/sim/workload.ts';
import { formatMs } from '../src/whatif/report-table.ts';
import { publish } from './report.ts';

const { values } = parseArgs({
  options: {
    nodes: { type: 'string', default: '1000' },
    apps: { type: 'string', default: '100' },
    replicas: { type: 'string', default: '100' },
    speed: { type: 'string', default: '10' },
  },
  strict: true,
});
const [nodes, apps, replicas, speed] = [values.nodes, values.apps, values.replicas, values.speed].map(
  Number,
) as [number, number, number, number];
const REBOOT = '60s';
const nuoBin = fileURLToPath(new URL('../bin/nuo.js', import.meta.url));
const log = (line: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);
const dir = mkdtempSync(join(tmpdir(), 'nuo-whatif-large-'));

/** Runs the CLI; its stdout, exit code and wall time. */
function nuo(args: string[]): Promise<{ stdout: string; code: number; ms: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [nuoBin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d) => {
      for (const line of String(d).trimEnd().split('\n')) log(`  [nuo] ${line}`);
    });
    child.on('error', reject);
    child.on('close', (code) =>
      resolve({
        stdout: Buffer.concat(out).toString('utf8'),
        code: code ?? 1,
        ms: performance.now() - started,
      }),
    );
  });
}

const t0 = performance.now();
const source = await startCluster({ nodes, zones: 3, log });
const versions = source.binaries.versions;
let snapshotMs: number;
const file = join(dir, 'snapshot.json');
try {
  const kc = source.kubeconfig;
  const ns = 'shop';
  await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: ns } } });
  const appsApi = kc.makeApiClient(AppsV1Api);
  const pdbs = kc.makeApiClient(PolicyV1Api);
  for (let i = 0; i < apps; i++) {
    const name = `app-${i}`;
    await appsApi.createNamespacedDeployment({ namespace: ns, body: deployment(ns, name, replicas) });
    await pdbs.createNamespacedPodDisruptionBudget({
      namespace: ns,
      body: { metadata: { name }, spec: { maxUnavailable: '10%', selector: { matchLabels: { app: name } } } },
    });
  }
  for (let i = 0; i < apps; i++) await waitAvailable(appsApi, ns, `app-${i}`, 900_000);
  await installPolicyCrd(source);
  await applyPolicy(source, 'fleet', { maxUnavailable: '10%', reboot: { soak: '10s' } });
  log(`source stands after ${formatMs(performance.now() - t0)}`);
  const snap = await nuo(['whatif', 'snapshot', `--kubeconfig=${source.kubeconfigPath}`, '-o', 'json']);
  if (snap.code !== 0) throw new Error(`nuo whatif snapshot exited ${snap.code}`);
  writeFileSync(file, snap.stdout);
  snapshotMs = snap.ms;
} finally {
  await source.stop();
}
const run = await nuo([
  'whatif',
  'run',
  `--from=${file}`,
  `--reboot-time=${REBOOT}`,
  `--speed=${speed}`,
  '--timeout=8h',
  '--stand-timeout=15m',
  '-o',
  'json',
]);
rmSync(dir, { recursive: true, force: true });
if (run.code !== 0 && run.code !== 3) throw new Error(`nuo whatif run exited ${run.code}`);
const report = JSON.parse(run.stdout) as RunOutput;
const finished = report.nodes.filter((n) => n.finished).length;

publish({
  id: 'whatif-large',
  title: `\`nuo whatif run\` at ${nodes.toLocaleString('en')} nodes and ${(apps * replicas).toLocaleString('en')} pods`,
  body: [
    `A source of ${nodes} KWOK nodes in 3 zones, ${apps} Deployments of ${replicas} pods under PDBs (maxUnavailable 10 %) and an UpdatePolicy (maxUnavailable 10 %, soak 10 s), snapshotted and stopped; then \`nuo whatif run --from snapshot.json --reboot-time ${REBOOT} --speed ${speed}\`. The machine's 2 cores were shared with other workers' builds and tests throughout.`,
    '',
    '| step | wall time |',
    '|---|---|',
    `| \`nuo whatif snapshot -o json\` of the source | ${formatMs(snapshotMs)} |`,
    `| \`nuo whatif run\`: control plane, twin stood, rolled ×${speed}, report | ${formatMs(run.ms)} |`,
    '',
    `Predicted: ${report.finished ? `every node finished in ${formatMs(report.totalMs)}` : `${finished} of ${report.nodes.length} nodes finished by ${formatMs(report.elapsedMs)}`} (real-rollout time, ${report.waves.length} waves); safety rules broken: ${report.violations.length}.`,
  ].join('\n'),
  command: `npm run bench:whatif-large -- --nodes ${nodes} --apps ${apps} --replicas ${replicas} --speed ${speed}`,
  versions,
});
