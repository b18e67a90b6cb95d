/**
 * npm run bench:rollout [-- --nodes N --max-unavailable K --reboot-time R --soak S --lease-seconds L
 *                          --keep-logs DIR --runs N]
 *
 * --keep-logs DIR copies every process's log there, and the API server's /metrics from before and after
 * the rollout (with --runs, each run's under DIR/run-I).
 *
 * --runs N measures N runs one after another, each on a cluster of its own, and publishes the median
 * run's section and a section of all N (bench/rollout-series.ts): on a shared host one run cannot say
 * whether a goal is met reliably.
 *
 * A full rollout on the local cluster (simulated hosts, `nuo operator`, Deployments under PDBs with about
 * two pods per node) and its figures, written to docs/benchmarks.md (bench/report.ts):
 * - efficiency: the lower bound ceil(N/K)·(drain + R + soak), drain being the mean drain time measured
 *   in this run (the slot time all attempts need, over K), over the measured rollout time; and, stricter,
 *   the same with the median drain and with drain counted as 0;
 * - grant latency: from a slot freed (a node back to Idle while others waited) to the admission that
 *   took it, p50 and p99, observed by an independent watch on the nodes (bench/phase-observer.ts, in
 *   a process of its own);
 * - the mean time per node in each phase, which shows where a rollout's time beyond the bound goes;
 * - the same attempts' slot times packed with no admission delay at all (packedMakespanMs): what part
 *   of the gap to the bound is the workload's (slots drifting apart), and what part the operator's;
 * - the rollout taken apart slot by slot (slotIdle): the attempts' slot time over K, plus the time the
 *   slots stood empty before the first wave's admissions, between a slot freed and refilled, and at the
 *   end while the slots that ran the most drain time finished.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { AppsV1Api, CoreV1Api, PolicyV1Api } from '@kubernetes/client-node';
import { REPORT_SPREAD_MS } from '../src/agent/agent.ts';
import { Phase } from '../src/api/phases.ts';
import { startCluster } from '../src/sim/cluster/cluster.ts';
import { machineCpu, machineCpuBetween, sampleProc } from '../src/sim/cluster/proc.ts';
import { Fleet } from '../src/sim/fleet.ts';
import { MovesObserver } from '../src/sim/moves-observe.ts';
import { deployment, waitAvailable } from '../src/sim/workload.ts';
import { parseDuration } from '../src/util/duration.ts';
import { pollUntil } from '../src/util/poll.ts';
import { publish, type Report } from './report.ts';
import {
  evictions,
  histogramDelta,
  percentileBound,
  requestHistogram,
  requestsAnswered,
} from './request-latency.ts';
import {
  longestWaits,
  packedMakespanMs,
  type Reason,
  rolloutFigures,
  slotIdle,
  type Transition,
} from './rollout-figures.ts';
import { GOALS, goalCell, medianRun, type RunFigures, seriesBody } from './rollout-series.ts';

const { values } = parseArgs({
  options: {
    nodes: { type: 'string', default: '200' },
    'max-unavailable': { type: 'string', default: '10' },
    'reboot-time': { type: 'string', default: '5s' },
    soak: { type: 'string', default: '1s' },
    /** KWOK's node Leases (renewed every quarter of it): 40 s is the kubelet's default. */
    'lease-seconds': { type: 'string', default: '40' },
    /** Copy the cluster's logs (the operator's and the agents' included) to this directory before it is removed. */
    'keep-logs': { type: 'string' },
    /** Measure this many runs one after another, each on a cluster of its own; publish them all. */
    runs: { type: 'string', default: '1' },
    /** Also write the run's headline figures and its report to this file (what a series reads). */
    json: { type: 'string' },
  },
  strict: true,
});
const nodes = Number(values.nodes);
const k = Number(values['max-unavailable']);
if (!Number.isInteger(nodes) || nodes < 1 || !Number.isInteger(k) || k < 1) {
  throw new Error('--nodes and --max-unavailable must be positive integers');
}
const runs = Number(values.runs);
if (!Number.isInteger(runs) || runs < 1)
  throw new Error(`--runs must be a positive integer, got ${values.runs}`);
if (runs > 1 && values.json) throw new Error("--json is one run's figures: it does not go with --runs");
const rebootMs = parseDuration(values['reboot-time']);
const soakMs = parseDuration(values.soak);

const observerScript = fileURLToPath(new URL('./phase-observer.ts', import.meta.url));
const leaseSeconds = Number(values['lease-seconds']);
if (runs > 1) await measureSeries();
else await measureOnce();

/** One run: a cluster of its own, the rollout, its section of docs/benchmarks.md (and --json). */
async function measureOnce(): Promise<void> {
  const cluster = await startCluster({ nodes, zones: 3, nodeLeaseDurationSeconds: leaseSeconds });
  const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
  const apps = cluster.kubeconfig.makeApiClient(AppsV1Api);
  const policy = cluster.kubeconfig.makeApiClient(PolicyV1Api);
  let fleet: Fleet | undefined;
  let observer: ChildProcess | undefined;
  let podMoves: MovesObserver | undefined;
  try {
    await core.createNamespace({ body: { metadata: { name: 'nuo-system' } } });
    await core.createNamespace({ body: { metadata: { name: 'bench' } } });
    await pollUntil('default ServiceAccount', () =>
      core.readNamespacedServiceAccount({ name: 'default', namespace: 'bench' }).then(() => true),
    );
    const apps_ = Math.max(1, Math.round(nodes / 10));
    for (let i = 0; i < apps_; i++) {
      const name = `app-${i}`;
      await apps.createNamespacedDeployment({ namespace: 'bench', body: deployment('bench', name, 20) });
      await policy.createNamespacedPodDisruptionBudget({
        namespace: 'bench',
        body: { metadata: { name }, spec: { maxUnavailable: 2, selector: { matchLabels: { app: name } } } },
      });
    }
    for (let i = 0; i < apps_; i++) await waitAvailable(apps, 'bench', `app-${i}`, 300_000);

    // Independent observer: every phase change, timestamped when seen, by a process of its own.
    const transitions: Transition[] = [];
    const reasons: Reason[] = [];
    const last = new Map<string, string>();
    observer = spawn(process.execPath, [observerScript, cluster.kubeconfigPath], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const observed = observer;
    let synced = false;
    createInterface({ input: observed.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      const seen = JSON.parse(line) as {
        synced?: true;
        node?: string;
        phase?: string;
        reason?: string;
        at?: number;
      };
      if (seen.synced) synced = true;
      if (seen.node === undefined || seen.at === undefined) return;
      const at = seen.at - performance.timeOrigin;
      if (seen.reason !== undefined) reasons.push({ node: seen.node, reason: seen.reason, at });
      if (seen.phase === undefined) return;
      last.set(seen.node, seen.phase);
      transitions.push({ node: seen.node, phase: seen.phase, at });
    });
    await pollUntil(
      'the observer to list the nodes',
      () => {
        if (observed.exitCode !== null) throw new Error(`the observer exited ${observed.exitCode}`);
        return synced || undefined;
      },
      { timeoutMs: 60_000, intervalMs: 50 },
    );

    fleet = new Fleet(cluster, {
      rebootMs,
      budget: k,
      agentCheckIntervalMs: 60_000,
      agentReportSpreadMs: REPORT_SPREAD_MS,
    });
    await fleet.start();
    const f = fleet;
    await f.applyPolicy({ maxUnavailable: k, reboot: { soak: `${soakMs}ms` } });
    const operator = f.startOperator('bench', []);
    // Who used the machine's cores during the rollout: every figure above is shared with these.
    const processes: Record<string, number | undefined> = {
      ...Object.fromEntries(Object.entries(cluster.components).map(([name, c]) => [name, c.pid])),
      'nuo operator': operator.pid,
      [`this benchmark: ${nodes} simulated hosts and agents, the checker`]: process.pid,
      'the independent observer (bench/phase-observer.ts)': observed.pid,
    };
    const cpuAt = () =>
      Object.fromEntries(
        Object.entries(processes).map(([name, pid]) => [name, sampleProc(pid)?.cpuSeconds ?? 0]),
      );
    // Updates reach a running operator, as in a cluster where nuo was installed before them: the clock
    // starts when it leads (its own start-up, ~10 s at 1,000 nodes on this machine, is not the rollout's).
    const operatorLog = join(cluster.dir, 'logs', 'operator-bench.log');
    await pollUntil(
      'the operator to lead',
      () => {
        if (operator.exitCode !== null) throw new Error(`the operator exited ${operator.exitCode}`);
        return existsSync(operatorLog) && readFileSync(operatorLog, 'utf8').includes('"became leader"')
          ? true
          : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 100 },
    );
    const cpuBefore = cpuAt();
    const machineBefore = machineCpu();
    const metricsBefore = await cluster.raw.text('/metrics');
    // The simulated agents share this process: how late its event loop ran is how late they did.
    podMoves = new MovesObserver(cluster.kubeconfig, 'bench');
    await podMoves.start();
    const loopDelay = monitorEventLoopDelay({ resolution: 10 });
    loopDelay.enable();
    const started = performance.now();
    f.stageUpdates();
    await pollUntil(
      'the rollout to finish',
      () =>
        [...f.hosts.keys()].every((n) => f.checker.rebootsOf(n) === 1 && last.get(n) === Phase.idle)
          ? true
          : undefined,
      { timeoutMs: Math.ceil(nodes / k) * (rebootMs + soakMs + 60_000), intervalMs: 200 },
    );
    const elapsedMs = performance.now() - started;
    loopDelay.disable();
    const cpuAfter = cpuAt();
    const machine = machineCpuBetween(machineBefore, machineCpu());
    const metricsAfter = await cluster.raw.text('/metrics');
    // Kept with the logs (--keep-logs): which requests the API server answered, by verb and resource.
    writeFileSync(join(cluster.dir, 'logs', 'kube-apiserver-metrics-before.txt'), metricsBefore);
    writeFileSync(join(cluster.dir, 'logs', 'kube-apiserver-metrics-after.txt'), metricsAfter);
    // How long the API server took to answer, whoever asked: on this shared machine it bounds how fast
    // any operator's writes (three in a row between a slot freed and the next node draining) can land.
    const latency = (verb: string, resource: string) => {
      const h = histogramDelta(
        requestHistogram(metricsBefore, verb, resource),
        requestHistogram(metricsAfter, verb, resource),
      );
      const bound = (q: number) => `≤ ${percentileBound(h, q) * 1000} ms`;
      return `${bound(50)} / ${bound(99)} (${h.get(Number.POSITIVE_INFINITY) ?? 0} requests)`;
    };
    const answered = requestsAnswered(metricsAfter) - requestsAnswered(metricsBefore);
    const apiserverCpuSeconds = (cpuAfter['kube-apiserver'] ?? 0) - (cpuBefore['kube-apiserver'] ?? 0);
    const evicted = (code: string) => evictions(metricsAfter, code) - evictions(metricsBefore, code);
    const cpuRows = Object.keys(processes)
      .map((name) => ({ name, seconds: (cpuAfter[name] ?? 0) - (cpuBefore[name] ?? 0) }))
      .sort((a, b) => b.seconds - a.seconds);
    await f.checker.finalCheck();
    // A leader that cannot renew its Lease stops acting until it can: every attempt waits meanwhile.
    const leadershipLost = readFileSync(operatorLog, 'utf8').split('"stopped leading').length - 1;

    const figures = rolloutFigures(transitions, started);
    const moved = podMoves.moves([...f.hosts.keys()], k);
    const perPod = (n: number) => (n / moved.pods).toFixed(2);
    const idealNoDrain = Math.ceil(nodes / k) * (rebootMs + soakMs);
    // The drain in the bound is the mean one: N·(mean drain + R + soak) is the slot time the nodes'
    // attempts need in all, so with N/K whole no schedule of K slots can take less than this. (A median
    // drain is stricter but no bound: drains blocked by PDBs make a long tail that is work all the same.)
    const ideal = Math.ceil(nodes / k) * (figures.drainMeanMs + rebootMs + soakMs);
    const idealMedian = Math.ceil(nodes / k) * (figures.drainMedianMs + rebootMs + soakMs);
    const packed = packedMakespanMs(
      figures.attempts.map((a) => a.slotMs),
      k,
    );
    const idle = slotIdle(figures.attempts, k, started);
    const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
    const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
    const command = `npm run bench:rollout -- --nodes ${nodes} --max-unavailable ${k} --reboot-time ${values['reboot-time']} --soak ${values.soak}${leaseSeconds === 40 ? '' : ` --lease-seconds ${leaseSeconds}`}`;
    const report: Report = {
      // One section per size at the headline reboot time (30 s); other reboot times get their own.
      id: `rollout-${nodes}${rebootMs === 30_000 ? '' : `-reboot-${rebootMs / 1000}s`}`,
      title: `Rollout of ${nodes} simulated nodes (maxUnavailable ${k}, reboot ${rebootMs / 1000} s, soak ${soakMs / 1000} s)`,
      versions: cluster.binaries.versions,
      command,
      body: [
        `${apps_ * 20} pods in ${apps_} Deployments, each under a PDB with maxUnavailable 2; one \`nuo operator\` process, leading before the first update is staged,`,
        `one in-process simulated host and nuo agent per node, all staged in the same instant and each reporting it within the agent's default \`--report-spread\` (${REPORT_SPREAD_MS / 1000} s);`,
        `phases observed by an independent watch on the nodes, in a process of its own.`,
        `KWOK node Leases of ${leaseSeconds} s, renewed every ${leaseSeconds / 4} s (${leaseSeconds === 40 ? "the kubelet's default" : "the kubelet's default is 40 s"}).`,
        '',
        '| figure | value | goal |',
        '|---|---|---|',
        `| rollout time (first update staged → last node Idle) | ${s(elapsedMs)} | |`,
        `| lower bound ceil(N/K)·(drain + R + soak), drain = mean ${s(figures.drainMeanMs)} (median ${s(figures.drainMedianMs)}, p99 ${s(figures.phases.find((p) => p.phase === Phase.draining)?.p99Ms ?? 0)}) | ${s(ideal)} | |`,
        `| **efficiency** (bound / rollout time) | **${pct(ideal / elapsedMs)}** | ≥ ${GOALS.efficiency * 100} % |`,
        `| stricter: the same with the median drain | ${pct(idealMedian / elapsedMs)} | |`,
        `| stricter still: drain counted as 0 | ${pct(idealNoDrain / elapsedMs)} | |`,
        `| the same slot times packed with no admission delay, in the same order: the best any scheduler admitting in this order could do | ${s(packed)}: ${pct(ideal / packed)} of the bound | |`,
        `| the scheduler's own delay: rollout time − that packing | ${s(elapsedMs - packed)} (${pct((elapsedMs - packed) / elapsedMs)} of the rollout) | |`,
        `| **grant latency** slot freed → next admission, p50 / p99 / max (${figures.latencies.length} waits) | **${figures.p(50).toFixed(0)} ms / ${figures.p(99).toFixed(0)} ms** / ${figures.p(100).toFixed(0)} ms | p99 < ${GOALS.grantP99Ms / 1000} s |`,
        `| the longest grant waits, each with the reason its node showed last before its admission (what the operator said it waited for) | ${
          longestWaits(figures.waits, reasons, 3)
            .map((w) => `${s(w.ms)} ${w.node} (${w.reason ? JSON.stringify(w.reason) : 'no reason seen'})`)
            .join('; ') || 'none'
        } | |`,
        `| slot-time overhead (slot held beyond drain + R + soak), mean per node | ${s(figures.overheadMeanMs(rebootMs + soakMs))} | |`,
        `| from the first update staged to the first admission | ${s(figures.firstAdmissionMs)} | |`,
        `| budget utilisation: slot time held / (K × rollout time) | ${pct(figures.slotMsTotal / (k * elapsedMs))} | |`,
        `| the rollout slot by slot, mean per slot: attempts (slot time over K) + empty before the first admission + empty between a slot freed and refilled + empty after its last attempt while the slots with the most drain time finished = staged → last slot freed | ${s(figures.slotMsTotal / k)} + ${s(idle.startMs / k)} + ${s(idle.betweenMs / k)} + ${s(idle.endMs / k)} = ${s(idle.spanMs)} | |`,
        `| most nodes disrupted at once (independent checker) | ${f.checker.maxDisrupted} | ≤ ${k} |`,
        `| safety violations (independent checker) | ${f.checker.violations.length} | 0 |`,
        `| times the operator stopped leading mid-rollout (its Lease not renewed in time; its log) | ${leadershipLost} | 0 |`,
        `| pods evicted (the API server's count; a pod evicted once per rollout makes it the pod count) | ${evicted('201')} | |`,
        `| **evictions per pod**: pods evicted (an independent watch on the pods) over the ${moved.pods} pods at the start | **${perPod(moved.evictions)}** (${moved.evictions}) | ${goalCell(`≤ ${GOALS.evictionsPerPod.toFixed(2)}`, moved.evictions / moved.pods <= GOALS.evictionsPerPod)} |`,
        `| lower bound without spare capacity: P + the pods on the K nodes holding the fewest at the start, over P ([decision 0065](decisions/0065-steering-evicted-pods.md)) | ${perPod(moved.bound)} (${moved.bound}) | |`,
        `| pods moved again: placed before any node was updated (forced) / placed on a node still to drain while an updated one was there (steering missed) | ${moved.forced} / ${moved.missed} | missed 0 |`,
        `| evictions a PodDisruptionBudget refused (429, each retried by the drain; the API server's count) | ${evicted('429')} | |`,
        `| API server latency answering node PATCHes, all clients (histogram bucket bounds), p50 / p99 | ${latency('PATCH', 'nodes')} | |`,
        `| the same for ConfigMap PUTs (the operator's slot ledger among them) | ${latency('PUT', 'configmaps')} | |`,
        `| event-loop delay of the process that runs the ${nodes} simulated agents, p99 / max (their reaction time is part of each slot's) | ${(loopDelay.percentile(99) / 1e6).toFixed(0)} ms / ${(loopDelay.max / 1e6).toFixed(0)} ms | |`,
        '',
        'Mean time per node in each phase that holds a slot:',
        '',
        '| phase | mean | p99 |',
        '|---|---|---|',
        ...figures.phases.map(
          (ph) => `| ${ph.phase} | ${ph.meanMs.toFixed(0)} ms | ${ph.p99Ms.toFixed(0)} ms |`,
        ),
        '',
        `CPU used during the rollout, by process (the machine has ${availableParallelism()} cores):`,
        '',
        '| process | CPU seconds | share of one core |',
        '|---|---|---|',
        ...[
          ...cpuRows,
          // Work on this machine outside the rollout's processes (another benchmark, a build) slows it
          // as surely as a neighbour does, and shows only here.
          {
            name: '*everything else on this machine*',
            seconds: Math.max(0, machine.busySeconds - cpuRows.reduce((sum, r) => sum + r.seconds, 0)),
          },
          { name: '*stolen: the hypervisor ran other virtual machines*', seconds: machine.stealSeconds },
          { name: '*idle: nothing on this machine had work*', seconds: machine.idleSeconds },
        ].map((r) => `| ${r.name} | ${r.seconds.toFixed(1)} | ${pct(r.seconds / (elapsedMs / 1000))} |`),
        '',
        // The same code has measured 88–96 % here, with the API server spending 240–418 CPU seconds on
        // the same requests: how fast the shared host was is the first thing to look at when a run misses.
        `How fast the shared host was: the API server spent ${((apiserverCpuSeconds * 1000) / answered).toFixed(2)} ms of CPU per request it answered (${answered} requests, watches aside), about the same requests in every run of this size, so a higher figure is a slower machine. Stolen time is only what the hypervisor took outright; a neighbour sharing the cores' caches or hyperthreads shows instead as the same work costing more CPU.`,
      ].join('\n'),
    };
    if (values.json) {
      const run: RunFigures = {
        elapsedMs,
        efficiency: ideal / elapsedMs,
        grantP50Ms: figures.p(50),
        grantP99Ms: figures.p(99),
        endIdleMsPerSlot: idle.endMs / k,
        apiserverCpuMsPerRequest: (apiserverCpuSeconds * 1000) / answered,
        maxDisrupted: f.checker.maxDisrupted,
        violations: f.checker.violations.length,
        leadershipLost,
        evictionsPerPod: moved.evictions / moved.pods,
        report,
      };
      writeFileSync(values.json, JSON.stringify(run));
    }
    publish(report);
  } finally {
    if (values['keep-logs']) cpSync(join(cluster.dir, 'logs'), values['keep-logs'], { recursive: true });
    observer?.kill();
    await podMoves?.stop();
    await fleet?.stop();
    await cluster.stop();
  }
}

/**
 * --runs N: N runs of this script, one after another in processes of their own (each with a fresh
 * cluster, nothing shared but the machine), then the median run's section and the series' own.
 * Nothing is published unless every run finished.
 */
async function measureSeries(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'nuo-bench-series-'));
  const results: RunFigures[] = [];
  try {
    for (let i = 1; i <= runs; i++) {
      const json = join(dir, `run-${i}.json`);
      const args = [
        fileURLToPath(import.meta.url),
        `--nodes=${nodes}`,
        `--max-unavailable=${k}`,
        `--reboot-time=${values['reboot-time']}`,
        `--soak=${values.soak}`,
        `--lease-seconds=${leaseSeconds}`,
        `--json=${json}`,
        ...(values['keep-logs'] ? [`--keep-logs=${join(values['keep-logs'], `run-${i}`)}`] : []),
      ];
      process.stdout.write(`\n=== run ${i} of ${runs} ===\n`);
      const child = spawn(process.execPath, args, {
        stdio: 'inherit',
        env: { ...process.env, NUO_BENCH_NO_WRITE: '1' },
      });
      const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
      if (code !== 0)
        throw new Error(`run ${i} of ${runs} failed (${signal ?? `exit ${code}`}); nothing published`);
      results.push(JSON.parse(readFileSync(json, 'utf8')) as RunFigures);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const median = results[medianRun(results)] as RunFigures;
  publish({
    ...median.report,
    body: `${median.report.body}\n\nThe median run by efficiency of ${runs} runs of this command: all ${runs} are in the next section.`,
  });
  publish({
    id: `${median.report.id}-series`,
    title: `${median.report.title}: ${runs} runs`,
    versions: median.report.versions,
    command: `${median.report.command} --runs ${runs}`,
    body: seriesBody(results, k),
  });
}
