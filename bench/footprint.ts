/**
 * npm run bench:footprint [-- --nodes N --pods P --roll R --max-unavailable K --idle D --reboot-time T]
 *
 * The operator's footprint on a large cluster: N KWOK nodes (default 5,000) running P pods (default
 * 50,000, Deployments placed by kube-scheduler), and one real `nuo operator` child process running as its
 * own ServiceAccount with exactly the RBAC of deploy/base. Measured per phase — start-up (initial list
 * and first reconcile), idle, and a rollout of R nodes (default 200) that need a reboot, on simulated
 * hosts — from the operator's side its resident memory (VmRSS sampled every 500 ms; VmHWM for the
 * peak) and CPU time (/proc utime + stime), and from the API server's side (its audit log, Metadata
 * level for the operator's user only) its requests per minute by verb.
 * Goals: operator RSS ≤ 250 MiB; idle ≈ 0 writes a minute.
 * For an investigation: --operator-node-options "--trace-gc" (or "--heap-prof --heap-prof-dir=DIR")
 * passes Node.js flags to the operator (with =, since they start with a dash), --keep-logs DIR keeps the cluster's logs, the operator's included.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { appendFileSync, cpSync, existsSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { CoreV1Api, type V1Node, type V1Pod } from '@kubernetes/client-node';
import { Annotations } from '../src/api/keys.ts';
import { Phase } from '../src/api/phases.ts';
import { kubeconfigCredentials } from '../src/kube/kubeconfig-credentials.ts';
import { LeanClient } from '../src/kube/lean-client.ts';
import { type AuditEvent, readAuditLog } from '../src/sim/cluster/audit.ts';
import { startCluster } from '../src/sim/cluster/cluster.ts';
import { loadAverage, sampleProc } from '../src/sim/cluster/proc.ts';
import { killWithHarness } from '../src/sim/cluster/process.ts';
import { Tally } from '../src/sim/cluster/raw-api.ts';
import { OPERATOR_NODE_OPTIONS } from '../src/sim/fleet.ts';
import { SimHost } from '../src/sim/host.ts';
import { applyPolicy, installPolicyCrd } from '../src/sim/policies.ts';
import { parseDuration } from '../src/util/duration.ts';
import { inParallel } from '../src/util/parallel.ts';
import { pollUntil } from '../src/util/poll.ts';
import { publish } from './report.ts';

const { values } = parseArgs({
  options: {
    nodes: { type: 'string', default: '5000' },
    pods: { type: 'string', default: '50000' },
    roll: { type: 'string', default: '200' },
    'max-unavailable': { type: 'string', default: '20' },
    idle: { type: 'string', default: '60s' },
    'reboot-time': { type: 'string', default: '5s' },
    'lease-seconds': { type: 'string', default: '200' },
    /**
     * scheduler: Deployments under PDBs, placed by kube-scheduler (the real path, but on 2 shared cores
     * it placed 50,000 pods on 5,000 nodes at 15-60 a second); direct: bare pods created with
     * spec.nodeName set, 10 per node round-robin, and the operator drains with --drain-force.
     */
    placement: { type: 'string', default: 'direct' },
    /** Extra Node.js flags for the operator process, e.g. --operator-node-options=--trace-gc (= form: the value starts with a dash). */
    'operator-node-options': { type: 'string', default: '' },
    /** Copy the cluster's logs (the operator's included) to this directory before it is removed. */
    'keep-logs': { type: 'string' },
  },
  strict: true,
});
const nodes = Number(values.nodes);
const pods = Number(values.pods);
const roll = Number(values.roll);
const k = Number(values['max-unavailable']);
const idleMs = parseDuration(values.idle);
const rebootMs = parseDuration(values['reboot-time']);
const leaseSeconds = Number(values['lease-seconds']);
for (const [name, v] of Object.entries({
  nodes,
  pods,
  roll,
  'max-unavailable': k,
  'lease-seconds': leaseSeconds,
})) {
  if (!Number.isInteger(v) || v < 0) throw new Error(`--${name} must be a non-negative integer`);
}
if (roll > nodes) throw new Error('--roll must not exceed --nodes');
const placement = values.placement;
if (placement !== 'scheduler' && placement !== 'direct')
  throw new Error(`--placement must be scheduler or direct, got ${placement}`);

const RSS_GOAL_MIB = 250;
const PODS_PER_DEPLOYMENT = 500;
const OPERATOR_USER = 'system:serviceaccount:nuo-system:nuo-operator';
// The compiled entry, as an image runs it (`npm run bench:footprint` builds it first).
const nuoBin = fileURLToPath(new URL('../dist/src/cli/run.js', import.meta.url));
if (!existsSync(nuoBin))
  throw new Error(`${nuoBin} is missing: run npm run build first (npm run bench:footprint does)`);
const rbacFile = fileURLToPath(new URL('../deploy/base/operator-rbac.yaml', import.meta.url));
const log = (line: string) =>
  process.stderr.write(`[footprint ${new Date().toISOString().slice(11, 19)}] ${line}\n`);

/** The operator's memory and CPU, sampled every 500 ms; phases are cut at marks. */
class OperatorSampler {
  readonly #pid: number;
  readonly #timer: ReturnType<typeof setInterval>;
  #peakInPhase = 0;
  #last = { rssMiB: 0, cpuSeconds: 0, peakRssMiB: 0 };

  constructor(pid: number) {
    this.#pid = pid;
    this.#timer = setInterval(() => this.sample(), 500);
  }

  sample() {
    const s = sampleProc(this.#pid);
    if (s) {
      this.#last = s;
      this.#peakInPhase = Math.max(this.#peakInPhase, s.rssMiB);
    }
    return this.#last;
  }

  /** Ends a phase: its CPU is the difference of two marks; returns the RSS peak sampled within it. */
  mark(): { at: number; cpuSeconds: number; rssMiB: number; peakInPhaseMiB: number; hwmMiB: number } {
    const s = this.sample();
    const peak = this.#peakInPhase;
    this.#peakInPhase = s.rssMiB;
    return {
      at: Date.now(),
      cpuSeconds: s.cpuSeconds,
      rssMiB: s.rssMiB,
      peakInPhaseMiB: peak,
      hwmMiB: s.peakRssMiB,
    };
  }

  stop() {
    clearInterval(this.#timer);
  }
}

function deploymentBody(name: string, replicas: number) {
  const labels = { app: name, bench: 'footprint' };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, labels },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels },
        spec: {
          containers: [
            { name: 'app', image: 'registry.example/app:1', resources: { requests: { cpu: '10m' } } },
          ],
          terminationGracePeriodSeconds: 1,
        },
      },
    },
  };
}

const WRITE_VERBS = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

interface PhaseCount {
  minutes: number;
  total: number;
  byVerb: Map<string, number>;
  writes: number;
  leaseWrites: number;
}

function countRequests(events: AuditEvent[], from: number, to: number): PhaseCount {
  const inPhase = events.filter((e) => {
    const t = Date.parse(e.requestReceivedTimestamp);
    return t >= from && t < to;
  });
  const byVerb = new Map<string, number>();
  let writes = 0;
  let leaseWrites = 0;
  for (const e of inPhase) {
    const verb = e.objectRef?.subresource
      ? `${e.verb} ${e.objectRef.resource}/${e.objectRef.subresource}`
      : e.verb;
    byVerb.set(verb, (byVerb.get(verb) ?? 0) + 1);
    if (WRITE_VERBS.has(e.verb)) {
      writes++;
      if (e.objectRef?.resource === 'leases') leaseWrites++;
    }
  }
  return { minutes: (to - from) / 60_000, total: inPhase.length, byVerb, writes, leaseWrites };
}

const loadBefore = loadAverage();
const t0 = performance.now();
const cluster = await startCluster({
  audit: { users: [OPERATOR_USER] },
  nodeLeaseDurationSeconds: leaseSeconds,
  log: (l) => log(l),
});
const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
const agentClient = new LeanClient(kubeconfigCredentials(cluster.kubeconfigPath));
const hosts: SimHost[] = [];
let operator: ChildProcess | undefined;
let sampler: OperatorSampler | undefined;
let nodeTally: Tally<V1Node> | undefined;
try {
  // 1. Nodes.
  const width = String(nodes - 1).length;
  const names = Array.from({ length: nodes }, (_, i) => `node-${String(i).padStart(width, '0')}`);
  const nodeTiming = await cluster.addNodes(
    names.map((name, i) => ({ name, zone: `zone-${String.fromCharCode(97 + (i % 3))}` })),
  );
  log(`${nodes} nodes Ready in ${(nodeTiming.readyMs / 1000).toFixed(1)} s`);

  // 2. Pods: Deployments of up to 500 replicas, placed by kube-scheduler, Running as KWOK reports it.
  await core.createNamespace({ body: { metadata: { name: 'bench' } } });
  await pollUntil('default ServiceAccount in bench', () =>
    core.readNamespacedServiceAccount({ name: 'default', namespace: 'bench' }).then(() => true),
  );
  const podTally = new Tally<V1Pod>(
    cluster.raw,
    '/api/v1/namespaces/bench/pods',
    'labelSelector=bench%3Dfootprint',
    (p) => p.status?.phase === 'Running',
  );
  await podTally.start();
  const podsStarted = performance.now();
  const deployments = Math.ceil(pods / PODS_PER_DEPLOYMENT);
  if (placement === 'scheduler') {
    for (let i = 0; i < deployments; i++) {
      const replicas = Math.min(PODS_PER_DEPLOYMENT, pods - i * PODS_PER_DEPLOYMENT);
      await cluster.raw.request(
        'POST',
        '/apis/apps/v1/namespaces/bench/deployments',
        deploymentBody(`app-${i}`, replicas),
      );
      // A PDB per Deployment, as production workloads have: drains go through the Eviction API's checks.
      await cluster.raw.request('POST', '/apis/policy/v1/namespaces/bench/poddisruptionbudgets', {
        metadata: { name: `app-${i}` },
        spec: { maxUnavailable: '10%', selector: { matchLabels: { app: `app-${i}` } } },
      });
    }
  }
  const creating =
    placement === 'direct'
      ? inParallel(
          Array.from({ length: pods }, (_, i) => i),
          50,
          async (i) => {
            await cluster.raw.request('POST', '/api/v1/namespaces/bench/pods', {
              metadata: { name: `pod-${i}`, labels: { bench: 'footprint', app: `app-${i % 100}` } },
              spec: {
                nodeName: names[i % nodes],
                containers: [
                  { name: 'app', image: 'registry.example/app:1', resources: { requests: { cpu: '10m' } } },
                ],
                terminationGracePeriodSeconds: 1,
              },
            });
          },
        )
      : Promise.resolve();
  creating.catch(() => {});
  const progress = setInterval(() => log(`${podTally.satisfied.size}/${pods} pods Running`), 15_000);
  try {
    await creating;
    await podTally.waitForCount(pods, Math.max(600_000, pods * 40), `${pods} pods Running`);
  } finally {
    clearInterval(progress);
    await podTally.stop();
  }
  const podsMs = performance.now() - podsStarted;
  log(`${pods} pods Running in ${(podsMs / 1000).toFixed(1)} s`);

  // 3. The operator, as its own ServiceAccount with deploy/base's RBAC.
  await core.createNamespace({ body: { metadata: { name: 'nuo-system' } } });
  execFileSync(
    cluster.binaries.path.kubectl,
    [`--kubeconfig=${cluster.kubeconfigPath}`, 'apply', '-f', rbacFile],
    {
      stdio: 'ignore',
    },
  );
  const sa = await cluster.serviceAccountKubeconfig('nuo-system', 'nuo-operator');
  const operatorLog = join(cluster.dir, 'logs', 'operator-footprint.log');
  const opFd = openSync(operatorLog, 'a');
  // Independent observer of the nodes we roll: back to Idle with nothing pending.
  nodeTally = new Tally<V1Node>(
    cluster.raw,
    '/api/v1/nodes',
    'labelSelector=type%3Dkwok',
    (n) =>
      (n.metadata?.annotations?.[Annotations.state] ?? Phase.idle) === Phase.idle &&
      n.metadata?.annotations?.[Annotations.rebootNeeded] !== 'true',
  );
  await nodeTally.start();

  await installPolicyCrd(cluster);
  await applyPolicy(cluster, 'footprint', {
    maxUnavailable: k,
    reboot: { soak: '1s' },
    // Bare pods (direct placement) have no controller: evicting them needs force, as kubectl's --force.
    ...(placement === 'direct' ? { drain: { force: true } } : {}),
  });
  const spawnedAt = Date.now();
  operator = spawn(
    process.execPath,
    [
      // The V8 flags deploy/base/operator.yaml gives the operator, as Fleet.startOperator passes them.
      ...OPERATOR_NODE_OPTIONS.split(' ').filter(Boolean),
      ...values['operator-node-options'].split(' ').filter(Boolean),
      nuoBin,
      'operator',
      `--kubeconfig=${sa.path}`,
      '--identity=footprint',
      '--metrics-port=0',
      '--namespace=nuo-system',
    ],
    { stdio: ['ignore', opFd, opFd] },
  );
  killWithHarness(operator);
  const op = operator;
  if (!op.pid) throw new Error('the operator did not start');
  sampler = new OperatorSampler(op.pid);
  const start0 = sampler.mark();
  const logText = () => readFileSync(operatorLog, 'utf8');
  await pollUntil(
    'the operator to lead',
    () => {
      if (op.exitCode !== null) throw new Error(`operator exited ${op.exitCode}:\n${logText().slice(-2000)}`);
      return logText().includes('"became leader"') ? true : undefined;
    },
    { timeoutMs: 300_000, intervalMs: 100 },
  );
  // The first reconcile (every node viewed and decided) runs right after the lease is taken.
  await new Promise((r) => setTimeout(r, 3000));
  const start1 = sampler.mark();
  log(`operator leading after ${((start1.at - spawnedAt) / 1000).toFixed(1)} s`);

  // 4. Idle.
  await new Promise((r) => setTimeout(r, idleMs));
  const idle1 = sampler.mark();
  log('idle phase done');

  // 5. Rollout of `roll` nodes on simulated hosts; the others stay Idle and have no host.
  const rolled = names.slice(0, roll);
  const agentLog = join(cluster.dir, 'logs', 'agents.log');
  for (const nodeName of rolled) {
    const host = new SimHost({
      nodeName,
      core,
      client: agentClient,
      rebootMs,
      agentCheckIntervalMs: 60_000,
      // Required in practice: NodeAgent's default logger is overridden by an explicit undefined.
      log: (level, message) => appendFileSync(agentLog, `${new Date().toISOString()} ${level} ${message}\n`),
    });
    hosts.push(host);
  }
  await Promise.all(hosts.map((h) => h.start()));
  const rollStart = sampler.mark();
  for (const h of hosts) h.stageUpdate();
  const tally = nodeTally;
  await pollUntil(
    `the rollout of ${roll} nodes`,
    () => {
      if (op.exitCode !== null) throw new Error(`operator exited ${op.exitCode}`);
      return hosts.every((h) => h.reboots >= 1 && tally.satisfied.has(h.nodeName)) ? true : undefined;
    },
    { timeoutMs: Math.ceil(roll / Math.max(1, k)) * (rebootMs + 120_000) + 120_000, intervalMs: 250 },
  );
  const rollEnd = sampler.mark();
  log(`rollout of ${roll} nodes done in ${((rollEnd.at - rollStart.at) / 1000).toFixed(1)} s`);

  // The audit log is written in batches (at most 1 s late).
  await new Promise((r) => setTimeout(r, 2500));
  const events = await readAuditLog(cluster.auditLogPath ?? '', OPERATOR_USER);
  const phases = [
    { name: 'start-up (initial list, leader election, first reconcile)', a: start0, b: start1 },
    { name: `idle (${values.idle})`, a: start1, b: idle1 },
    {
      name: `rollout of ${roll} nodes, maxUnavailable ${k}, reboot ${values['reboot-time']}`,
      a: rollStart,
      b: rollEnd,
    },
  ].map((p) => ({ ...p, req: countRequests(events, p.a.at, p.b.at), seconds: (p.b.at - p.a.at) / 1000 }));
  const hwm = rollEnd.hwmMiB;
  const idle = phases[1]?.req;
  const idleWritesPerMin = idle ? idle.writes / idle.minutes : Number.NaN;
  const idleNonLeaseWritesPerMin = idle ? (idle.writes - idle.leaseWrites) / idle.minutes : Number.NaN;
  const verbs = (r: PhaseCount) =>
    [...r.byVerb]
      .sort((a, b) => b[1] - a[1])
      .map(([v, n]) => `${v} ${(n / r.minutes).toFixed(1)}`)
      .join(', ');
  publish({
    id: 'footprint',
    title: `Operator footprint at ${nodes.toLocaleString('en')} nodes and ${pods.toLocaleString('en')} pods`,
    versions: cluster.binaries.versions,
    command: `npm run bench:footprint -- --nodes ${nodes} --pods ${pods} --roll ${roll} --max-unavailable ${k} --idle ${values.idle} --reboot-time ${values['reboot-time']}${placement !== 'direct' ? ` --placement ${placement}` : ''}`,
    body: [
      `One \`nuo operator\` process (the compiled entry an image runs, dist/src/cli/run.js, with deploy/base's \`NODE_OPTIONS=${OPERATOR_NODE_OPTIONS}\`) running as ServiceAccount nuo-system/nuo-operator with deploy/base/operator-rbac.yaml, on the local control plane with ${nodes} KWOK nodes (Leases of ${leaseSeconds} s, so heartbeats leave CPU for the rest; the operator does not watch Leases) and ${pods} pods ${placement === 'scheduler' ? `in ${deployments} Deployments under PDBs, placed by kube-scheduler` : 'created directly with spec.nodeName (10 a node; kube-scheduler placed 50,000 pods on 5,000 nodes at only 15-60 a second on this shared 2-core machine, so the default skips it; the operator drains these bare pods with --drain-force; `--placement scheduler` uses Deployments under PDBs instead)'} (${(podsMs / 1000).toFixed(0)} s until all were Running). The rollout phase stages an update on the first ${roll} nodes only, each with a simulated host and agent in the benchmark process; the other nodes stay Idle. Requests are counted by the API server (audit log, Metadata level, the operator's user only), per minute of each phase. 1-minute load average at the start: ${loadBefore.toFixed(1)} (shared machine).`,
      '',
      '| phase | duration | operator CPU | RSS at end / peak sampled | API requests per minute (by verb) |',
      '|---|---|---|---|---|',
      ...phases.map(
        (p) =>
          `| ${p.name} | ${p.seconds.toFixed(1)} s | ${(p.b.cpuSeconds - p.a.cpuSeconds).toFixed(2)} s (${(((p.b.cpuSeconds - p.a.cpuSeconds) / p.seconds) * 100).toFixed(1)} % of a core) | ${p.b.rssMiB.toFixed(0)} / ${p.b.peakInPhaseMiB.toFixed(0)} MiB | ${(p.req.total / p.req.minutes).toFixed(1)}: ${verbs(p.req)} |`,
      ),
      '',
      '| goal | measured |',
      '|---|---|',
      `| operator RSS ≤ ${RSS_GOAL_MIB} MiB | peak ${hwm.toFixed(0)} MiB (VmHWM)${hwm <= RSS_GOAL_MIB ? ' — met' : ' — **missed**'} |`,
      `| idle ≈ 0 writes/min | ${idleWritesPerMin.toFixed(1)} writes/min, of which ${(idleWritesPerMin - idleNonLeaseWritesPerMin).toFixed(1)} leader-Lease renewals and ${idleNonLeaseWritesPerMin.toFixed(1)} others |`,
      '',
      `Set-up (not the operator): ${nodes} nodes Ready in ${(nodeTiming.readyMs / 1000).toFixed(1)} s; ${pods} pods Running in ${(podsMs / 1000).toFixed(1)} s; whole run ${((performance.now() - t0) / 1000).toFixed(0)} s.`,
    ].join('\n'),
  });
} finally {
  sampler?.stop();
  if (operator && operator.exitCode === null) {
    const exited = new Promise((r) => operator?.once('exit', r));
    operator.kill('SIGTERM');
    await exited;
  }
  await Promise.all(hosts.map((h) => h.stop()));
  await nodeTally?.stop();
  agentClient.close();
  if (values['keep-logs']) cpSync(join(cluster.dir, 'logs'), values['keep-logs'], { recursive: true });
  await cluster.stop();
}
