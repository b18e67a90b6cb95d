/**
 * Simulated node hosts: the OS side of the agent on the local cluster. A host has a boot ID and a
 * "reboot needed" flag; its reboot stops the node's agent (as a real reboot kills the DaemonSet pod),
 * makes the Node NotReady, and after `rebootMs` brings it back Ready with a new boot ID and a fresh agent.
 * Many hosts live in one process, so hundreds of nodes fit on one machine.
 */
import { randomUUID } from 'node:crypto';
import type { CoreV1Api } from '@kubernetes/client-node';
import { NodeAgent } from '../agent/agent.ts';
import { OperatorGrants } from '../agent/grant-key.ts';
import {
  type BootId,
  type BootTime,
  type Detection,
  type Detector,
  Need,
  type Rebooter,
} from '../agent/os.ts';
import { DEFAULT_NAMESPACE } from '../api/keys.ts';
import type { LeanClient } from '../kube/lean-client.ts';
import { mergePatch, strategicMergePatch } from '../kube/patch.ts';
import { KWOK_CUSTOM_STATUS } from './cluster/cluster.ts';

export const RebootBehaviour = {
  /** NotReady, new boot ID, Ready again after rebootMs. */
  normal: 'normal',
  /** Goes down and never comes back. */
  neverReturns: 'never-returns',
  /** Accepts the reboot request and does nothing (a broken reboot). */
  ignored: 'ignored',
  /** Reboots normally, but the update does not take: the need for a reboot is still there after it. */
  needSurvives: 'need-survives',
} as const;
export type RebootBehaviour = (typeof RebootBehaviour)[keyof typeof RebootBehaviour];

/**
 * What runs on a host while it is up, as its DaemonSet pod would: nuo's agent unless the host is given
 * another (fluo-agent.ts runs FLUO's). run() settles once `signal` aborts: the host went down, or the agent
 * was killed or replaced.
 */
export interface HostAgent {
  run(host: SimHost, signal: AbortSignal): Promise<void>;
}

export interface SimHostOptions {
  nodeName: string;
  /** Admin API access for what a kubelet would write (node status). */
  core: CoreV1Api;
  /** The agent's lean client. */
  client: LeanClient;
  rebootMs: number;
  behaviour?: RebootBehaviour;
  /** When the host's first boot began (default: now); each reboot's begins when it comes back. */
  bootedAt?: Date | undefined;
  agentCheckIntervalMs?: number;
  agentReportSpreadMs?: number;
  log?: (level: 'info' | 'warn' | 'error', message: string) => void;
  /** Called for every reboot that really happens (for the independent checker). */
  onReboot?: (node: string, bootIdBefore: string) => void;
  /** The agent the host runs instead of nuo's (whose settings above it then ignores), until aborted. */
  agent?: HostAgent;
  /**
   * How long after its boot the host's kubelet first posts the node's status (the new boot ID, Ready).
   * The host's services (the agent, a FleetLock client) start with the boot, before it, as on a real host;
   * default KUBELET_LAG_MS.
   */
  kubeletLagMs?: number;
  /**
   * How often the kubelet posts the node's status while nothing changes (its nodeStatusReportFrequency):
   * a new heartbeat, the same boot; default KUBELET_REPORT_MS, as the kubelet's.
   */
  kubeletReportMs?: number;
}

/** The kubelet posts its first status this long after the boot, by default. */
export const KUBELET_LAG_MS = 200;
/** The kubelet's default nodeStatusReportFrequency: 5 minutes. */
export const KUBELET_REPORT_MS = 300_000;

export class SimHost implements Detector, Rebooter, BootId {
  readonly name = 'simulated';
  readonly nodeName: string;
  needsReboot = false;
  behaviour: RebootBehaviour;
  #bootId = randomUUID();
  #bootedAt: Date;
  /** When the current boot began, as the kernel's btime says it (the agent reports it). */
  readonly bootTime: BootTime = { read: async () => this.#bootedAt };
  #agentStop: AbortController | undefined;
  #agentDone: Promise<void> = Promise.resolve();
  #pendingBoot: ReturnType<typeof setTimeout> | undefined;
  #onChange: (() => void) | undefined;
  #stopped = false;
  #up = true;
  /** Boots so far: a status post of an earlier boot (a kubelet that has lagged) is dropped. */
  #boots = 0;
  /** The Ready condition's lastTransitionTime the kubelet last posted (a heartbeat keeps it), and its status. */
  #readySince = new Date().toISOString();
  #readyPosted = true;
  #heartbeat: ReturnType<typeof setInterval> | undefined;
  /** The next boot's kubelet lag, when a fault widened it (kubeletLate). */
  #nextLagMs: number | undefined;
  #bootTimeFrozen = false;
  readonly #o: SimHostOptions;
  reboots = 0;

  constructor(options: SimHostOptions) {
    if (!(options.rebootMs >= 0)) throw new Error(`rebootMs must be ≥ 0, got ${options.rebootMs}`);
    this.#o = options;
    this.nodeName = options.nodeName;
    this.behaviour = options.behaviour ?? RebootBehaviour.normal;
    this.#bootedAt = options.bootedAt ?? new Date();
  }

  /** False from the moment the host goes down for a reboot until its boot is complete. */
  get up(): boolean {
    return this.#up;
  }

  get bootIdValue(): string {
    return this.#bootId;
  }

  // Detector
  async check(): Promise<Detection> {
    return this.needsReboot
      ? { need: Need.needed, reason: 'simulated: OS update staged' }
      : { need: Need.notNeeded, reason: 'simulated: up to date' };
  }

  watch(onChange: () => void): () => void {
    this.#onChange = onChange;
    return () => {
      this.#onChange = undefined;
    };
  }

  /** Stages an update: the agent reports reboot-needed at once. */
  stageUpdate(): void {
    this.needsReboot = true;
    this.#onChange?.();
  }

  // BootId
  async read(): Promise<string> {
    return this.#bootId;
  }

  /**
   * The host's boot time stops advancing: every later boot reports the current one's (a broken clock or
   * btime, as an agent that reads it would see it).
   */
  freezeBootTime(): void {
    this.#bootTimeFrozen = true;
  }

  /** The kubelet of the host's next boot posts its status `ms` after the boot (a slow kubelet start). */
  kubeletLate(ms: number): void {
    this.#nextLagMs = ms;
  }

  // Rebooter
  async reboot(): Promise<void> {
    if (this.behaviour === RebootBehaviour.ignored) return;
    this.#o.onReboot?.(this.nodeName, this.#bootId);
    this.reboots++;
    this.#up = false;
    this.#boots++;
    clearInterval(this.#heartbeat);
    // The agent dies with the OS; don't wait for it here, since it is the caller.
    this.#agentStop?.abort();
    // The reboot's clock starts now, as a machine's does, not when the API server has taken the NotReady
    // status; the boot waits for that write, so NotReady never lands after Ready.
    const down = this.#postStatus(false);
    if (this.behaviour !== RebootBehaviour.neverReturns) {
      this.#pendingBoot = setTimeout(() => void this.#boot(down), this.#o.rebootMs);
    }
    await down;
  }

  /**
   * The boot: a new boot ID, the host's services started (the agent, a FleetLock client), and the kubelet's
   * first status post after them, as on a real host: what the agent reports may reach the API server
   * before the new boot ID does (safety rule 11).
   */
  async #boot(down: Promise<void>): Promise<void> {
    await down;
    if (this.#stopped) return;
    const boot = this.#boots;
    this.#bootId = randomUUID();
    if (!this.#bootTimeFrozen) this.#bootedAt = new Date();
    this.needsReboot = this.behaviour === RebootBehaviour.needSurvives;
    this.#up = true;
    this.#startAgent();
    const lag = this.#nextLagMs ?? this.#o.kubeletLagMs ?? KUBELET_LAG_MS;
    this.#nextLagMs = undefined;
    await new Promise((r) => setTimeout(r, lag));
    if (this.#stopped || boot !== this.#boots) return;
    await this.#postStatus(true, boot);
    this.#startHeartbeat(boot);
  }

  /** The kubelet's status post while nothing changes: a new heartbeat, the same boot and Ready since. */
  #startHeartbeat(boot: number): void {
    clearInterval(this.#heartbeat);
    this.#heartbeat = setInterval(() => {
      if (this.#stopped || boot !== this.#boots) return;
      void this.#setStatus(true, boot).catch(() => {});
    }, this.#o.kubeletReportMs ?? KUBELET_REPORT_MS);
    this.#heartbeat.unref();
  }

  /**
   * Posts the status until the API server takes it, as a kubelet keeps posting its own (e.g. through a
   * kube-apiserver restart): a host whose one write failed would never boot.
   */
  async #postStatus(ready: boolean, boot = this.#boots): Promise<void> {
    for (let delayMs = 200; ; delayMs = Math.min(delayMs * 2, 2000)) {
      try {
        await this.#setStatus(ready, boot);
        return;
      } catch (err) {
        if (this.#stopped || boot !== this.#boots) return;
        this.#o.log?.(
          'warn',
          `host ${this.nodeName}: posting ${ready ? 'Ready' : 'NotReady'} status failed (${(err as Error).message}); retrying in ${delayMs} ms`,
        );
        await new Promise((r) => setTimeout(r, delayMs));
      }
    }
  }

  /**
   * Writes what the kubelet would: Ready condition and boot ID (one write, as KWOK leaves it alone); a
   * post of a boot that has ended since is dropped. A change of Ready is a new transition; a heartbeat
   * keeps the last one.
   */
  async #setStatus(ready: boolean, boot: number): Promise<void> {
    if (boot !== this.#boots) return;
    const now = new Date().toISOString();
    const wasReady = this.#readyPosted;
    if (ready !== wasReady) this.#readySince = now;
    this.#readyPosted = ready;
    await this.#o.core.patchNodeStatus(
      {
        name: this.nodeName,
        body: {
          status: {
            nodeInfo: { bootID: this.#bootId },
            conditions: [
              {
                type: 'Ready',
                status: ready ? 'True' : 'False',
                reason: ready ? 'KubeletReady' : 'Rebooting',
                message: ready ? 'simulated kubelet is posting ready status' : 'simulated host is rebooting',
                lastHeartbeatTime: now,
                lastTransitionTime: this.#readySince,
              },
            ],
          },
        },
      },
      strategicMergePatch,
    );
  }

  /**
   * Takes the node's status over from KWOK for as long as the host runs, as a kubelet owns its node's
   * (KWOK keeps renewing its Lease and running its pods), publishes the first boot ID and starts the
   * agent. Once, not at each reboot: every extra node write is a chance for the operator's conditional
   * writes to conflict.
   */
  async start(): Promise<void> {
    await this.#customStatus('custom');
    await this.publishBootId();
    this.#startAgent();
    this.#startHeartbeat(this.#boots);
  }

  /** Writes the host's boot ID into the node's status, as the kubelet does at registration. */
  async publishBootId(): Promise<void> {
    await this.#o.core.patchNodeStatus(
      { name: this.nodeName, body: { status: { nodeInfo: { bootID: this.#bootId } } } },
      strategicMergePatch,
    );
  }

  #customStatus(value: 'custom' | null): Promise<unknown> {
    return this.#o.core.patchNode(
      { name: this.nodeName, body: { metadata: { annotations: { [KWOK_CUSTOM_STATUS]: value } } } },
      mergePatch,
    );
  }

  #startAgent(): void {
    // One agent per host, as one DaemonSet pod per node: a new agent replaces the running one (else a
    // restart racing the boot's own start leaves an orphan agent acting on a stale view of the host), and
    // none starts once the host is stopped.
    if (this.#stopped) return;
    this.#agentStop?.abort();
    const stop = new AbortController();
    this.#agentStop = stop;
    const run = this.#o.agent ? this.#o.agent.run(this, stop.signal) : this.#nuoAgent().run(stop.signal);
    this.#agentDone = run.catch((err) => this.#o.log?.('error', `agent ${this.nodeName}: ${err}`));
  }

  #nuoAgent(): NodeAgent {
    return new NodeAgent({
      nodeName: this.nodeName,
      client: this.#o.client,
      detector: this,
      rebooter: this,
      bootId: this,
      bootTime: this.bootTime,
      grants: new OperatorGrants(this.#o.client, DEFAULT_NAMESPACE),
      checkIntervalMs: this.#o.agentCheckIntervalMs ?? 10_000,
      reportSpreadMs: this.#o.agentReportSpreadMs ?? 0,
      log: this.#o.log,
    });
  }

  /** Kills the agent without touching the host (a crashed or restarted DaemonSet pod). */
  async killAgent(): Promise<void> {
    this.#agentStop?.abort();
    await this.#agentDone;
  }

  /**
   * Starts a fresh agent, replacing a running one. A host that is down (rebooting) runs nothing: its boot
   * starts the agent. Returns whether an agent was started.
   */
  restartAgent(): boolean {
    if (!this.#up || this.#stopped) return false;
    this.#startAgent();
    return true;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#pendingBoot);
    clearInterval(this.#heartbeat);
    await this.killAgent();
    // An up node goes back to KWOK; one that is down stays NotReady, as a host that never came back.
    if (this.#up) await this.#customStatus(null).catch(() => {});
  }
}
