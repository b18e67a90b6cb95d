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
import { PooledKubeConfig } from '../../kube/pooled-kubeconfig.ts';
import { pollUntil } from '../../util/poll.ts';
import { type AuditOptions, auditPolicy } from './audit.ts';
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

/** Nodes annotated `${KWOK_CUSTOM_STATUS}=custom` keep the status their simulated host writes. */
export const KWOK_CUSTOM_STATUS = 'kwok.x-k8s.io/status';

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
  stop(): Promise<void>;
}

export type ComponentName = 'etcd' | 'kube-apiserver' | 'kube-controller-manager' | 'kube-scheduler' | 'kwok';

const CONTROLLERS = [
  'disruption',
  'replicaset',
  'deployment',
  'job',
  'daemonset',
  'garbage-collector',
  'node-lifecycle',
  'taint-eviction',
  'serviceaccount',
  'serviceaccount-token',
  'namespace',
  'statefulset',
  'root-ca-certificate-publisher',
  'endpointslice',
  'ttl-after-finished',
  'cronjob',
  'pod-garbage-collector',
].map((name) => `${name}-controller`);

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

async function startClusterOnce(options: ClusterOptions): Promise<LocalCluster> {
  const log = options.log ?? (() => {});
  const started = Date.now();
  await reapAbandonedClusters(tmpdir(), CLUSTER_DIR_PREFIX);
  const binaries = await ensureClusterBinaries(log);
  const dir = await mkdtemp(join(tmpdir(), CLUSTER_DIR_PREFIX));
  const logs = join(dir, 'logs');
  mkdirSync(logs);
  const pidFile = join(dir, 'pids');
  writeFileSync(join(dir, 'owner'), String(process.pid));
  const removeDir = () => rmSync(dir, { recursive: true, force: true });
  process.on('exit', removeDir);

  const components = {} as Record<ComponentName, Component>;
  const argsOf = {} as Record<ComponentName, string[]>;
  const health = {} as Record<ComponentName, () => Promise<boolean>>;
  const timeoutMs = options.startTimeoutMs ?? 60_000;
  let raw: RawApi | undefined;
  let keeper: PodReadinessKeeper | undefined;

  const launch = async (name: ComponentName) => {
    const component = new Component({
      name,
      binary: binaries.path[name],
      args: argsOf[name],
      logFile: join(logs, `${name}.log`),
      pidFile,
    });
    components[name] = component;
    // An exit ends the wait at once (pollUntil would otherwise treat it as "not yet" until the deadline).
    const exited = new AbortController();
    void component.exited.then((code) => exited.abort(new StartupExit(`${name} exited with ${code}`)));
    await pollUntil(
      `${name} to become healthy (log: ${component.logFile})`,
      async () => ((await health[name]().catch(() => false)) ? true : undefined),
      { timeoutMs, intervalMs: 100, signal: exited.signal },
    ).catch((err: Error) => {
      const message = `${err.message}\n--- ${name} log tail ---\n${component.tail(40)}`;
      throw component.exitCode !== undefined ? new StartupExit(message) : new Error(message);
    });
  };

  const stopAll = async () => {
    const order: ComponentName[] = [
      'kwok',
      'kube-scheduler',
      'kube-controller-manager',
      'kube-apiserver',
      'etcd',
    ];
    for (const name of order) await components[name]?.stop();
  };

  try {
    const pki = await createPki(dir);
    const tlsAdmin: Tls = {
      ca: await readFile(pki.caCert),
      cert: await readFile(pki.adminCert),
      key: await readFile(pki.adminKey),
    };
    const ports = {
      etcdPort: await freePort(),
      peerPort: await freePort(),
      apiPort: await freePort(),
      cmPort: await freePort(),
      schedPort: await freePort(),
      kwokPort: await freePort(),
    };
    const { etcdPort, apiPort, cmPort, schedPort, kwokPort } = ports;
    const server = `https://127.0.0.1:${apiPort}`;
    const kubeconfigPath = join(dir, 'admin.kubeconfig');
    await writeFile(kubeconfigPath, adminKubeconfig(server, pki, tlsAdmin));
    // An explicit KWOK configuration (so a ~/.kwok/kwok.yaml cannot change the simulation) with KWOK's
    // own fast node and pod stages and Lease heartbeats, printed by the kwok-stages tool.
    const stages = (await run(binaries.path['kwok-stages'], [])).stdout;
    const leaseSeconds = options.nodeLeaseDurationSeconds ?? 40;
    if (!Number.isInteger(leaseSeconds) || leaseSeconds < 10)
      throw new Error(`nodeLeaseDurationSeconds must be an integer ≥ 10, got ${leaseSeconds}`);
    await writeFile(
      join(dir, 'kwok.yaml'),
      `${JSON.stringify({
        apiVersion: 'config.kwok.x-k8s.io/v1alpha1',
        kind: 'KwokConfiguration',
        // KWOK's defaults are 4 workers each; each node's Lease is created before its stages play, so
        // thousands of nodes become Ready only as fast as these workers create Leases.
        options: {
          nodeLeaseDurationSeconds: leaseSeconds,
          nodeLeaseParallelism: 64,
          nodePlayStageParallelism: 64,
          podPlayStageParallelism: 64,
          podsOnNodeSyncParallelism: 4,
        },
      })}\n---\n${stages}`,
    );
    const schedulerConfig = join(dir, 'scheduler.json');
    await writeFile(
      schedulerConfig,
      JSON.stringify({
        apiVersion: 'kubescheduler.config.k8s.io/v1',
        kind: 'KubeSchedulerConfiguration',
        clientConnection: { kubeconfig: kubeconfigPath, qps: 1000, burst: 2000 },
        leaderElection: { leaderElect: false },
      }),
    );
    Object.assign(argsOf, componentArgs({ dir, pki, kubeconfigPath, schedulerConfig, ports, leaseSeconds }));
    // Outside logs/, which logTails() prints whole-line for a failing test.
    const auditLogPath = options.audit ? join(dir, 'audit.log') : undefined;
    if (options.audit && auditLogPath) {
      const policyPath = join(dir, 'audit-policy.json');
      await writeFile(policyPath, JSON.stringify(auditPolicy(options.audit)));
      argsOf['kube-apiserver'].push(
        `--audit-policy-file=${policyPath}`,
        `--audit-log-path=${auditLogPath}`,
        '--audit-log-format=json',
        // Buffered writes: a blocking write per request would slow every audited request down.
        '--audit-log-mode=batch',
        '--audit-log-batch-max-wait=1s',
      );
    }
    health.etcd = async () => (await get(`http://127.0.0.1:${etcdPort}/health`)).body.includes('"true"');
    health['kube-apiserver'] = async () => (await get(`${server}/readyz`, tlsAdmin)).status === 200;
    health['kube-controller-manager'] = async () =>
      (await get(`https://127.0.0.1:${cmPort}/healthz`, { insecure: true })).status === 200;
    health['kube-scheduler'] = async () =>
      (await get(`https://127.0.0.1:${schedPort}/healthz`, { insecure: true })).status === 200;
    health.kwok = async () => (await get(`http://127.0.0.1:${kwokPort}/healthz`)).status === 200;

    await launch('etcd');
    log(`etcd healthy (${Date.now() - started} ms)`);
    await launch('kube-apiserver');
    log(`kube-apiserver ready at ${server} (${Date.now() - started} ms)`);
    await Promise.all([launch('kube-controller-manager'), launch('kube-scheduler'), launch('kwok')]);
    log(`controller-manager, scheduler and kwok healthy (${Date.now() - started} ms)`);

    const kubeconfig = new PooledKubeConfig();
    kubeconfig.loadFromFile(kubeconfigPath);
    const core = kubeconfig.makeApiClient(CoreV1Api);
    raw = new RawApi(server, tlsAdmin);
    const rawApi = raw;
    // Pods cannot be admitted before the namespace's default ServiceAccount exists.
    await pollUntil(
      'the default ServiceAccount',
      async () =>
        (await core.readNamespacedServiceAccount({ name: 'default', namespace: 'default' }))
          ? true
          : undefined,
      { timeoutMs },
    );
    keeper = new PodReadinessKeeper(kubeconfig, join(logs, 'pod-readiness.log'));
    await keeper.start();
    const podReadiness = keeper;

    const cluster: LocalCluster = {
      dir,
      server,
      caCert: tlsAdmin.ca as Buffer,
      binaries,
      kubeconfigPath,
      kubeconfig,
      auditLogPath,
      components,
      raw: rawApi,
      addNodes: (specs, o) => createNodes(rawApi, specs, o),
      async serviceAccountKubeconfig(namespace, name) {
        await core
          .createNamespacedServiceAccount({ namespace, body: { metadata: { name } } })
          .catch((err) => {
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
        const text = tokenKubeconfig(server, readFileSync(pki.caCert), `${namespace}-${name}`, token);
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
      async restart(name) {
        await components[name].stop();
        await launch(name);
      },
      async stop() {
        await podReadiness.stop();
        rawApi.close();
        await kubeconfig.close();
        await stopAll();
        process.off('exit', removeDir);
        await rm(dir, { recursive: true, force: true });
      },
    };

    const nodeCount = options.nodes ?? 0;
    if (nodeCount > 0) {
      const zones = options.zones ?? 1;
      const prefix = options.nodePrefix ?? 'node';
      await cluster.addNodes(
        Array.from({ length: nodeCount }, (_, i) => ({
          name: `${prefix}-${String(i).padStart(String(nodeCount - 1).length, '0')}`,
          zone: `zone-${String.fromCharCode(97 + (i % zones))}`,
        })),
      );
      log(`${nodeCount} nodes Ready (${Date.now() - started} ms)`);
    }
    return cluster;
  } catch (err) {
    await keeper?.stop();
    raw?.close();
    const tails = Object.values(components)
      .map((c) => `--- ${c.name} ---\n${c.tail(15)}`)
      .join('\n');
    await stopAll();
    process.off('exit', removeDir);
    removeDir();
    const message = `local cluster failed to start: ${(err as Error).message}\n${tails}`;
    throw err instanceof StartupExit ? new StartupExit(message) : new Error(message);
  }
}

interface ArgsInput {
  dir: string;
  leaseSeconds: number;
  pki: Pki;
  kubeconfigPath: string;
  schedulerConfig: string;
  ports: {
    etcdPort: number;
    peerPort: number;
    apiPort: number;
    cmPort: number;
    schedPort: number;
    kwokPort: number;
  };
}

function componentArgs({
  dir,
  leaseSeconds,
  pki,
  kubeconfigPath,
  schedulerConfig,
  ports,
}: ArgsInput): Record<ComponentName, string[]> {
  const etcdUrl = `http://127.0.0.1:${ports.etcdPort}`;
  const peerUrl = `http://127.0.0.1:${ports.peerPort}`;
  return {
    etcd: [
      '--name=nuo',
      `--data-dir=${join(dir, 'etcd')}`,
      `--listen-client-urls=${etcdUrl}`,
      `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=${peerUrl}`,
      `--initial-advertise-peer-urls=${peerUrl}`,
      `--initial-cluster=nuo=${peerUrl}`,
      // A throwaway test store: durability buys nothing and fsync dominates on a shared disk.
      '--unsafe-no-fsync',
      '--quota-backend-bytes=8589934592',
      '--log-level=warn',
    ],
    'kube-apiserver': [
      `--etcd-servers=${etcdUrl}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      // The endpoint reconciler refuses a loopback address; nothing here reaches the API through the
      // kubernetes Service, so it has nothing to reconcile.
      '--endpoint-reconciler-type=none',
      `--secure-port=${ports.apiPort}`,
      `--tls-cert-file=${pki.serverCert}`,
      `--tls-private-key-file=${pki.serverKey}`,
      `--client-ca-file=${pki.caCert}`,
      // Published in kube-system/extension-apiserver-authentication, where the controller-manager and
      // scheduler look for it when they authenticate their own health and metrics endpoints.
      `--requestheader-client-ca-file=${pki.caCert}`,
      '--requestheader-allowed-names=front-proxy-client',
      '--requestheader-username-headers=X-Remote-User',
      '--requestheader-group-headers=X-Remote-Group',
      '--requestheader-extra-headers-prefix=X-Remote-Extra-',
      '--authorization-mode=RBAC',
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${pki.serviceAccountPub}`,
      `--service-account-signing-key-file=${pki.serviceAccountKey}`,
      '--service-cluster-ip-range=10.96.0.0/16',
      // The release's default admission chain, which includes ValidatingAdmissionPolicy; named to be explicit.
      '--enable-admission-plugins=ValidatingAdmissionPolicy',
      '--allow-privileged=true',
      '--event-ttl=1h',
      `--cert-dir=${join(dir, 'apiserver-certs')}`,
    ],
    'kube-controller-manager': [
      `--kubeconfig=${kubeconfigPath}`,
      `--authentication-kubeconfig=${kubeconfigPath}`,
      `--authorization-kubeconfig=${kubeconfigPath}`,
      '--bind-address=127.0.0.1',
      `--secure-port=${ports.cmPort}`,
      `--cert-dir=${join(dir, 'cm-certs')}`,
      `--controllers=${CONTROLLERS.join(',')}`,
      `--service-account-private-key-file=${pki.serviceAccountKey}`,
      `--root-ca-file=${pki.caCert}`,
      '--leader-elect=false',
      '--kube-api-qps=1000',
      '--kube-api-burst=2000',
      '--concurrent-deployment-syncs=20',
      '--concurrent-replicaset-syncs=20',
      // PDB status (disruptionsAllowed) is what a drain waits on. One worker (the default) serialises
      // every PDB's status write behind the others', seconds apart on this busy machine.
      '--concurrent-disruption-syncs=20',
      // Beta in v1.36: a ReplicaSet is not synced until the controller's cache shows its own last write.
      // On a dedicated control plane that cache lags by milliseconds; here by seconds, and in a
      // 1,000-node rollout 5,390 syncs failed so and were retried with backoff under the controller's
      // shared 10/s retry limit, delaying the replacement pods that evicted pods' PDBs wait for.
      '--feature-gates=StaleControllerConsistencyReplicaSet=false',
      // A node whose Lease has not been renewed for this long is NotReady (Unknown).
      `--node-monitor-grace-period=${Math.max(50, Math.ceil(leaseSeconds * 1.25))}s`,
    ],
    'kube-scheduler': [
      `--config=${schedulerConfig}`,
      `--authentication-kubeconfig=${kubeconfigPath}`,
      `--authorization-kubeconfig=${kubeconfigPath}`,
      '--bind-address=127.0.0.1',
      `--secure-port=${ports.schedPort}`,
      `--cert-dir=${join(dir, 'scheduler-certs')}`,
    ],
    kwok: [
      `--kubeconfig=${kubeconfigPath}`,
      `--config=${join(dir, 'kwok.yaml')}`,
      '--manage-all-nodes=false',
      '--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake',
      '--manage-nodes-with-label-selector=',
      // A simulated node host takes over the status of a node it is rebooting (NotReady, new boot ID).
      `--disregard-status-with-annotation-selector=${KWOK_CUSTOM_STATUS}=custom`,
      '--disregard-status-with-label-selector=',
      `--server-address=127.0.0.1:${ports.kwokPort}`,
      // INFO logs every pod and node patch: gigabytes at thousands of nodes.
      '--v=WARN',
      '--node-ip=127.0.0.1',
      '--cidr=10.244.0.1/16',
      // Heartbeats through Leases, as kubelets do: cheap enough for thousands of nodes.
      `--node-lease-duration-seconds=${leaseSeconds}`,
    ],
  };
}
