/**
 * FLUO's real update-agent (the Flatcar Linux update operator's, built unmodified by tools/fluo/build.ts)
 * as a simulated node's agent, in place of nuo's: one runc container per node, as its DaemonSet pod, on the
 * host network, running as root with FLUO's own ServiceAccount token (bound to the Node, so it carries the
 * node's name) where in-cluster configuration reads it, the host's /etc/os-release and /etc/flatcar bound
 * in, and the node's own system bus: a private dbus-daemon with update_engine and logind on it. logind's
 * Reboot is the simulated host's reboot (host.ts): the container dies with the host, and the boot starts a
 * new one. A container that exits on its own is restarted after a backoff, as the kubelet restarts a pod.
 */
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ensureFluoAgent, type FluoPrefix } from '../../tools/fluo/build.ts';
import type { Unpacked } from '../../tools/image/runc.ts';
import type { LocalCluster } from './cluster/cluster.ts';
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
import * as pod from './pod-container.ts';

/** FLUO's agent's namespace, ServiceAccount and ClusterRole, named as its deploy manifests name them. */
export const FLUO_AGENT_ACCOUNT = {
  namespace: 'reboot-coordinator',
  name: 'flatcar-linux-update-agent',
} as const;

/**
 * The account of each variant: CLUO's manifests run theirs as the namespace's default ServiceAccount,
 * bound to a ClusterRole named reboot-coordinator.
 */
const AGENT_ACCOUNTS: Record<FluoPrefix, pod.PodAccount> = {
  flatcar: FLUO_AGENT_ACCOUNT,
  coreos: { namespace: 'reboot-coordinator', name: 'default', roles: 'reboot-coordinator' },
};

/** Where the node's system bus is bound; DBUS_SYSTEM_BUS_ADDRESS names its socket there. */
const DBUS_DIR = '/var/run/dbus';

type Log = (level: 'info' | 'warn' | 'error', message: string) => void;

export interface FluoAgentsOptions {
  log?: Log;
  /** The keys the agent speaks: FLUO's own, or CLUO's (FLUO's agent built with CLUO's prefix). */
  prefix?: FluoPrefix;
}

/** The update group the hosts' /etc/flatcar/update.conf names, as Flatcar's default one does. */
const UPDATE_GROUP = 'stable';

/** FLUO's RBAC for its agent, as its deploy manifests grant it: nodes, pods, evictions, DaemonSets. */
const AGENT_RULES = [
  { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch', 'update'] },
  { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'delete'] },
  { apiGroups: [''], resources: ['pods/eviction'], verbs: ['create'] },
  { apiGroups: ['apps'], resources: ['daemonsets'], verbs: ['get'] },
];

/**
 * The root filesystem every agent's container shares, read-only: the binary, Flatcar's default
 * update.conf and the mount points.
 */
function agentRootfs(dir: string, binary: string): Promise<Unpacked> {
  return pod.prepareRootfs(dir, {
    dirs: ['etc/flatcar', DBUS_DIR],
    files: { 'etc/os-release': '', 'usr/share/flatcar/update.conf': updateConf(UPDATE_GROUP) },
    binaries: { 'bin/update-agent': binary },
  });
}

/** FLUO's agents of one cluster: the built binary, its root filesystem, runc, the RBAC; one per node. */
export class FluoAgents {
  readonly nodes = new Map<string, FluoNodeAgent>();
  readonly #kind: pod.PodKind;
  readonly #options: FluoAgentsOptions;

  private constructor(kind: pod.PodKind, options: FluoAgentsOptions) {
    this.#kind = kind;
    this.#options = options;
  }

  /** Builds the agent if need be (tools/fluo/build.ts), prepares its root filesystem and grants its RBAC. */
  static async start(cluster: LocalCluster, options: FluoAgentsOptions = {}): Promise<FluoAgents> {
    const prefix = options.prefix ?? 'flatcar';
    const binary = await ensureFluoAgent((line) => options.log?.('info', `fluo build: ${line}`), prefix);
    const dir = await mkdtemp(join(cluster.dir, 'fluo-'));
    const unpacked = await agentRootfs(dir, binary.path);
    await pod.grantRbac(cluster, AGENT_ACCOUNTS[prefix], AGENT_RULES);
    return new FluoAgents(new pod.PodKind(cluster, dir, unpacked, 'fluo-agent-'), options);
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
      cluster: this.#kind.cluster,
      dir: join(this.#kind.dir, nodeName),
      containers: this.#kind.containers(nodeName),
      bus,
      updateEngine,
      logind,
      os: { version: FIRST_FLATCAR_VERSION },
      account: AGENT_ACCOUNTS[this.#options.prefix ?? 'flatcar'],
      log: this.#options.log,
    });
    this.nodes.set(nodeName, agent);
    return agent;
  }

  /** Stops every node's services and bus and removes any container left (stop the hosts first). */
  async stop(): Promise<void> {
    await Promise.all([...this.nodes.values()].map((n) => n.dispose()));
    this.#kind.close();
  }
}

interface NodeParts {
  nodeName: string;
  cluster: LocalCluster;
  dir: string;
  containers: pod.NodeContainers;
  bus: PrivateBus;
  updateEngine: FakeUpdateEngine;
  logind: FakeLogind;
  os: FlatcarOs;
  /** The ServiceAccount whose node-bound token the agent runs with. */
  account: pod.PodAccount;
  log: Log | undefined;
}

/** One node's FLUO agent and the OS it talks to. */
export class FluoNodeAgent implements HostAgent {
  readonly nodeName: string;
  /** com.coreos.update1 on the node's bus: reports what the host's state says (fluo-os.ts). */
  readonly updateEngine: FakeUpdateEngine;
  /** org.freedesktop.login1 on the node's bus: its `calls` are the agent's Reboot calls. */
  readonly logind: FakeLogind;
  readonly #p: NodeParts;
  readonly #containers: pod.NodeContainers;
  #os: FlatcarOs;
  #bootId: string | undefined;

  constructor(parts: NodeParts) {
    this.#p = parts;
    this.nodeName = parts.nodeName;
    this.updateEngine = parts.updateEngine;
    this.logind = parts.logind;
    this.#os = parts.os;
    this.#containers = parts.containers;
  }

  /** The version running now and the one staged for the next boot. */
  get os(): FlatcarOs {
    return this.#os;
  }

  /** Containers started so far: one per boot, and one per restart after the agent exited. */
  get starts(): number {
    return this.#containers.starts;
  }

  /** The host directory bound at the container's service-account path: token, ca.crt, namespace. */
  get serviceAccountDir(): string {
    return join(this.#p.dir, 'serviceaccount');
  }

  /** The running agent's process id as this machine sees it; undefined while no container runs. */
  pid(): number | undefined {
    return this.#containers.pid();
  }

  /** Everything the node's containers wrote, each start headed by a line. */
  output(): string {
    return this.#containers.output();
  }

  /** Runs the agent while the host is up: a container, restarted after a backoff if it exits. */
  run(host: SimHost, signal: AbortSignal): Promise<void> {
    return this.#containers.serve(signal, {
      setup: async () => {
        if (host.bootIdValue !== this.#bootId) {
          this.#bootId = host.bootIdValue;
          this.#os = booted(this.#os, host.needsReboot);
        }
        this.#sync(host, false);
        this.logind.onReboot = () => {
          host
            .reboot()
            .catch((err) => this.#p.log?.('error', `host ${this.nodeName}: logind reboot: ${err}`));
        };
        return host.watch(() => this.#sync(host, true));
      },
      start: () => this.#container(signal),
      onRestart: (how, backoffMs) =>
        this.#p.log?.('warn', `FLUO agent on ${this.nodeName} ${how}; restarting it in ${backoffMs} ms`),
    });
  }

  /** update_engine follows the host: an update staged while it needs a reboot, idle after the reboot. */
  #sync(host: SimHost, emit: boolean): void {
    this.#os = staged(this.#os, host.needsReboot);
    this.updateEngine.set(updateEngineStatus(this.#os, host.needsReboot, new Date()), { emit });
  }

  /** One container until it exits or the signal aborts. */
  async #container(signal: AbortSignal): Promise<pod.Exit> {
    const { cluster, bus } = this.#p;
    await pod.writeServiceAccount(cluster, this.#p.account, this.nodeName, this.serviceAccountDir);
    await this.#writeHostFiles();
    const server = new URL(cluster.server);
    return this.#containers.run(
      {
        // As FLUO's DaemonSet runs it: no flags.
        args: ['/bin/update-agent'],
        hostNetwork: true,
        binds: [
          { source: this.serviceAccountDir, destination: pod.SERVICE_ACCOUNT_DIR },
          { source: join(this.#p.dir, 'os-release'), destination: '/etc/os-release' },
          { source: join(this.#p.dir, 'flatcar'), destination: '/etc/flatcar' },
          { source: bus.dir, destination: DBUS_DIR },
        ],
        env: [
          `UPDATE_AGENT_NODE=${this.nodeName}`,
          `POD_NAMESPACE=${this.#p.account.namespace}`,
          `KUBERNETES_SERVICE_HOST=${server.hostname}`,
          `KUBERNETES_SERVICE_PORT=${server.port}`,
          `DBUS_SYSTEM_BUS_ADDRESS=unix:path=${DBUS_DIR}/${bus.socketPath.split('/').at(-1)}`,
        ],
      },
      signal,
    );
  }

  async #writeHostFiles(): Promise<void> {
    const dir = this.#p.dir;
    await mkdir(join(dir, 'flatcar'), { recursive: true });
    await writeFile(join(dir, 'os-release'), osRelease(this.#os.version));
    await writeFile(join(dir, 'flatcar', 'update.conf'), updateConf(UPDATE_GROUP));
  }

  /** Stops the node's services and bus (its host stopped first, so no container runs). */
  async dispose(): Promise<void> {
    await this.#containers.stopped();
    await this.logind.stop();
    await this.updateEngine.stop();
    await this.#p.bus.dispose();
  }
}
