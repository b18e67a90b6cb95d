/**
 * Karpenter on the local cluster: its controller with the KWOK cloud provider (tools/karpenter/build.ts
 * builds it, unmodified), its CRDs applied as its chart ships them, running as an admin beside the
 * control plane. It creates a Node for each NodeClaim it launches, annotated `kwok.x-k8s.io/node: fake`,
 * which the harness's KWOK then keeps Ready and whose pods it runs, as it does for the harness's own
 * nodes; deleting a NodeClaim's instance deletes the Node.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { openSync } from 'node:fs';
import { join } from 'node:path';
import { ensureKarpenter } from '../../tools/karpenter/build.ts';
import { pollUntil } from '../util/poll.ts';
import type { LocalCluster } from './cluster/cluster.ts';
import { freePort, get } from './cluster/net.ts';
import { killWithHarness } from './cluster/process.ts';

/** How long Karpenter may take to exit after SIGTERM before it is killed. */
const TERM_GRACE_MS = 10_000;

export class Karpenter {
  readonly #child: ChildProcess;
  readonly #exited: Promise<void>;
  readonly #unregister: () => void;
  /** Its log, beside the control plane's (a failing test prints it). */
  readonly logPath: string;

  private constructor(child: ChildProcess, logPath: string, cluster: LocalCluster) {
    this.#child = child;
    this.logPath = logPath;
    this.#exited = new Promise((resolve) => child.once('exit', () => resolve()));
    this.#unregister = cluster.beforeStop(() => this.stop());
  }

  /**
   * Builds Karpenter if need be, applies its CRDs and starts it (no leader election: it is the only
   * one), resolving once it reports ready.
   */
  static async start(cluster: LocalCluster, log: (line: string) => void = () => {}): Promise<Karpenter> {
    const built = await ensureKarpenter(log);
    const applied = spawnSync(
      cluster.binaries.path.kubectl,
      [
        `--kubeconfig=${cluster.kubeconfigPath}`,
        'apply',
        '--server-side',
        ...built.crds.flatMap((f) => ['-f', f]),
      ],
      { encoding: 'utf8' },
    );
    if (applied.status !== 0) throw new Error(`applying Karpenter's CRDs failed: ${applied.stderr}`);
    const healthPort = await freePort();
    const logPath = join(cluster.dir, 'logs', 'karpenter.log');
    const out = openSync(logPath, 'a');
    const child = spawn(built.binary, [], {
      stdio: ['ignore', out, out],
      env: {
        ...process.env,
        KUBECONFIG: cluster.kubeconfigPath,
        DISABLE_LEADER_ELECTION: 'true',
        METRICS_PORT: String(await freePort()),
        HEALTH_PROBE_PORT: String(healthPort),
        LOG_LEVEL: 'debug',
        // A pod Karpenter places in its own simulation keeps that node from consolidation for twice this
        // (its nomination, 20 s at the default 10 s): a test's rollout churns pods, so it is kept short.
        BATCH_MAX_DURATION: '5s',
      },
    });
    killWithHarness(child);
    const karpenter = new Karpenter(child, logPath, cluster);
    const ready = async () => {
      if (child.exitCode !== null) throw new Error(`Karpenter exited with ${child.exitCode}; see ${logPath}`);
      const { status } = await get(`http://127.0.0.1:${healthPort}/readyz`).catch(() => ({ status: 0 }));
      return status === 200 ? true : undefined;
    };
    await pollUntil('Karpenter to report ready', ready, { timeoutMs: 60_000, intervalMs: 250 });
    return karpenter;
  }

  /** Stops Karpenter (SIGTERM, then SIGKILL after TERM_GRACE_MS); once. */
  async stop(): Promise<void> {
    this.#unregister();
    if (this.#child.exitCode !== null || this.#child.signalCode !== null) return;
    this.#child.kill('SIGTERM');
    const timer = setTimeout(() => this.#child.kill('SIGKILL'), TERM_GRACE_MS);
    await this.#exited;
    clearTimeout(timer);
  }
}
