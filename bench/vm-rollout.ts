/**
 * npm run bench:vm-rollout [-- --vms N --replicas R]
 *
 * One rollout of real nodes, and what `nuo whatif` predicted of it. N VM nodes (default 2) join the local
 * control plane; nuo is installed from its chart; a web Deployment of R replicas (default 2 per VM) runs
 * on them under a PDB (maxUnavailable 1), each pod taking 3 s to shut down after SIGTERM. Then:
 * `nuo whatif run` against the cluster as it stands (snapshot, twin, rollout of the twin, the VMs' first
 * boot to Ready as its reboot time), and the real rollout: Debian's reboot-required sentinel on every VM,
 * nuo's agents and operator doing the rest, the independent checker watching, observed as the twin's is
 * (src/sim/rollout-observer.ts). Prints the time per phase, drain times, the bound and efficiency,
 * evictions per pod, and the prediction's error on the last finish and per node.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { AppsV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, UPDATE_POLICY } from '../src/api/crd.ts';
import { REAL_CLOCK } from '../src/policy/calendar-clock.ts';
import { SafetyChecker } from '../src/sim/checker.ts';
import { startCluster } from '../src/sim/cluster/cluster.ts';
import { startRegistry } from '../src/sim/cluster/registry.ts';
import { observeRollout } from '../src/sim/rollout-observer.ts';
import { installFromRegistry, NS, nuoAvailable } from '../src/sim/vm/install-nuo.ts';
import { startVmNodes, type VmNode, vmNodeSpecs } from '../src/sim/vm/vms.ts';
import { deployVmWeb, webAvailable } from '../src/sim/vm/web.ts';
import { resolvedPolicies } from '../src/sim/whatif-run.ts';
import { pollUntil } from '../src/util/poll.ts';
import type { UpdatePolicyObject } from '../src/whatif/objects.ts';
import type { RunObservations } from '../src/whatif/observations.ts';
import { buildReport, type WhatifReport } from '../src/whatif/report.ts';
import { formatMs } from '../src/whatif/report-table.ts';
import { helmIn } from '../tools/helm/run.ts';
import { publish } from './report.ts';
import { evictionsPerPod, phaseTimes, rolloutBound } from './vm-rollout-figures.ts';
import { whatifRun } from './whatif-cli.ts';
import { compare } from './whatif-compare.ts';

const { values } = parseArgs({
  options: { vms: { type: 'string', default: '2' }, replicas: { type: 'string' } },
  strict: true,
});
const vmCount = Number(values.vms);
if (!(Number.isInteger(vmCount) && vmCount >= 2 && vmCount <= 5))
  throw new Error(`--vms: a whole number from 2 to 5, got ${values.vms}`);
const replicas = Number(values.replicas ?? 2 * vmCount);
if (!(Number.isInteger(replicas) && replicas >= 1))
  throw new Error(`--replicas: a positive whole number, got ${values.replicas}`);

const log = (line: string) => process.stderr.write(`# ${line}\n`);
/** The chart's operator ServiceAccount: the audit log keeps its requests (its evictions). */
const OPERATOR = { namespace: NS, name: 'nuo-operator' };
const OPERATOR_USER = `system:serviceaccount:${OPERATOR.namespace}:${OPERATOR.name}`;
const SHUTDOWN_MS = 3000;
const TIMEOUT_MS = 3_600_000;
/** The prediction's: `nuo whatif run` allows at most 50 minutes at --speed 1 (its twin's token lasts an hour). */
const PREDICT_TIMEOUT_MS = 2_700_000;

const cluster = await startCluster({ nodes: 0, audit: { users: [OPERATOR_USER] }, log });
const registry = await startRegistry();
const helmHome = mkdtempSync(join(tmpdir(), 'nuo-bench-helm-'));
let body = '';
try {
  const fleet = await startVmNodes(cluster, {
    nodes: vmNodeSpecs(vmCount, vmCount),
    registry: registry.host,
    log,
  });
  const accel = fleet.accel.toUpperCase();
  const installed = installFromRegistry({
    registry: registry.host,
    helm: await helmIn(helmHome),
    kubeconfigPath: cluster.kubeconfigPath,
    log,
  });
  const apps = cluster.kubeconfig.makeApiClient(AppsV1Api);
  await deployVmWeb(cluster.kubeconfig, 'default', {
    name: 'web',
    image: installed.image,
    replicas,
    shutdownMs: SHUTDOWN_MS,
  });
  // Every replica, the operator's standby too (nuoAvailable): the twin plays a pod unready at the
  // snapshot as unready for the whole rollout, and the operator's PDB then holds its node's drain for ever.
  await pollUntil(
    "nuo's agents on every VM, every operator replica and every web replica available",
    async () =>
      (await nuoAvailable(apps, vmCount)) && (await webAvailable(apps, 'default', 'web')) ? true : undefined,
    { timeoutMs: 2_400_000, intervalMs: 2000 },
  );

  const rebootMs = fleet.bootToReadyMs;
  log(`predicting: nuo whatif run, reboot time ${formatMs(rebootMs)} (the VMs' first boot to Ready)`);
  const predictedAt = performance.now();
  const predicted = await whatifRun(
    [
      `--kubeconfig=${cluster.kubeconfigPath}`,
      `--reboot-time=${Math.round(rebootMs)}ms`,
      `--timeout=${PREDICT_TIMEOUT_MS}ms`,
    ],
    (line) => log(`  [whatif] ${line}`),
  );
  const predictionMs = performance.now() - predictedAt;

  log('rolling the VMs for real');
  const observed = await realRollout(fleet.nodes, fleet, rebootMs);
  body = figures(observed, predicted, { accel, rebootMs, predictionMs });
} finally {
  await cluster.stop();
  await registry.stop();
  rmSync(helmHome, { recursive: true, force: true });
}

publish({
  id: 'vm-rollout',
  title: `A rollout of ${vmCount} real nodes (VMs), and nuo whatif's prediction of it`,
  versions: cluster.binaries.versions,
  command: `npm run bench:vm-rollout -- --vms ${vmCount} --replicas ${replicas}`,
  body,
});

/** The real rollout: every VM's sentinel, observed until each VM rebooted once and is Idle again. */
async function realRollout(
  vms: readonly VmNode[],
  fleet: Awaited<ReturnType<typeof startVmNodes>>,
  rebootMs: number,
) {
  const listed = await cluster.kubeconfig
    .makeApiClient(CustomObjectsApi)
    .listClusterCustomObject({ group: API_GROUP, version: API_VERSION, plural: UPDATE_POLICY.plural });
  const policies = resolvedPolicies((listed as { items: UpdatePolicyObject[] }).items);
  const checker = new SafetyChecker(cluster.kubeconfig, 1, { namespace: NS });
  const reboots = new Map<string, number>();
  fleet.onShutdown((node, bootId) => {
    reboots.set(node, (reboots.get(node) ?? 0) + 1);
    checker.onReboot(node, bootId);
  });
  const operator = await cluster.serviceAccountKubeconfig(OPERATOR.namespace, OPERATOR.name);
  return observeRollout(
    cluster,
    {
      policies,
      notReady: [],
      operator: { user: OPERATOR_USER, kubeconfigPath: operator.path },
      rebootMs,
      timeoutMs: TIMEOUT_MS,
      log,
      // The operator runs in a VM, on the VM's clock: its phases are timed when this process sees them.
      stamp: 'seen',
    },
    {
      start: async () => {
        await checker.start();
        for (const vm of vms) checker.allowReboots(vm.name);
        return REAL_CLOCK;
      },
      ask: async () => {
        await Promise.all(
          vms.map(async (vm) => {
            const r = await vm.exec('touch /var/run/reboot-required');
            if (r.code !== 0) throw new Error(`${vm.name}: touch /var/run/reboot-required: ${r.stderr}`);
          }),
        );
      },
      rebootsOf: (node) => reboots.get(node) ?? 0,
      allRebootsOf: (node) => reboots.get(node) ?? 0,
      violations: () => checker.violations.map((v) => `${v.rule}: ${v.detail}`),
      stop: async () => {
        await checker.finalCheck();
        await checker.stop();
      },
    },
  );
}

function figures(
  observed: RunObservations,
  predicted: WhatifReport,
  o: { accel: string; rebootMs: number; predictionMs: number },
): string {
  const real = buildReport(observed);
  const c = compare(real, predicted);
  const evictions = evictionsPerPod(observed, 'default/Deployment/web', replicas).toFixed(2);
  const bound = rolloutBound(real, 1);
  const pct = (x: number | undefined) => (x === undefined ? '-' : `${x >= 0 ? '+' : ''}${x.toFixed(1)} %`);
  return [
    `${vmCount} VM nodes under ${o.accel} (1 vCPU, 1.5 GiB each), nuo from its chart (maxUnavailable 1), web`,
    `${replicas} replicas under a PDB (maxUnavailable 1), ${SHUTDOWN_MS / 1000} s to shut down after SIGTERM.`,
    '',
    '| node | admitted | drained | reboot began | finished | drain | reboot to Idle |',
    '|---|---|---|---|---|---|---|',
    ...real.nodes.map(
      (n) =>
        `| ${n.name} | ${formatMs(n.startMs)} | ${formatMs(n.drainedMs)} | ${formatMs(n.rebootMs)} | ${formatMs(n.finishMs)} | ${n.drainedMs !== undefined && n.startMs !== undefined ? formatMs(n.drainedMs - n.startMs) : '-'} | ${n.finishMs !== undefined && n.rebootMs !== undefined ? formatMs(n.finishMs - n.rebootMs) : '-'} |`,
    ),
    '',
    '| phase | mean | max |',
    '|---|---|---|',
    ...phaseTimes(observed).map((p) => `| ${p.phase} | ${formatMs(p.meanMs)} | ${formatMs(p.maxMs)} |`),
    '',
    `Last finish ${formatMs(c.real.lastFinishMs)}; the bound (each node's slot time, packed into 1 slot with no gap) ${formatMs(bound.boundMs)}: efficiency ${bound.efficiencyPct.toFixed(0)} %. Evictions per web pod: ${evictions}. Violations the checker saw: ${real.violations.length === 0 ? 'none' : real.violations.join('; ')}.`,
    '',
    `**nuo whatif's prediction** (its reboot time ${formatMs(o.rebootMs)}, the VMs' first boot to Ready; it took ${formatMs(o.predictionMs)}):`,
    '',
    '| | real | predicted | error |',
    '|---|---|---|---|',
    `| last finish | ${formatMs(c.real.lastFinishMs)} | ${formatMs(c.predicted.lastFinishMs)} | ${pct(c.totalErrorPct)} |`,
    `| per-node finish (median / max error) | | | ${c.finishError ? `${formatMs(c.finishError.medianMs)} / ${formatMs(c.finishError.maxMs)} (${c.finishError.nodes} nodes)` : '-'} |`,
    `| stuck nodes | ${c.real.stuck.join(', ') || 'none'} | ${c.predicted.stuck.join(', ') || 'none'} | ${c.sameStuck ? 'same' : 'differ'} |`,
    `| PDBs that held them | ${c.real.blockedPdbs.join(', ') || 'none'} | ${c.predicted.blockedPdbs.join(', ') || 'none'} | ${c.sameBlockedPdbs ? 'same' : 'differ'} |`,
    '',
    "The twin's nodes are KWOK's: its pods end at once on eviction, where the real ones run their preStop",
    'hook and shutdown, and its reboot time is one figure for every node.',
  ].join('\n');
}
