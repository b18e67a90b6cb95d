/**
 * kured 1.23.0 (built unmodified by tools/kured/build.ts) as a simulated node's reboot daemon, in place
 * of nuo's agent: one runc container per node, as its DaemonSet pod, on the host network, with kured's own
 * ServiceAccount token (its manifests' RBAC) where in-cluster configuration reads it and KURED_NODE_ID
 * naming the node. Its reboot sentinel is a file in a host directory bound at /sentinel (kured's manifest
 * mounts it there): present while the host needs a reboot. Its reboot is `--reboot-method=signal`,
 * SIGRTMIN+5 to PID 1, which is sim-init standing for the host's systemd: it exits with REBOOT_EXIT and
 * the host reboots (host.ts), the container dying with it; the boot starts a new one.
 *
 * kured's lock is an annotation on its DaemonSet, so the DaemonSet exists (kube-system/kured, as kured's
 * flags default to); kured reads nothing else of it, and its pods are these containers, so its selector
 * places its pods on no node.
 */
import { mkdir, mkdtemp, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AppsV1Api } from '@kubernetes/client-node';
import { ensureKured } from '../../tools/kured/build.ts';
import type { LocalCluster } from './cluster/cluster.ts';
import type { HostAgent, SimHost } from './host.ts';
import {
  type Exit,
  grantRbac,
  type NodeContainers,
  PodKind,
  prepareRootfs,
  SERVICE_ACCOUNT_DIR,
  writeServiceAccount,
} from './pod-container.ts';

/** kured's ServiceAccount and DaemonSet, named as its manifests and its flags' defaults name them. */
export const KURED_ACCOUNT = { namespace: 'kube-system', name: 'kured' } as const;

/** sim-init's exit status for "the host was asked to reboot" (tools/kured/sim-init/main.go). */
export const REBOOT_EXIT = 100;

/** Where kured's manifest mounts the host's sentinel directory, and the file it looks for there. */
const SENTINEL_DIR = '/sentinel';
const SENTINEL_FILE = 'reboot-required';

type Log = (level: 'info' | 'warn' | 'error', message: string) => void;

export interface KuredAgentsOptions {
  /** kured's --period: how often it checks the sentinel (its default, 1h, is far beyond any test). */
  periodSeconds?: number;
  /** Further flags for every kured (e.g. --concurrency=2, --lock-ttl=5m). */
  args?: string[];
  /** Called as a kured's reboot begins, before its host goes down. */
  onReboot?: (node: string) => void;
  log?: Log;
}

/** kured's RBAC, as kured-rbac.yaml grants it: nodes, pods, evictions, DaemonSets; its own to update. */
const CLUSTER_RULES = [
  { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'patch'] },
  { apiGroups: [''], resources: ['pods'], verbs: ['list', 'delete', 'get'] },
  { apiGroups: ['apps'], resources: ['daemonsets'], verbs: ['get'] },
  { apiGroups: [''], resources: ['pods/eviction'], verbs: ['create'] },
];
const LOCK_RULES = [
  { apiGroups: ['apps'], resources: ['daemonsets'], resourceNames: [KURED_ACCOUNT.name], verbs: ['update'] },
];

/** kured's DaemonSet, carrying its lock; no node matches its pods' selector (the containers are its pods). */
async function createDaemonSet(cluster: LocalCluster): Promise<void> {
  const apps = cluster.kubeconfig.makeApiClient(AppsV1Api);
  const labels = { name: 'kured' };
  await apps
    .createNamespacedDaemonSet({
      namespace: KURED_ACCOUNT.namespace,
      body: {
        metadata: { name: KURED_ACCOUNT.name },
        spec: {
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: {
              serviceAccountName: KURED_ACCOUNT.name,
              nodeSelector: { 'sim.nuo.dev/kured-pods': 'runc' },
              containers: [{ name: 'kured', image: `ghcr.io/kubereboot/kured:1.23.0` }],
            },
          },
        },
      },
    })
    .catch((err: { code?: number }) => {
      if (err.code !== 409) throw err;
    });
}

/** The kured daemons of one cluster: the binaries, their root filesystem, runc, RBAC, the DaemonSet. */
export class KuredAgents {
  readonly nodes = new Map<string, KuredNodeAgent>();
  readonly #kind: PodKind;
  readonly #options: KuredAgentsOptions;

  private constructor(kind: PodKind, options: KuredAgentsOptions) {
    this.#kind = kind;
    this.#options = options;
  }

  /** Builds kured if need be, prepares its root filesystem, grants its RBAC and creates its DaemonSet. */
  static async start(cluster: LocalCluster, options: KuredAgentsOptions = {}): Promise<KuredAgents> {
    const built = await ensureKured((line) => options.log?.('info', `kured build: ${line}`));
    const dir = await mkdtemp(join(cluster.dir, 'kured-'));
    const unpacked = await prepareRootfs(dir, {
      dirs: [SENTINEL_DIR],
      binaries: { 'usr/bin/kured': built.kured, 'sbin/init': built.simInit },
    });
    await grantRbac(cluster, KURED_ACCOUNT, CLUSTER_RULES, {
      namespace: KURED_ACCOUNT.namespace,
      rules: LOCK_RULES,
    });
    await createDaemonSet(cluster);
    return new KuredAgents(new PodKind(cluster, dir, unpacked, 'kured-'), options);
  }

  /** The kured of one node: a SimHost's `agent`. */
  agentFor(nodeName: string): KuredNodeAgent {
    if (this.nodes.has(nodeName)) throw new Error(`node ${nodeName} already runs kured`);
    const agent = new KuredNodeAgent({
      nodeName,
      cluster: this.#kind.cluster,
      dir: join(this.#kind.dir, nodeName),
      containers: this.#kind.containers(nodeName),
      args: [`--period=${this.#options.periodSeconds ?? 5}s`, ...(this.#options.args ?? [])],
      onReboot: this.#options.onReboot,
      log: this.#options.log,
    });
    this.nodes.set(nodeName, agent);
    return agent;
  }

  /** Waits for every node's kured to end (stop the hosts first) and removes any container left. */
  async stop(): Promise<void> {
    await Promise.all([...this.nodes.values()].map((n) => n.stopped()));
    this.#kind.close();
  }
}

interface NodeParts {
  nodeName: string;
  cluster: LocalCluster;
  dir: string;
  containers: NodeContainers;
  args: string[];
  onReboot: ((node: string) => void) | undefined;
  log: Log | undefined;
}

/** One node's kured. */
export class KuredNodeAgent implements HostAgent {
  readonly nodeName: string;
  /** Reboots kured asked for (SIGRTMIN+5 to PID 1). */
  reboots = 0;
  readonly #p: NodeParts;

  constructor(parts: NodeParts) {
    this.#p = parts;
    this.nodeName = parts.nodeName;
  }

  /** Everything the node's kured containers wrote, each start headed by a line. */
  output(): string {
    return this.#p.containers.output();
  }

  get #sentinelDir(): string {
    return join(this.#p.dir, 'sentinel');
  }

  get #serviceAccountDir(): string {
    return join(this.#p.dir, 'serviceaccount');
  }

  /** Runs kured while the host is up: a container, restarted after a backoff if it exits. */
  run(host: SimHost, signal: AbortSignal): Promise<void> {
    return this.#p.containers.serve(signal, {
      setup: async () => {
        await mkdir(this.#sentinelDir, { recursive: true });
        await this.#sentinel(host);
        return host.watch(() => {
          this.#sentinel(host).catch((err) =>
            this.#p.log?.('error', `kured on ${this.nodeName}: sentinel: ${err}`),
          );
        });
      },
      start: () => this.#container(host, signal),
      onRestart: (how, backoffMs) =>
        this.#p.log?.('warn', `kured on ${this.nodeName} ${how}; restarting it in ${backoffMs} ms`),
    });
  }

  /** The sentinel file is there while the host needs a reboot, as an OS that staged an update writes it. */
  async #sentinel(host: SimHost): Promise<void> {
    const file = join(this.#sentinelDir, SENTINEL_FILE);
    if (host.needsReboot) await writeFile(file, '');
    else
      await unlink(file).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw err;
      });
  }

  /** One container until it exits, the host reboots because kured asked, or the signal aborts. */
  async #container(host: SimHost, signal: AbortSignal): Promise<Exit> {
    const { cluster } = this.#p;
    await writeServiceAccount(cluster, KURED_ACCOUNT, this.nodeName, this.#serviceAccountDir);
    const server = new URL(cluster.server);
    const exit = await this.#p.containers.run(
      {
        args: [
          '/sbin/init',
          '/usr/bin/kured',
          `--reboot-sentinel=${SENTINEL_DIR}/${SENTINEL_FILE}`,
          '--reboot-method=signal',
          // Host network: each kured's metrics on a port of its own choosing, on loopback only.
          '--metrics-host=127.0.0.1',
          '--metrics-port=0',
          ...this.#p.args,
        ],
        hostNetwork: true,
        binds: [
          { source: this.#serviceAccountDir, destination: SERVICE_ACCOUNT_DIR },
          { source: this.#sentinelDir, destination: SENTINEL_DIR },
        ],
        env: [
          `KURED_NODE_ID=${this.nodeName}`,
          `KUBERNETES_SERVICE_HOST=${server.hostname}`,
          `KUBERNETES_SERVICE_PORT=${server.port}`,
        ],
      },
      signal,
    );
    if (exit?.code !== REBOOT_EXIT) return exit;
    this.reboots++;
    this.#p.onReboot?.(this.nodeName);
    // The host goes down: its reboot aborts `signal`, so no new container starts until the boot.
    await host.reboot();
    return undefined;
  }

  /** Settles once the node's kured has ended (its host stopped). */
  stopped(): Promise<void> {
    return this.#p.containers.stopped();
  }
}
