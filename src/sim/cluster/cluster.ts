/**
 * A real Kubernetes control plane on loopback for tests, the demo and benchmarks: etcd,
 * kube-apiserver (TLS, RBAC, service-account tokens, default admission including
 * ValidatingAdmissionPolicy), kube-controller-manager, kube-scheduler and KWOK playing the kubelets,
 * with the harness playing the part of a kubelet KWOK lacks (pod-readiness.ts).
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { type ClusterBinaries, ensureClusterBinaries } from '../../../tools/cluster/build.ts';
import { describeError } from '../../kube/errors.ts';
import { PooledKubeConfig } from '../../kube/pooled-kubeconfig.ts';
import { pollUntil } from '../../util/poll.ts';
import { type AuditOptions, auditPolicy } from './audit.ts';
import { componentArgs, kwokConfig, type Ports, schedulerConfig } from './component-args.ts';
import { adminKubeconfig, tokenKubeconfig } from './kubeconfig.ts';
import { freePort, get, type Tls } from './net.ts';
import { createNodes, type NodeSpec } from './nodes.ts';
import { createPki, type Pki } from './pki.ts';
import { PodReadinessKeeper } from './pod-readiness.ts';
import { Component } from './process.ts';
import { RawApi } from './raw-api.ts';
import { reapAbandonedClusters } from './reaper.ts';

export interface ClusterOptions {
  /** KWOK nodes to create and wait Ready for (default 0). */
  nodes?: number;
  /** Zones the nodes are spread over round-robin, labelled topology.kubernetes.io/zone (default 1). */
  zones?: number;
  /** Node name prefix (default "node"). */
  nodePrefix?: string;
  /** Called with progress lines; default silent. */
  log?: (line: string) => void;
  /**
   * Duration of the KWOK nodes' Leases (default 40 s, the kubelet's); KWOK renews each a quarter of it
   * apart, and the node-lifecycle controller's grace period is set to 1.25 times it (at least 50 s, its
   * default). Heartbeats are the bulk of a large idle cluster's writes (5,000 nodes renewing every 10 s
   * is 500 Lease updates a second), so benchmarks of thousands of nodes lengthen it.
   */
  nodeLeaseDurationSeconds?: number;
  /**
   * kube-apiserver audit logging at Metadata level, as JSON lines in `auditLogPath` (read them with
   * readAuditLog from ./audit.ts): of the given users' requests, or of every request.
   */
  audit?: AuditOptions;
  /** Start-up deadline for each component (default 60 s; the first start after a build is slower). */
  startTimeoutMs?: number;
}

const run = promisify(execFile);

export { KWOK_CUSTOM_STATUS } from './component-args.ts';

const CLUSTER_DIR_PREFIX = 'nuo-cluster-';

export interface LocalCluster {
  /** Temp dir holding the PKI, configs and logs/ (removed by stop()). */
  dir: string;
  server: string;
  /** The cluster CA certificate (PEM), for clients that build their own TLS config. */
  caCert: Buffer;
  binaries: ClusterBinaries;
  /** Admin (system:masters) kubeconfig file and loaded object. */
  kubeconfigPath: string;
  kubeconfig: KubeConfig;
  /** The API server's audit log (JSON lines), when started with the `audit` option. */
  auditLogPath?: string;
  components: Record<ComponentName, Component>;
  /**
   * A plain-JSON admin client for bulk work (thousands of creations, counting watches), much cheaper per
   * request than the typed client; closed by stop().
   */
  raw: RawApi;
  /**
   * Creates KWOK nodes and waits until they are Ready and untainted, i.e. schedulable (`readyOnly`: the
   * Ready condition only; `parallel` creations in flight, default 50).
   */
  addNodes(
    specs: NodeSpec[],
    options?: { parallel?: number; timeoutMs?: number; readyOnly?: boolean },
  ): Promise<{ createdMs: number; readyMs: number }>;
  /** A kubeconfig that authenticates as a ServiceAccount (created if missing) with a bound token. */
  serviceAccountKubeconfig(
    namespace: string,
    name: string,
  ): Promise<{ kubeconfig: KubeConfig; path: string }>;
  /** The last lines of every component's log, for a failing test's output. */
  logTails(lines?: number): string;
  /** Restarts one component (e.g. to simulate an API server outage), waiting until it is healthy. */
  restart(name: ComponentName): Promise<void>;
  /**
   * Runs `teardown` first when the cluster stops (what uses the cluster stops before it: a fleet's agents
   * must not outlive the API server and the log directory). Returns a function that unregisters it.
   */
  beforeStop(teardown: () => Promise<void>): () => void;
  stop(): Promise<void>;
}

export type ComponentName = 'etcd' | 'kube-apiserver' | 'kube-controller-manager' | 'kube-scheduler' | 'kwok';

/** Thrown when a component exited during start-up (e.g. a loopback port taken between pick and bind). */
class StartupExit extends Error {}

/**
 * Starts the cluster; a start-up in which a component exits (most often: another process took one of the
 * free ports it was given) is retried on new ports, twice at most.
 */
export async function startCluster(options: ClusterOptions = {}): Promise<LocalCluster> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startClusterOnce(options);
    } catch (err) {
      if (!(err instanceof StartupExit) || attempt >= 3) throw err;
      (options.log ?? (() => {}))(
        `a component exited during start-up; retrying on new ports (${err.message.split('\n')[0]})`,
      );
    }
  }
}

/** The cluster's directory: its logs, its components' pid file, removed with the process if left behind. */
interface Workspace {
  dir: string;
  logs: string;
  pidFile: string;
  remove: () => void;
}

async function makeWorkspace(): Promise<Workspace> {
  const dir = await mkdtemp(join(tmpdir(), CLUSTER_DIR_PREFIX));
  const logs = join(dir, 'logs');
  mkdirSync(logs);
  writeFileSync(join(dir, 'owner'), String(process.pid));
  const remove = () => rmSync(dir, { recursive: true, force: true });
  process.on('exit', remove);
  return { dir, logs, pidFile: join(dir, 'pids'), remove };
}

/** What the components are started with: PKI, ports, configuration files, command lines, health checks. */
interface Setup {
  pki: Pki;
  tlsAdmin: Tls;
  server: string;
  kubeconfigPath: string;
  auditLogPath?: string;
  args: Record<ComponentName, string[]>;
  health: Record<ComponentName, () => Promise<boolean>>;
}

async function writeSetup(dir: string, binaries: ClusterBinaries, options: ClusterOptions): Promise<Setup> {
  const leaseSeconds = options.nodeLeaseDurationSeconds ?? 40;
  if (!Number.isInteger(leaseSeconds) || leaseSeconds < 10)
    throw new Error(`nodeLeaseDurationSeconds must be an integer ≥ 10, got ${leaseSeconds}`);
  const pki = await createPki(dir);
  const tlsAdmin: Tls = {
    ca: await readFile(pki.caCert),
    cert: await readFile(pki.adminCert),
    key: await readFile(pki.adminKey),
  };
  const ports: Ports = {
    etcdPort: await freePort(),
    peerPort: await freePort(),
    apiPort: await freePort(),
    cmPort: await freePort(),
    schedPort: await freePort(),
    kwokPort: await freePort(),
  };
  const server = `https://127.0.0.1:${ports.apiPort}`;
  const kubeconfigPath = join(dir, 'admin.kubeconfig');
  await writeFile(kubeconfigPath, adminKubeconfig(server, pki, tlsAdmin));
  const stages = (await run(binaries.path['kwok-stages'], [])).stdout;
  await writeFile(join(dir, 'kwok.yaml'), kwokConfig(leaseSeconds, stages));
  const schedulerPath = join(dir, 'scheduler.json');
  await writeFile(schedulerPath, schedulerConfig(kubeconfigPath));
  const args = componentArgs({
    dir,
    pki,
    kubeconfigPath,
    schedulerConfig: schedulerPath,
    ports,
    leaseSeconds,
  });
  // Outside logs/, which logTails() prints whole-line for a failing test.
  const auditLogPath = options.audit ? join(dir, 'audit.log') : undefined;
  if (options.audit && auditLogPath) {
    const policyPath = join(dir, 'audit-policy.json');
    await writeFile(policyPath, JSON.stringify(auditPolicy(options.audit)));
    args['kube-apiserver'].push(
      `--audit-policy-file=${policyPath}`,
      `--audit-log-path=${auditLogPath}`,
      '--audit-log-format=json',
      // Buffered writes: a blocking write per request would slow every audited request down.
      '--audit-log-mode=batch',
      '--audit-log-batch-max-wait=1s',
    );
  }
  const { etcdPort, cmPort, schedPort, kwokPort } = ports;
  const health: Setup['health'] = {
    etcd: async () => (await get(`http://127.0.0.1:${etcdPort}/health`)).body.includes('"true"'),
    'kube-apiserver': async () => (await get(`${server}/readyz`, tlsAdmin)).status === 200,
    'kube-controller-manager': async () =>
      (await get(`https://127.0.0.1:${cmPort}/healthz`, { insecure: true })).status === 200,
    'kube-scheduler': async () =>
      (await get(`https://127.0.0.1:${schedPort}/healthz`, { insecure: true })).status === 200,
    kwok: async () => (await get(`http://127.0.0.1:${kwokPort}/healthz`)).status === 200,
  };
  return { pki, tlsAdmin, server, kubeconfigPath, args, health, ...(auditLogPath ? { auditLogPath } : {}) };
}

/** The component processes: each launched and waited healthy, stopped in reverse order of dependence. */
class ControlPlane {
  readonly components = {} as Record<ComponentName, Component>;
  readonly #binaries: ClusterBinaries;
  readonly #workspace: Workspace;
  readonly #timeoutMs: number;
  #setup: Setup | undefined;
  /**
   * Aborted when any component exits: a health probe can be answered by another cluster's process that
   * holds the port this one failed to bind, so start-up waits past the probes with this signal too.
   */
  readonly #anyExit = new AbortController();

  constructor(binaries: ClusterBinaries, workspace: Workspace, timeoutMs: number) {
    this.#binaries = binaries;
    this.#workspace = workspace;
    this.#timeoutMs = timeoutMs;
  }

  async start(setup: Setup, log: (line: string) => void, since: number): Promise<void> {
    this.#setup = setup;
    await this.launch('etcd');
    log(`etcd healthy (${Date.now() - since} ms)`);
    await this.launch('kube-apiserver');
    log(`kube-apiserver ready at ${setup.server} (${Date.now() - since} ms)`);
    await Promise.all([
      this.launch('kube-controller-manager'),
      this.launch('kube-scheduler'),
      this.launch('kwok'),
    ]);
    log(`controller-manager, scheduler and kwok healthy (${Date.now() - since} ms)`);
  }

  async launch(name: ComponentName): Promise<void> {
    const setup = this.#setup;
    if (!setup) throw new Error(`cannot launch ${name}: the control plane was not set up`);
    const component = new Component({
      name,
      binary: this.#binaries.path[name],
      args: setup.args[name],
      logFile: join(this.#workspace.logs, `${name}.log`),
      pidFile: this.#workspace.pidFile,
    });
    this.components[name] = component;
    // An exit ends the wait at once (pollUntil would otherwise treat it as "not yet" until the deadline).
    const exited = new AbortController();
    void component.exited.then((code) => {
      const exit = new StartupExit(`${name} exited with ${code}`);
      exited.abort(exit);
      this.#anyExit.abort(exit);
    });
    await pollUntil(
      `${name} to become healthy (log: ${component.logFile})`,
      async () => ((await setup.health[name]().catch(() => false)) ? true : undefined),
      { timeoutMs: this.#timeoutMs, intervalMs: 100, signal: exited.signal },
    ).catch((err: Error) => {
      const message = `${err.message}\n--- ${name} log tail ---\n${component.tail(40)}`;
      throw component.exitCode !== undefined ? new StartupExit(message) : new Error(message);
    });
  }

  /** Aborted once any component has exited (for waits during start-up only: a restart exits one too). */
  get anyExit(): AbortSignal {
    return this.#anyExit.signal;
  }

  async restart(name: ComponentName): Promise<void> {
    await this.components[name].stop();
    await this.launch(name);
  }

  async stop(): Promise<void> {
    const order: ComponentName[] = [
      'kwok',
      'kube-scheduler',
      'kube-controller-manager',
      'kube-apiserver',
      'etcd',
    ];
    for (const name of order) await this.components[name]?.stop();
  }

  tails(lines: number): string {
    return Object.values(this.components)
      .map((c) => `--- ${c.name} ---\n${c.tail(lines)}`)
      .join('\n');
  }
}

/** Nodes named `prefix-N` (zero-padded), spread over the zones round-robin. */
function initialNodes(options: ClusterOptions): NodeSpec[] {
  const count = options.nodes ?? 0;
  const zones = options.zones ?? 1;
  const prefix = options.nodePrefix ?? 'node';
  return Array.from({ length: count }, (_, i) => ({
    name: `${prefix}-${String(i).padStart(String(count - 1).length, '0')}`,
    zone: `zone-${String.fromCharCode(97 + (i % zones))}`,
  }));
}

async function startClusterOnce(options: ClusterOptions): Promise<LocalCluster> {
  const log = options.log ?? (() => {});
  const started = Date.now();
  await reapAbandonedClusters(tmpdir(), CLUSTER_DIR_PREFIX);
  const binaries = await ensureClusterBinaries(log);
  const workspace = await makeWorkspace();
  const timeoutMs = options.startTimeoutMs ?? 60_000;
  const plane = new ControlPlane(binaries, workspace, timeoutMs);
  let raw: RawApi | undefined;
  let keeper: PodReadinessKeeper | undefined;
  try {
    const setup = await writeSetup(workspace.dir, binaries, options);
    await plane.start(setup, log, started);
    const kubeconfig = new PooledKubeConfig();
    kubeconfig.loadFromFile(setup.kubeconfigPath);
    const core = kubeconfig.makeApiClient(CoreV1Api);
    raw = new RawApi(setup.server, setup.tlsAdmin);
    // Pods cannot be admitted before the namespace's default ServiceAccount exists.
    await pollUntil(
      'the default ServiceAccount',
      async () =>
        (await core.readNamespacedServiceAccount({ name: 'default', namespace: 'default' }))
          ? true
          : undefined,
      { timeoutMs, signal: plane.anyExit },
    );
    keeper = new PodReadinessKeeper(kubeconfig, join(workspace.logs, 'pod-readiness.log'));
    await keeper.start();
    const cluster = clusterHandle({ workspace, setup, plane, binaries, kubeconfig, core, raw, keeper });
    const nodes = initialNodes(options);
    if (nodes.length > 0) {
      await cluster.addNodes(nodes);
      log(`${nodes.length} nodes Ready (${Date.now() - started} ms)`);
    }
    plane.anyExit.throwIfAborted();
    return cluster;
  } catch (err) {
    await keeper?.stop();
    raw?.close();
    const tails = plane.tails(15);
    await plane.stop();
    process.off('exit', workspace.remove);
    workspace.remove();
    const message = `local cluster failed to start: ${(err as Error).message}\n${tails}`;
    throw err instanceof StartupExit ? new StartupExit(message) : new Error(message);
  }
}

interface HandleParts {
  workspace: Workspace;
  setup: Setup;
  plane: ControlPlane;
  binaries: ClusterBinaries;
  kubeconfig: PooledKubeConfig;
  core: CoreV1Api;
  raw: RawApi;
  keeper: PodReadinessKeeper;
}

/** The running cluster as tests see it. */
function clusterHandle(p: HandleParts): LocalCluster {
  const { workspace, setup, plane, kubeconfig, core, raw } = p;
  const { dir, logs } = workspace;
  const teardowns = new Set<() => Promise<void>>();
  return {
    dir,
    server: setup.server,
    caCert: setup.tlsAdmin.ca as Buffer,
    binaries: p.binaries,
    kubeconfigPath: setup.kubeconfigPath,
    kubeconfig,
    auditLogPath: setup.auditLogPath,
    components: plane.components,
    raw,
    addNodes: (specs, o) => createNodes(raw, specs, o),
    async serviceAccountKubeconfig(namespace, name) {
      await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } }).catch((err) => {
        if ((err as { code?: number }).code !== 409) throw err;
      });
      const review = await core.createNamespacedServiceAccountToken({
        name,
        namespace,
        body: { spec: { audiences: [], expirationSeconds: 3600 } },
      });
      const token = review.status?.token;
      if (!token) throw new Error(`TokenRequest for ${namespace}/${name} returned no token`);
      const path = join(dir, `sa-${namespace}-${name}.kubeconfig`);
      const text = tokenKubeconfig(
        setup.server,
        readFileSync(setup.pki.caCert),
        `${namespace}-${name}`,
        token,
      );
      await writeFile(path, text);
      const kc = new PooledKubeConfig();
      kc.loadFromString(text);
      return { kubeconfig: kc, path };
    },
    logTails(lines = 40) {
      // Every log in logs/: the components', and those of operators and agents tests started.
      return readdirSync(logs)
        .map((file) => {
          const text = readFileSync(join(logs, file), 'utf8').split('\n').slice(-lines).join('\n');
          return `--- ${file} (${join(logs, file)}) ---\n${text}`;
        })
        .join('\n');
    },
    restart: (name) => plane.restart(name),
    beforeStop(teardown) {
      teardowns.add(teardown);
      return () => teardowns.delete(teardown);
    },
    async stop() {
      for (const teardown of [...teardowns]) {
        await teardown().catch((err: unknown) =>
          process.stderr.write(`local cluster: a teardown before its stop failed: ${describeError(err)}\n`),
        );
      }
      teardowns.clear();
      await p.keeper.stop();
      raw.close();
      await kubeconfig.close();
      await plane.stop();
      process.off('exit', workspace.remove);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
