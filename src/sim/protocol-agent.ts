/**
 * CLUO's and FLUO's update-agent, played on a simulated host: the same writes on its Node, in the same
 * order and with the same waits, as their agent's source makes them, so a test can run nuo's operator
 * against that protocol before the real agent binary runs per node.
 * - At its start: labels id, group and version; then reboot-in-progress and reboot-needed (annotation
 *   and label) "false" in one write; waits until reboot-ok is not "true"; uncordons only a cordon it
 *   recorded in agent-made-unschedulable.
 * - From then on it mirrors the update engine: status, last-checked-time and new-version at each change
 *   of status, and reboot-needed "true" (annotation and label) once an update is staged.
 * - It waits for reboot-ok and reboot-needed both "true" (on the watch's events after it read its Node),
 *   marks reboot-in-progress (and agent-made-unschedulable when it cordons the node itself, only if the
 *   node is still schedulable), drains (kubectl's drain: DaemonSets and kube-system left, a pod no
 *   controller manages stops it), and reboots.
 * - Any error ends the process, which restarts, as its DaemonSet pod would.
 */
import type { CoreV1Api, V1Pod } from '@kubernetes/client-node';
import { type CoreosProtocol, Kubernetes, protocolKeys } from '../api/keys.ts';
import { sleep } from '../kube/backoff.ts';
import type { LeanClient, LeanNode } from '../kube/lean-client.ts';

/** The update engine's statuses the agent mirrors (update_engine's D-Bus names). */
export const UpdateStatus = {
  idle: 'UPDATE_STATUS_IDLE',
  needReboot: 'UPDATE_STATUS_UPDATED_NEED_REBOOT',
} as const;

/** What the agent needs of its host: the update engine, the reboot, and the files it labels from. */
export interface ProtocolHost {
  /** An update is staged: the update engine reports UPDATED_NEED_REBOOT. */
  readonly needsReboot: boolean;
  /** Tells `onChange` when the update engine's status may have changed. */
  watch(onChange: () => void): () => void;
  reboot(): Promise<void>;
}

export interface ProtocolAgentOptions {
  protocol: CoreosProtocol;
  nodeName: string;
  /** The agent's client, with its ServiceAccount's token (bound to its pod: its node). */
  client: LeanClient;
  /** The same identity's API for its drain (pods listed and evicted). */
  core: CoreV1Api;
  host: ProtocolHost;
  /** os-release's ID and VERSION, update.conf's GROUP, as the host has them at this start. */
  os: () => { id: string; version: string; group: string };
  /** The version a staged update brings (the update engine's NEW_VERSION). */
  newVersion: string;
  log: (level: 'info' | 'warn' | 'error', message: string) => void;
}

/** How long a crashed agent waits before its next start (a DaemonSet pod's first restart backoff). */
const RESTART_MS = 1000;
/** How often a status write the API server refused is sent again (their agent polls every 10 s). */
const STATUS_RETRY_MS = 1000;

export class ProtocolAgent {
  readonly #o: ProtocolAgentOptions;
  readonly #k: ReturnType<typeof protocolKeys>;

  constructor(options: ProtocolAgentOptions) {
    this.#o = options;
    this.#k = protocolKeys(options.protocol);
  }

  /** Runs until `signal` aborts (the host reboots or stops), restarting after any error. */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      // One process's life: what it started (its mirror of the update engine) ends with it.
      const life = new AbortController();
      const end = () => life.abort();
      signal.addEventListener('abort', end, { once: true });
      try {
        await this.#process(life.signal);
        return;
      } catch (err) {
        if (signal.aborted) return;
        this.#o.log(
          'warn',
          `${this.#o.nodeName}: update-agent exited (${(err as Error).message}); restarting`,
        );
        await sleep(RESTART_MS, signal);
      } finally {
        life.abort();
        signal.removeEventListener('abort', end);
      }
    }
  }

  async #process(signal: AbortSignal): Promise<void> {
    const { client, nodeName: name } = this.#o;
    const os = this.#o.os();
    const k = this.#k;
    await this.#patch({
      metadata: { labels: { [k.id]: os.id, [k.group]: os.group, [k.version]: os.version } },
    });
    const started = await client.getNode(name);
    const made = started.metadata.annotations?.[k.agentMadeUnschedulable];
    await this.#patch({
      metadata: {
        annotations: { [k.rebootInProgress]: 'false', [k.rebootNeeded]: 'false' },
        labels: { [k.rebootNeeded]: 'false' },
      },
    });
    // Their reboot-needed "false" makes the operator take its grant back; rebooting on it would loop.
    await this.#waitFor((n) => n.metadata.annotations?.[k.rebootOk] !== 'true', signal, {
      checkRead: true,
      rewatch: false,
    });
    if (made === 'true') {
      await this.#patch({ spec: { unschedulable: false } });
      await this.#patch({ metadata: { annotations: { [k.agentMadeUnschedulable]: 'false' } } });
    }
    this.#mirrorStatus(signal);
    await this.#waitFor(
      (n) =>
        n.metadata.annotations?.[k.rebootOk] === 'true' &&
        n.metadata.annotations?.[k.rebootNeeded] === 'true',
      signal,
      { checkRead: false, rewatch: true },
    );
    if (signal.aborted) return;
    const node = await client.getNode(name);
    const already = node.spec?.unschedulable === true;
    await this.#patch({
      metadata: {
        annotations: {
          [k.rebootInProgress]: 'true',
          ...(already ? {} : { [k.agentMadeUnschedulable]: 'true' }),
        },
      },
    });
    if (!already) await this.#patch({ spec: { unschedulable: true } });
    await this.#drain();
    this.#o.log('info', `${name}: update-agent drained its node, rebooting`);
    await this.#o.host.reboot();
  }

  #patch(patch: object): Promise<LeanNode> {
    return this.#o.client.patchNode(this.#o.nodeName, patch);
  }

  /**
   * Waits for `cond` on the Node: read it (and take that reading too when `checkRead`), then watch from
   * its version. A watch the server closes is watched again (`rewatch`) or ends the process.
   */
  async #waitFor(
    cond: (n: LeanNode) => boolean,
    signal: AbortSignal,
    { checkRead, rewatch }: { checkRead: boolean; rewatch: boolean },
  ): Promise<void> {
    for (;;) {
      const read = await this.#o.client.getNode(this.#o.nodeName);
      if (checkRead && cond(read)) return;
      const watch = new AbortController();
      const stop = () => watch.abort();
      signal.addEventListener('abort', stop, { once: true });
      let met = false;
      try {
        await this.#o.client.watchNode(
          this.#o.nodeName,
          read.metadata.resourceVersion,
          (type, n) => {
            if ((type === 'ADDED' || type === 'MODIFIED') && cond(n)) {
              met = true;
              watch.abort();
            }
          },
          watch.signal,
        );
      } finally {
        signal.removeEventListener('abort', stop);
      }
      if (met || signal.aborted) return;
      if (!rewatch) throw new Error('the watch of its node closed');
    }
  }

  /** Mirrors the update engine on the Node at each change of its status, until `signal` aborts. */
  #mirrorStatus(signal: AbortSignal): void {
    const k = this.#k;
    let last = '';
    let writing = Promise.resolve();
    const report = () => {
      const status = this.#o.host.needsReboot ? UpdateStatus.needReboot : UpdateStatus.idle;
      if (status === last) return;
      last = status;
      const needed = status === UpdateStatus.needReboot;
      const patch = {
        metadata: {
          annotations: {
            [k.status]: status,
            [k.lastCheckedTime]: String(Math.floor(Date.now() / 1000)),
            [k.newVersion]: needed ? this.#o.newVersion : '0.0.0',
            ...(needed ? { [k.rebootNeeded]: 'true' } : {}),
          },
          ...(needed ? { labels: { [k.rebootNeeded]: 'true' } } : {}),
        },
      };
      writing = writing.then(async () => {
        while (!signal.aborted) {
          try {
            await this.#patch(patch);
            return;
          } catch (err) {
            this.#o.log('warn', `${this.#o.nodeName}: status not written (${(err as Error).message})`);
            await sleep(STATUS_RETRY_MS, signal);
          }
        }
      });
    };
    const unwatch = this.#o.host.watch(report);
    signal.addEventListener('abort', unwatch, { once: true });
    report();
  }

  /**
   * kubectl's drain as their agent configures it: DaemonSet pods, mirror pods and kube-system left, the
   * rest evicted; a pod no controller manages stops the agent before its reboot, and a refused eviction
   * is logged and the reboot goes on.
   */
  async #drain(): Promise<void> {
    const { core, nodeName } = this.#o;
    const pods = (await core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${nodeName}` })).items;
    const evict = pods.filter(
      (p) =>
        p.metadata?.namespace !== 'kube-system' &&
        !p.metadata?.annotations?.[Kubernetes.mirrorPod] &&
        !p.metadata?.ownerReferences?.some((o) => o.controller && o.kind === 'DaemonSet') &&
        !p.metadata?.deletionTimestamp,
    );
    const unmanaged = evict.filter((p: V1Pod) => !p.metadata?.ownerReferences?.some((o) => o.controller));
    if (unmanaged.length > 0)
      throw new Error(
        `cannot delete pods not managed by a controller: ${unmanaged.map((p) => p.metadata?.name).join(', ')}`,
      );
    for (const p of evict) {
      const name = p.metadata?.name ?? '';
      const namespace = p.metadata?.namespace ?? '';
      await core
        .createNamespacedPodEviction({ name, namespace, body: { metadata: { name, namespace } } })
        .catch((err: Error) =>
          this.#o.log(
            'warn',
            `${nodeName}: eviction of ${namespace}/${name} refused (${err.message}); rebooting anyway`,
          ),
        );
    }
  }
}
