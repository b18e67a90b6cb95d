/**
 * A real Kubernetes control plane on loopback for tests, the demo and benchmarks: etcd,
 * kube-apiserver (TLS, RBAC, service-account tokens, default admission including
 * ValidatingAdmissionPolicy), kube-controller-manager, kube-scheduler and KWOK playing the kubelets,
 * with the harness playing the part of a kubelet KWOK lacks (pod-readiness.ts).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { type ClusterBinaries, ensureClusterBinaries } from '../../../tools/cluster/build.ts';
import { describeError } from '../../kube/errors.ts';
import { PooledKubeConfig } from '../../kube/pooled-kubeconfig.ts';
import { pollUntil } from '../../util/poll.ts';
import type { ComponentName } from './component-args.ts';
import { ControlPlane, StartupExit } from './control-plane.ts';
import { tokenKubeconfig } from './kubeconfig.ts';
import { createNodes, type NodeSpec, zoneName } from './nodes.ts';
import type { Pki } from './pki.ts';
import { PodReadinessKeeper } from './pod-readiness.ts';
import type { Component } from './process.ts';
import { RawApi } from './raw-api.ts';
import { reapAbandonedClusters } from './reaper.ts';
import {
  CLUSTER_DIR_PREFIX,
  makeWorkspace,
  type Setup,
  type SetupOptions,
  type Workspace,
  writeSetup,
} from './setup.ts';

export interface ClusterOptions extends SetupOptions {
  /** KWOK nodes to create and wait Ready for (default 0). */
  nodes?: number;
  /** Zones the nodes are spread over round-robin, labelled topology.kubernetes.io/zone (default 1). */
  zones?: number;
  /** Node name prefix (default "node"). */
  nodePrefix?: string;
  /** Called with progress lines; default silent. */
  log?: (line: string) => void;
  /** Start-up deadline for each component (default 60 s; the first start after a build is slower). */
  startTimeoutMs?: number;
}

export { KWOK_CUSTOM_STATUS } from './component-args.ts';

export interface LocalCluster {
  /** Temp dir holding the PKI, configs and logs/ (removed by stop()). */
  dir: string;
  server: string;
  /** The cluster CA certificate (PEM), for clients that build their own TLS config. */
  caCert: Buffer;
  /** The PKI's files (in `dir`): the CA's key signs the credentials of VM nodes (src/sim/vm). */
  pki: Pki;
  /** The file the reaper of abandoned clusters reads pids from: processes started for this cluster. */
  pidFile: string;
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

/** Nodes named `prefix-N` (zero-padded), spread over the zones round-robin. */
function initialNodes(options: ClusterOptions): NodeSpec[] {
  const count = options.nodes ?? 0;
  const zones = options.zones ?? 1;
  const prefix = options.nodePrefix ?? 'node';
  return Array.from({ length: count }, (_, i) => ({
    name: `${prefix}-${String(i).padStart(String(count - 1).length, '0')}`,
    zone: zoneName(i, zones),
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
    pki: setup.pki,
    pidFile: workspace.pidFile,
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
