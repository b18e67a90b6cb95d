/**
 * FLUO's real update-agent (the Flatcar Linux update operator's, built unmodified by tools/fluo/build.ts)
 * as a simulated node's agent, in place of nuo's: one runc container per node, as its DaemonSet pod, on the
 * host network, running as root with FLUO's own ServiceAccount token (bound to the Node, so it carries the
 * node's name) where in-cluster configuration reads it, the host's /etc/os-release and /etc/flatcar bound
 * in, and the node's own system bus: a private dbus-daemon with update_engine and logind on it. logind's
 * Reboot is the simulated host's reboot (host.ts): the container dies with the host, and the boot starts a
 * new one. A container that exits on its own is restarted after a backoff, as the kubelet restarts a pod.
 */
import { execFile } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { copyFile, link, mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CoreV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { ensureFluoAgent } from '../../tools/fluo/build.ts';
import type { RuntimeSpec } from '../../tools/image/container.ts';
import { type Container, Runc, type Unpacked } from '../../tools/image/runc.ts';
import type { LocalCluster } from './cluster/cluster.ts';
import { cleanUpWithHarness } from './cluster/process.ts';
import {
  booted,
  FIRST_FLATCAR_VERSION,
  type FlatcarOs,
  osRelease,
  staged,
  updateConf,
  updateEngineStatus,
} from './fluo-os.ts';
import type { HostAgent, SimHost } from './host.ts';
import { PrivateBus } from './os/private-bus.ts';
import { FakeLogind, FakeUpdateEngine } from './os/services.ts';

const run = promisify(execFile);

/** FLUO's agent's namespace, ServiceAccount and ClusterRole, named as its deploy manifests name them. */
export const FLUO_AGENT_ACCOUNT = {
  namespace: 'reboot-coordinator',
  name: 'flatcar-linux-update-agent',
} as const;

/** Where a pod's service-account files are, the one place client-go's in-cluster configuration reads. */
const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
/** Where the node's system bus is bound; DBUS_SYSTEM_BUS_ADDRESS names its socket there. */
const DBUS_DIR = '/var/run/dbus';
/** Longer than any simulated run, so no token needs renewing. */
const TOKEN_SECONDS = 24 * 3600;
/** The kubelet's crash backoff (10 s doubling to 5 min), scaled down for seconds-long tests. */
const RESTART_BACKOFF_MS = 1000;
const MAX_RESTART_BACKOFF_MS = 30_000;

type Log = (level: 'info' | 'warn' | 'error', message: string) => void;

export interface FluoAgentsOptions {
  log?: Log;
}

/** The update group the hosts' /etc/flatcar/update.conf names, as Flatcar's default one does. */
const UPDATE_GROUP = 'stable';

/** FLUO's RBAC for its agent, as its deploy manifests grant it: nodes, pods, evictions, DaemonSets. */
async function grantAgentRbac(cluster: LocalCluster): Promise<void> {
  const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
  const rbac = cluster.kubeconfig.makeApiClient(RbacAuthorizationV1Api);
  const { namespace, name } = FLUO_AGENT_ACCOUNT;
  const exists = (err: unknown) => {
    if ((err as { code?: number }).code !== 409) throw err;
  };
  await core.createNamespace({ body: { metadata: { name: namespace } } }).catch(exists);
  await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } }).catch(exists);
  await rbac
    .createClusterRole({
      body: {
        metadata: { name },
        rules: [
          { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch', 'update'] },
          { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'delete'] },
          { apiGroups: [''], resources: ['pods/eviction'], verbs: ['create'] },
          { apiGroups: ['apps'], resources: ['daemonsets'], verbs: ['get'] },
        ],
      },
    })
    .catch(exists);
  await rbac
    .createClusterRoleBinding({
      body: {
        metadata: { name },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
        subjects: [{ kind: 'ServiceAccount', name, namespace }],
      },
    })
    .catch(exists);
}

/**
 * The root filesystem every agent's container shares, read-only: the binary, Flatcar's default
 * update.conf and the mount points; and runc's default runtime configuration to start from.
 */
async function prepareRootfs(dir: string, binary: string): Promise<Unpacked> {
  const rootfs = join(dir, 'rootfs');
  for (const d of ['bin', 'proc', 'sys', 'dev', 'tmp', 'etc/flatcar', 'usr/share/flatcar', DBUS_DIR]) {
    await mkdir(join(rootfs, d), { recursive: true });
  }
  await mkdir(join(rootfs, SERVICE_ACCOUNT_DIR), { recursive: true });
  await writeFile(join(rootfs, 'etc/os-release'), '');
  await writeFile(join(rootfs, 'usr/share/flatcar/update.conf'), updateConf(UPDATE_GROUP));
  // A hard link where the cache and the cluster share a file system; else a copy.
  await link(binary, join(rootfs, 'bin/update-agent')).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'EXDEV') throw err;
    return copyFile(binary, join(rootfs, 'bin/update-agent'));
  });
  await run('runc', ['spec', '--bundle', dir]).catch((err: Error) => {
    throw new Error(`runc spec failed (${err.message}); install Debian's runc (see .ci/run)`);
  });
  const base = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8')) as RuntimeSpec;
  return { rootfs, base };
}

/** FLUO's agents of one cluster: the built binary, its root filesystem, runc, the RBAC; one per node. */
export class FluoAgents {
  readonly nodes = new Map<string, FluoNodeAgent>();
  readonly #cluster: LocalCluster;
  readonly #dir: string;
  readonly #unpacked: Unpacked;
  readonly #runc = new Runc();
  readonly #forget: () => void;
  readonly #options: FluoAgentsOptions;

  private constructor(cluster: LocalCluster, dir: string, unpacked: Unpacked, options: FluoAgentsOptions) {
    this.#cluster = cluster;
    this.#dir = dir;
    this.#unpacked = unpacked;
    this.#options = options;
    this.#forget = cleanUpWithHarness(() => this.#runc.deleteAll());
  }

  /** Builds the agent if need be (tools/fluo/build.ts), prepares its root filesystem and grants its RBAC. */
  static async start(cluster: LocalCluster, options: FluoAgentsOptions = {}): Promise<FluoAgents> {
    const binary = await ensureFluoAgent((line) => options.log?.('info', `fluo build: ${line}`));
    // A directory of its own: a cluster outlives its fleets, and each fleet starts its FLUO agents afresh.
    const dir = await mkdtemp(join(cluster.dir, 'fluo-'));
    const unpacked = await prepareRootfs(dir, binary.path);
    await grantAgentRbac(cluster);
    return new FluoAgents(cluster, dir, unpacked, options);
  }

  /** The agent of one node, with the node's system bus and services running: a SimHost's `agent`. */
  async agentFor(nodeName: string): Promise<FluoNodeAgent> {
    if (this.nodes.has(nodeName)) throw new Error(`node ${nodeName} already has a FLUO agent`);
    const bus = await PrivateBus.create();
    const updateEngine = new FakeUpdateEngine(bus.address);
    const logind = new FakeLogind(bus.address);
    try {
      await updateEngine.start();
      await logind.start();
    } catch (err) {
      await updateEngine.stop();
      await bus.dispose();
      throw err;
    }
    const agent = new FluoNodeAgent({
      nodeName,
      cluster: this.#cluster,
      dir: join(this.#dir, nodeName),
      unpacked: this.#unpacked,
      runc: this.#runc,
      bus,
      updateEngine,
      logind,
      os: { version: FIRST_FLATCAR_VERSION },
      log: this.#options.log,
    });
    this.nodes.set(nodeName, agent);
    return agent;
  }

  /** Stops every node's services and bus and removes any container left (stop the hosts first). */
  async stop(): Promise<void> {
    await Promise.all([...this.nodes.values()].map((n) => n.dispose()));
    this.#runc.deleteAll();
    this.#runc.close();
    this.#forget();
  }
}

interface NodeParts {
  nodeName: string;
  cluster: LocalCluster;
  dir: string;
  unpacked: Unpacked;
  runc: Runc;
  bus: PrivateBus;
  updateEngine: FakeUpdateEngine;
  logind: FakeLogind;
  os: FlatcarOs;
  log: Log | undefined;
}

/** One node's FLUO agent and the OS it talks to. */
export class FluoNodeAgent implements HostAgent {
  readonly nodeName: string;
  /** com.coreos.update1 on the node's bus: reports what the host's state says (fluo-os.ts). */
  readonly updateEngine: FakeUpdateEngine;
  /** org.freedesktop.login1 on the node's bus: its `calls` are the agent's Reboot calls. */
  readonly logind: FakeLogind;
  /** Containers started so far: one per boot, and one per restart after the agent exited. */
  starts = 0;
  readonly #p: NodeParts;
  #os: FlatcarOs;
  #bootId: string | undefined;
  #output = '';
  #running: Promise<void> = Promise.resolve();
  #current: Container | undefined;

  constructor(parts: NodeParts) {
    this.#p = parts;
    this.nodeName = parts.nodeName;
    this.updateEngine = parts.updateEngine;
    this.logind = parts.logind;
    this.#os = parts.os;
  }

  /** The version running now and the one staged for the next boot. */
  get os(): FlatcarOs {
    return this.#os;
  }

  /** The host directory bound at the container's service-account path: token, ca.crt, namespace. */
  get serviceAccountDir(): string {
    return join(this.#p.dir, 'serviceaccount');
  }

  /** The running agent's process id as this machine sees it; undefined while no container runs. */
  pid(): number | undefined {
    try {
      return this.#current?.pid();
    } catch {
      return undefined;
    }
  }

  /** Everything the node's containers wrote, each start headed by a line. */
  output(): string {
    return this.#output;
  }

  get #logFile(): string {
    return join(this.#p.cluster.dir, 'logs', `fluo-agent-${this.nodeName}.log`);
  }

  #write(text: string): void {
    this.#output += text;
    appendFileSync(this.#logFile, text);
  }

  /** Runs the agent while the host is up: a container, restarted after a backoff if it exits. */
  async run(host: SimHost, signal: AbortSignal): Promise<void> {
    const previous = this.#running;
    let finished = () => {};
    this.#running = new Promise((resolve) => {
      finished = resolve;
    });
    try {
      // One container per node at a time: the one being replaced is gone before the next starts.
      await previous;
      if (signal.aborted) return;
      if (host.bootIdValue !== this.#bootId) {
        this.#bootId = host.bootIdValue;
        this.#os = booted(this.#os, host.needsReboot);
      }
      this.#sync(host, false);
      this.logind.onReboot = () => {
        host.reboot().catch((err) => this.#p.log?.('error', `host ${this.nodeName}: logind reboot: ${err}`));
      };
      const unwatch = host.watch(() => this.#sync(host, true));
      try {
        for (let backoffMs = RESTART_BACKOFF_MS; !signal.aborted; ) {
          const exit = await this.#container(signal).catch((err: Error) => `not started: ${err.message}`);
          if (signal.aborted || exit === undefined) break;
          this.#p.log?.('warn', `FLUO agent on ${this.nodeName} ${exit}; restarting it in ${backoffMs} ms`);
          await sleep(backoffMs, signal);
          backoffMs = Math.min(backoffMs * 2, MAX_RESTART_BACKOFF_MS);
        }
      } finally {
        unwatch();
      }
    } finally {
      finished();
    }
  }

  /** update_engine follows the host: an update staged while it needs a reboot, idle after the reboot. */
  #sync(host: SimHost, emit: boolean): void {
    this.#os = staged(this.#os, host.needsReboot);
    this.updateEngine.set(updateEngineStatus(this.#os, host.needsReboot, new Date()), { emit });
  }

  /** One container until it exits (how, returned) or the signal aborts (undefined). */
  async #container(signal: AbortSignal): Promise<string | undefined> {
    const { cluster, runc, unpacked, bus } = this.#p;
    await this.#writeHostFiles(await this.#mintToken());
    if (signal.aborted) return undefined;
    const server = new URL(cluster.server);
    this.starts++;
    this.#write(`=== ${new Date().toISOString()} container ${this.starts} for ${this.nodeName}\n`);
    const container = runc.start(unpacked, {
      // As FLUO's DaemonSet runs it: no flags.
      args: ['/bin/update-agent'],
      hostNetwork: true,
      binds: [
        { source: this.serviceAccountDir, destination: SERVICE_ACCOUNT_DIR },
        { source: join(this.#p.dir, 'os-release'), destination: '/etc/os-release' },
        { source: join(this.#p.dir, 'flatcar'), destination: '/etc/flatcar' },
        { source: bus.dir, destination: DBUS_DIR },
      ],
      env: [
        `UPDATE_AGENT_NODE=${this.nodeName}`,
        `POD_NAMESPACE=${FLUO_AGENT_ACCOUNT.namespace}`,
        `KUBERNETES_SERVICE_HOST=${server.hostname}`,
        `KUBERNETES_SERVICE_PORT=${server.port}`,
        `DBUS_SYSTEM_BUS_ADDRESS=unix:path=${DBUS_DIR}/${bus.socketPath.split('/').at(-1)}`,
      ],
    });
    container.process.stdout?.on('data', (d: Buffer) => this.#write(d.toString()));
    container.process.stderr?.on('data', (d: Buffer) => this.#write(d.toString()));
    const exited = new Promise<string>((resolve) =>
      container.process.once('exit', (code, sig) => resolve(`exited (${code ?? sig})`)),
    );
    this.#current = container;
    const result = await Promise.race([exited, aborted(signal).then(() => undefined)]);
    this.#current = undefined;
    await container.stop();
    return result;
  }

  /** A token of FLUO's agent's ServiceAccount bound to the Node, as the kubelet mints one for a pod. */
  async #mintToken(): Promise<string> {
    const core = this.#p.cluster.kubeconfig.makeApiClient(CoreV1Api);
    const node = await core.readNode({ name: this.nodeName });
    const review = await core.createNamespacedServiceAccountToken({
      ...FLUO_AGENT_ACCOUNT,
      body: {
        spec: {
          audiences: [],
          expirationSeconds: TOKEN_SECONDS,
          boundObjectRef: { apiVersion: 'v1', kind: 'Node', name: this.nodeName, uid: node.metadata?.uid },
        },
      },
    });
    const token = review.status?.token;
    if (!token) throw new Error(`TokenRequest for FLUO's agent on ${this.nodeName} returned no token`);
    return token;
  }

  async #writeHostFiles(token: string): Promise<void> {
    const dir = this.#p.dir;
    const sa = this.serviceAccountDir;
    await mkdir(sa, { recursive: true });
    await mkdir(join(dir, 'flatcar'), { recursive: true });
    await writeFile(join(sa, 'token'), token);
    await writeFile(join(sa, 'ca.crt'), this.#p.cluster.caCert);
    await writeFile(join(sa, 'namespace'), FLUO_AGENT_ACCOUNT.namespace);
    await writeFile(join(dir, 'os-release'), osRelease(this.#os.version));
    await writeFile(join(dir, 'flatcar', 'update.conf'), updateConf(UPDATE_GROUP));
  }

  /** Stops the node's services and bus (its host stopped first, so no container runs). */
  async dispose(): Promise<void> {
    await this.#running;
    await this.logind.stop();
    await this.updateEngine.stop();
    await this.#p.bus.dispose();
  }
}

function aborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}
