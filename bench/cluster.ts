/**
 * npm run bench:cluster [-- --nodes N --starts S]
 *
 * Figures for the local control plane: the warm build check, harness start-up time (S starts with no
 * nodes), the time for N KWOK nodes (default 1,000) to become Ready, and the control plane's peak memory
 * (summed resident set of etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok, sampled
 * from /proc every 250 ms).
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { type LocalCluster, startCluster } from '../src/sim/cluster/cluster.ts';
import { ensureClusterBinaries } from '../tools/cluster/build.ts';

const { values } = parseArgs({
  options: { nodes: { type: 'string', default: '1000' }, starts: { type: 'string', default: '3' } },
  strict: true,
});
const nodes = Number(values.nodes);
const starts = Number(values.starts);
if (!Number.isInteger(nodes) || nodes < 1)
  throw new Error(`--nodes must be a positive integer, got ${values.nodes}`);
if (!Number.isInteger(starts) || starts < 1)
  throw new Error(`--starts must be a positive integer, got ${values.starts}`);

function rssMiB(pid: number | undefined): number {
  if (!pid) return 0;
  try {
    const kb = readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmRSS:\s+(\d+) kB/m)?.[1];
    return kb ? Number(kb) / 1024 : 0;
  } catch {
    return 0;
  }
}

/** Samples every component's RSS; returns a function that stops sampling and reports the peaks. */
function sampleMemory(cluster: LocalCluster) {
  const peak: Record<string, number> = {};
  let peakTotal = 0;
  const timer = setInterval(() => {
    let total = 0;
    for (const c of Object.values(cluster.components)) {
      const mib = rssMiB(c.pid);
      peak[c.name] = Math.max(peak[c.name] ?? 0, mib);
      total += mib;
    }
    peakTotal = Math.max(peakTotal, total);
  }, 250);
  return () => {
    clearInterval(timer);
    return { peak, peakTotal };
  };
}

const t0 = performance.now();
const binaries = await ensureClusterBinaries();
const warmBuildMs = performance.now() - t0;

const startTimes: number[] = [];
for (let i = 0; i < starts; i++) {
  const t = performance.now();
  const c = await startCluster();
  startTimes.push(performance.now() - t);
  await c.stop();
}

const cluster = await startCluster();
const stopSampling = sampleMemory(cluster);
let readyMs: number;
let memory: ReturnType<ReturnType<typeof sampleMemory>>;
try {
  const t = performance.now();
  await cluster.addNodes(
    Array.from({ length: nodes }, (_, i) => ({
      name: `node-${i}`,
      zone: `zone-${String.fromCharCode(97 + (i % 3))}`,
    })),
  );
  readyMs = performance.now() - t;
} finally {
  await new Promise((r) => setTimeout(r, 1000));
  memory = stopSampling();
  await cluster.stop();
}

const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
process.stdout.write(
  [
    '',
    `Local control plane — Kubernetes ${binaries.versions.kubernetes}, etcd ${binaries.versions.etcd}, KWOK ${binaries.versions.kwok}`,
    '',
    '| figure | value |',
    '|---|---|',
    `| warm build check (all binaries cached) | ${s(warmBuildMs)} |`,
    `| harness start-up, no nodes (${starts} starts) | ${startTimes.map(s).join(', ')} |`,
    `| ${nodes} KWOK nodes created and Ready | ${s(readyMs)} |`,
    `| control plane peak RSS, total (sampled) | ${memory.peakTotal.toFixed(0)} MiB |`,
    ...Object.entries(memory.peak).map(([name, mib]) => `| peak RSS ${name} | ${mib.toFixed(0)} MiB |`),
    '',
    `reproduce: npm run bench:cluster -- --nodes ${nodes} --starts ${starts}`,
    '',
  ].join('\n'),
);
