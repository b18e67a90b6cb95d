/**
 * npm run bench:cluster [-- --nodes N --starts S --lease-seconds L]
 *
 * Figures for the local control plane: the warm build check, harness start-up time (S starts with no
 * nodes), the time for N KWOK nodes (default 5,000) to be created and Ready (goal: KWOK's own CI creates
 * 5,000 nodes within 60 s), the CPU the control plane spent on it, its memory (each component's peak
 * resident set from the kernel's VmHWM, and the summed resident set sampled every 250 ms), and the
 * control plane's CPU while the N nodes only heartbeat.
 */
import { parseArgs } from 'node:util';
import { type LocalCluster, startCluster } from '../src/sim/cluster/cluster.ts';
import type { ComponentName } from '../src/sim/cluster/component-args.ts';
import { loadAverage, sampleProc } from '../src/sim/cluster/proc.ts';
import { ensureClusterBinaries } from '../tools/cluster/build.ts';
import { publish } from './report.ts';

const { values } = parseArgs({
  options: {
    nodes: { type: 'string', default: '5000' },
    starts: { type: 'string', default: '3' },
    'lease-seconds': { type: 'string', default: '40' },
  },
  strict: true,
});
const nodes = Number(values.nodes);
const starts = Number(values.starts);
const leaseSeconds = Number(values['lease-seconds']);
if (!Number.isInteger(nodes) || nodes < 1)
  throw new Error(`--nodes must be a positive integer, got ${values.nodes}`);
if (!Number.isInteger(starts) || starts < 1)
  throw new Error(`--starts must be a positive integer, got ${values.starts}`);
if (!Number.isInteger(leaseSeconds) || leaseSeconds < 10)
  throw new Error(`--lease-seconds must be an integer ≥ 10, got ${values['lease-seconds']}`);

const GOAL_MS = 60_000;
const SETTLE_MS = 40_000;
const IDLE_MS = 20_000;

/** Samples the summed resident set of all components every 250 ms; returns a function giving the peak. */
function sampleTotalRss(cluster: LocalCluster): () => number {
  let peak = 0;
  const timer = setInterval(() => {
    let total = 0;
    for (const c of Object.values(cluster.components)) total += sampleProc(c.pid)?.rssMiB ?? 0;
    peak = Math.max(peak, total);
  }, 250);
  return () => {
    clearInterval(timer);
    return peak;
  };
}

function cpuOf(cluster: LocalCluster): Record<ComponentName, number> {
  return Object.fromEntries(
    Object.values(cluster.components).map((c) => [c.name, sampleProc(c.pid)?.cpuSeconds ?? 0]),
  ) as Record<ComponentName, number>;
}

const t0 = performance.now();
const binaries = await ensureClusterBinaries();
const warmBuildMs = performance.now() - t0;

const startTimes: number[] = [];
for (let i = 0; i < starts; i++) {
  const t = performance.now();
  const c = await startCluster({ nodeLeaseDurationSeconds: leaseSeconds });
  startTimes.push(performance.now() - t);
  await c.stop();
}

const loadBefore = loadAverage();
const cluster = await startCluster({ nodeLeaseDurationSeconds: leaseSeconds });
const peakTotal = sampleTotalRss(cluster);
let timing: { createdMs: number; readyMs: number };
let cpuCreate: Record<string, number>;
let cpuIdle: Record<string, number>;
let peakRss: Record<string, number>;
let totalPeak: number;
let benchCpu: number;
try {
  const cpu0 = cpuOf(cluster);
  const self0 = process.cpuUsage();
  timing = await cluster.addNodes(
    Array.from({ length: nodes }, (_, i) => ({
      name: `node-${i}`,
      zone: `zone-${String.fromCharCode(97 + (i % 3))}`,
    })),
    // KWOK's figure: the Ready condition (the node-lifecycle controller's taint removal trails it).
    { readyOnly: true },
  );
  const self1 = process.cpuUsage(self0);
  benchCpu = (self1.user + self1.system) / 1e6;
  const cpu1 = cpuOf(cluster);
  cpuCreate = Object.fromEntries(
    Object.entries(cpu1).map(([k, v]) => [k, v - (cpu0[k as ComponentName] ?? 0)]),
  );
  // Idle: once the controllers' backlog (the node-lifecycle controller's taint updates trail the nodes by
  // tens of seconds) is done, only heartbeats (Lease renewals) and periodic work are left.
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  const cpu2 = cpuOf(cluster);
  await new Promise((r) => setTimeout(r, IDLE_MS));
  const cpu3 = cpuOf(cluster);
  cpuIdle = Object.fromEntries(
    Object.entries(cpu3).map(([k, v]) => [k, (v - (cpu2[k as ComponentName] ?? 0)) / (IDLE_MS / 1000)]),
  );
  peakRss = Object.fromEntries(
    Object.values(cluster.components).map((c) => [c.name, sampleProc(c.pid)?.peakRssMiB ?? 0]),
  );
} finally {
  totalPeak = peakTotal();
  await cluster.stop();
}

const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const sum = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0);
const names = Object.keys(peakRss);
const met = timing.readyMs <= GOAL_MS;
publish({
  id: 'cluster',
  title: 'Local control plane',
  versions: binaries.versions,
  command: `npm run bench:cluster -- --nodes ${nodes} --starts ${starts}${leaseSeconds !== 40 ? ` --lease-seconds ${leaseSeconds}` : ''}`,
  body: [
    `KWOK nodes with ${leaseSeconds} s Leases (renewed every ${leaseSeconds / 4} s, as kubelets do); 1-minute load average before the node run ${loadBefore.toFixed(1)} (the machine is shared: wall-clock figures move with other work, CPU seconds much less).`,
    '',
    '| figure | value |',
    '|---|---|',
    `| warm build check (all binaries cached) | ${s(warmBuildMs)} |`,
    `| harness start-up, no nodes (${starts} starts) | ${startTimes.map(s).join(', ')} |`,
    `| ${nodes} KWOK nodes created and Ready (goal ≤ ${GOAL_MS / 1000} s at 5,000, KWOK's CI) | ${s(timing.readyMs)}${nodes === 5000 ? (met ? ' (goal met)' : ' (**goal missed**)') : ''} |`,
    `| … of which creating them (50 requests in flight) | ${s(timing.createdMs)} |`,
    `| control plane CPU for the ${nodes} nodes | ${sum(cpuCreate).toFixed(1)} s (${names.map((n) => `${n} ${(cpuCreate[n] ?? 0).toFixed(1)}`).join(', ')}); the benchmark process ${benchCpu.toFixed(1)} s |`,
    `| control plane CPU idle with ${nodes} nodes (${IDLE_MS / 1000} s from ${SETTLE_MS / 1000} s after Ready) | ${sum(cpuIdle).toFixed(2)} cores (${names.map((n) => `${n} ${(cpuIdle[n] ?? 0).toFixed(2)}`).join(', ')}) |`,
    `| control plane peak RSS, total (sampled every 250 ms) | ${totalPeak.toFixed(0)} MiB |`,
    ...names.map((n) => `| peak RSS ${n} (VmHWM) | ${(peakRss[n] ?? 0).toFixed(0)} MiB |`),
    '',
    "Where the time went (found with the API server audit log): KWOK creates each node's Lease before it plays the node's stages, and with 16 Lease workers at about 40 ms a request it created about 200 Leases a second, so 5,000 nodes took about 60 s to become Ready however fast they were created. The harness now runs 64 Lease and 64 node-stage workers (`nodeLeaseParallelism`, `nodePlayStageParallelism`), creates nodes through a plain-JSON client and counts Ready nodes from a watch instead of listing every node every 250 ms. At the kubelet's 40 s Lease, 5,000 nodes renew 500 Leases a second, most of the idle CPU above; `startCluster({ nodeLeaseDurationSeconds })` lengthens it for benchmarks that need the CPU.",
  ].join('\n'),
});
