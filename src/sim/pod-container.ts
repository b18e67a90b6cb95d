/**
 * What a third-party DaemonSet pod needs to run on a simulated node as a runc container (fluo-agent.ts,
 * kured-agent.ts): its ServiceAccount and RBAC as its manifests grant them, a read-only root filesystem
 * holding its binaries, a token bound to the Node where in-cluster configuration reads it, and a
 * container per start, restarted after a backoff when it exits, as the kubelet restarts a pod.
 */
import { execFile } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { copyFile, link, mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { CoreV1Api, RbacAuthorizationV1Api, type V1PolicyRule } from '@kubernetes/client-node';
import type { ContainerOptions, RuntimeSpec } from '../../tools/image/container.ts';
import { Runc, type Unpacked } from '../../tools/image/runc.ts';
import type { LocalCluster } from './cluster/cluster.ts';
import { cleanUpWithHarness } from './cluster/process.ts';

const run = promisify(execFile);

/** Where a pod's service-account files are, the one place client-go's in-cluster configuration reads. */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
/** Longer than any simulated run, so no token needs renewing. */
const TOKEN_SECONDS = 24 * 3600;
/** The kubelet's crash backoff (10 s doubling to 5 min), scaled down for seconds-long tests. */
const RESTART_BACKOFF_MS = 1000;
const MAX_RESTART_BACKOFF_MS = 30_000;

export interface PodAccount {
  namespace: string;
  name: string;
  /** The roles' and bindings' name where the manifests give them their own (default: the account's). */
  roles?: string;
}

const exists = (err: unknown) => {
  if ((err as { code?: number }).code !== 409) throw err;
};

/**
 * The account's namespace and ServiceAccount, a ClusterRole of `rules` bound to it, and a Role of
 * `namespaced.rules` in `namespaced.namespace` when given; each named as the account (or its `roles`),
 * kept if present.
 */
export async function grantRbac(
  cluster: LocalCluster,
  account: PodAccount,
  rules: V1PolicyRule[],
  namespaced?: { namespace: string; rules: V1PolicyRule[] },
): Promise<void> {
  const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
  const rbac = cluster.kubeconfig.makeApiClient(RbacAuthorizationV1Api);
  const { namespace } = account;
  const subjects = [{ kind: 'ServiceAccount', name: account.name, namespace }];
  const name = account.roles ?? account.name;
  const roleRef = (kind: string) => ({ apiGroup: 'rbac.authorization.k8s.io', kind, name });
  await core.createNamespace({ body: { metadata: { name: namespace } } }).catch(exists);
  await core
    .createNamespacedServiceAccount({ namespace, body: { metadata: { name: account.name } } })
    .catch(exists);
  await rbac.createClusterRole({ body: { metadata: { name }, rules } }).catch(exists);
  await rbac
    .createClusterRoleBinding({ body: { metadata: { name }, roleRef: roleRef('ClusterRole'), subjects } })
    .catch(exists);
  if (!namespaced) return;
  const ns = namespaced.namespace;
  await core.createNamespace({ body: { metadata: { name: ns } } }).catch(exists);
  await rbac
    .createNamespacedRole({ namespace: ns, body: { metadata: { name }, rules: namespaced.rules } })
    .catch(exists);
  await rbac
    .createNamespacedRoleBinding({
      namespace: ns,
      body: { metadata: { name }, roleRef: roleRef('Role'), subjects },
    })
    .catch(exists);
}

/**
 * The root filesystem every container of a kind shares, read-only: `dirs` (mount points), `files` by
 * path, `binaries` (path in the root → built file); and runc's default configuration to start from.
 */
export async function prepareRootfs(
  dir: string,
  content: { dirs: string[]; files?: Record<string, string>; binaries: Record<string, string> },
): Promise<Unpacked> {
  const rootfs = join(dir, 'rootfs');
  for (const d of ['proc', 'sys', 'dev', 'tmp', SERVICE_ACCOUNT_DIR, ...content.dirs]) {
    await mkdir(join(rootfs, d), { recursive: true });
  }
  for (const [path, text] of Object.entries(content.files ?? {})) {
    await mkdir(dirname(join(rootfs, path)), { recursive: true });
    await writeFile(join(rootfs, path), text);
  }
  for (const [path, binary] of Object.entries(content.binaries)) {
    await mkdir(dirname(join(rootfs, path)), { recursive: true });
    // A hard link where the cache and the cluster share a file system; else a copy.
    await link(binary, join(rootfs, path)).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'EXDEV') throw err;
      return copyFile(binary, join(rootfs, path));
    });
  }
  await run('runc', ['spec', '--bundle', dir]).catch((err: Error) => {
    throw new Error(`runc spec failed (${err.message}); install Debian's runc (see .ci/run)`);
  });
  const base = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8')) as RuntimeSpec;
  return { rootfs, base };
}

/**
 * Writes the files a pod of `account` on `nodeName` finds at SERVICE_ACCOUNT_DIR into `saDir`: a token of
 * the account bound to the Node, as the kubelet mints one for a pod (so it carries the node's name), the
 * cluster's CA and the namespace.
 */
export async function writeServiceAccount(
  cluster: LocalCluster,
  account: PodAccount,
  nodeName: string,
  saDir: string,
): Promise<void> {
  const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
  const node = await core.readNode({ name: nodeName });
  const review = await core.createNamespacedServiceAccountToken({
    ...account,
    body: {
      spec: {
        audiences: [],
        expirationSeconds: TOKEN_SECONDS,
        boundObjectRef: { apiVersion: 'v1', kind: 'Node', name: nodeName, uid: node.metadata?.uid },
      },
    },
  });
  const token = review.status?.token;
  if (!token) throw new Error(`TokenRequest for ${account.name} on ${nodeName} returned no token`);
  await mkdir(saDir, { recursive: true });
  await writeFile(join(saDir, 'token'), token);
  await writeFile(join(saDir, 'ca.crt'), cluster.caCert);
  await writeFile(join(saDir, 'namespace'), account.namespace);
}

/** How a container ended: its exit status or signal; undefined when it was stopped (the signal aborted). */
export type Exit = { code: number | null; signal: NodeJS.Signals | null } | undefined;

/**
 * One kind of third-party pod on a cluster's simulated nodes: its shared root filesystem and runc, whose
 * containers are deleted if the test process dies.
 */
export class PodKind {
  readonly cluster: LocalCluster;
  /** A directory of its own: a cluster outlives its fleets, and each fleet starts its pods afresh. */
  readonly dir: string;
  readonly #unpacked: Unpacked;
  readonly #runc = new Runc();
  readonly #forget: () => void;
  /** How each node's log file is named in the cluster's log directory: `<logPrefix><node>.log`. */
  readonly #logPrefix: string;

  constructor(cluster: LocalCluster, dir: string, unpacked: Unpacked, logPrefix: string) {
    this.cluster = cluster;
    this.dir = dir;
    this.#unpacked = unpacked;
    this.#logPrefix = logPrefix;
    this.#forget = cleanUpWithHarness(() => this.#runc.deleteAll());
  }

  /** The containers of one node. */
  containers(nodeName: string): NodeContainers {
    return new NodeContainers({
      runc: this.#runc,
      unpacked: this.#unpacked,
      logFile: join(this.cluster.dir, 'logs', `${this.#logPrefix}${nodeName}.log`),
      title: nodeName,
    });
  }

  /** Removes any container left (stop the hosts first). */
  close(): void {
    this.#runc.deleteAll();
    this.#runc.close();
    this.#forget();
  }
}

/** One node's containers of a kind: their output in one log, the one running now. */
export class NodeContainers {
  /** Containers started so far. */
  starts = 0;
  #output = '';
  #current: ReturnType<Runc['start']> | undefined;
  #serving: Promise<void> = Promise.resolve();
  readonly #runc: Runc;
  readonly #unpacked: Unpacked;
  readonly #logFile: string;
  readonly #title: string;

  constructor(o: { runc: Runc; unpacked: Unpacked; logFile: string; title: string }) {
    this.#runc = o.runc;
    this.#unpacked = o.unpacked;
    this.#logFile = o.logFile;
    this.#title = o.title;
  }

  /** Everything the containers wrote, each start headed by a line. */
  output(): string {
    return this.#output;
  }

  /** The running container's first process as this machine sees it; undefined while none runs. */
  pid(): number | undefined {
    try {
      return this.#current?.pid();
    } catch {
      return undefined;
    }
  }

  #write(text: string): void {
    this.#output += text;
    appendFileSync(this.#logFile, text);
  }

  /**
   * Runs the node's pod while the host is up (until `signal` aborts): once the previous run has ended (one
   * container per node at a time), `setup` (which returns its undoing), then `start` as the kubelet runs
   * a container (restarting).
   */
  async serve(
    signal: AbortSignal,
    o: {
      setup: () => Promise<() => void>;
      start: () => Promise<Exit>;
      onRestart: (how: string, ms: number) => void;
    },
  ): Promise<void> {
    const previous = this.#serving;
    let finished = () => {};
    this.#serving = new Promise((resolve) => {
      finished = resolve;
    });
    try {
      await previous;
      if (signal.aborted) return;
      const undo = await o.setup();
      try {
        await restarting(o.start, signal, o.onRestart);
      } finally {
        undo();
      }
    } finally {
      finished();
    }
  }

  /** Settles once the node's pod has ended (its host stopped). */
  stopped(): Promise<void> {
    return this.#serving;
  }

  /** One container until it exits (how, returned) or the signal aborts (undefined: it is stopped). */
  async run(options: Omit<ContainerOptions, 'rootfs'>, signal: AbortSignal): Promise<Exit> {
    if (signal.aborted) return undefined;
    this.starts++;
    this.#write(`=== ${new Date().toISOString()} container ${this.starts} for ${this.#title}\n`);
    const container = this.#runc.start(this.#unpacked, options);
    container.process.stdout?.on('data', (d: Buffer) => this.#write(d.toString()));
    container.process.stderr?.on('data', (d: Buffer) => this.#write(d.toString()));
    const exited = new Promise<Exit>((resolve) =>
      container.process.once('exit', (code, sig) => resolve({ code, signal: sig })),
    );
    this.#current = container;
    const result = await Promise.race([exited, aborted(signal).then(() => undefined)]);
    this.#current = undefined;
    await container.stop();
    return result;
  }
}

/**
 * Runs `start` until the signal aborts, as the kubelet runs a pod's container: one that ends on its own
 * (`start` returns how; a start that throws counts too) is started again after a doubling backoff.
 */
async function restarting(
  start: () => Promise<Exit>,
  signal: AbortSignal,
  onRestart: (how: string, backoffMs: number) => void,
): Promise<void> {
  for (let backoffMs = RESTART_BACKOFF_MS; !signal.aborted; ) {
    const exit = await start().catch((err: Error) => `not started: ${err.message}` as const);
    if (signal.aborted || exit === undefined) return;
    onRestart(typeof exit === 'string' ? exit : `exited (${exit.code ?? exit.signal})`, backoffMs);
    await sleep(backoffMs, signal);
    backoffMs = Math.min(backoffMs * 2, MAX_RESTART_BACKOFF_MS);
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
