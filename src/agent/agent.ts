/**
 * The node agent: node-local facts and actions only. It watches its own Node, publishes reboot-needed
 * from its Detector, and reboots when the operator granted it — never on a grant older than its boot,
 * never twice for one grant, never because a check failed. It writes only its own keys, only on its own
 * Node, and only when a value changes (an idle agent makes no writes).
 */
import { Annotations } from '../api/keys.ts';
import { LeanApiError, type LeanClient, type LeanNode } from '../kube/lean-client.ts';
import { type BootId, type Detection, type Detector, Need, type Rebooter } from './os.ts';
import { agentStep } from './step.ts';

export interface AgentOptions {
  nodeName: string;
  client: LeanClient;
  detector: Detector;
  rebooter: Rebooter;
  bootId: BootId;
  /** Labels the agent keeps on its node (os-id, os-version). */
  labels?: Record<string, string>;
  /** How often the detector is polled (push detectors also call back). */
  checkIntervalMs?: number;
  log?: (level: 'info' | 'warn' | 'error', message: string) => void;
}

export class NodeAgent {
  readonly #o: Required<AgentOptions>;
  #node: LeanNode | undefined;
  #detection: Detection = { need: Need.unknown, reason: 'not checked yet' };
  #bootId = '';
  #bootedAt = new Date(0);
  #rebootRequested = false;
  #busy: Promise<void> = Promise.resolve();

  constructor(options: AgentOptions) {
    if (!options.nodeName) throw new Error('agent: the node name is required (--node-name or NODE_NAME)');
    this.#o = { checkIntervalMs: 60_000, log: () => {}, labels: {}, ...options };
  }

  /** Runs until the signal aborts. */
  async run(signal: AbortSignal): Promise<void> {
    this.#bootId = await this.#o.bootId.read();
    this.#bootedAt = await this.#o.bootId.bootedAt();
    const stopWatching = this.#o.detector.watch?.(() => this.#schedule(() => this.#check()));
    const timer = setInterval(() => this.#schedule(() => this.#check()), this.#o.checkIntervalMs);
    try {
      await this.#check();
      let backoff = 500;
      let announced = false;
      while (!signal.aborted) {
        try {
          const node = await this.#o.client.getNode(this.#o.nodeName);
          await this.#schedule(() => this.#onNode(node));
          if (!announced && !signal.aborted) {
            // Once per process, after its first decision on the Node: says which boot this agent runs in
            // (and lets tests know a restarted agent has looked at its Node).
            announced = true;
            this.#o.log(
              'info',
              `${this.#o.nodeName}: agent running (boot ${this.#bootId}); watching its node`,
            );
          }
          backoff = 500;
          await this.#o.client.watchNode(
            this.#o.nodeName,
            node.metadata.resourceVersion,
            (type, n) => {
              if (type === 'ADDED' || type === 'MODIFIED') void this.#schedule(() => this.#onNode(n));
            },
            signal,
          );
        } catch (err) {
          if (signal.aborted) break;
          this.#o.log(
            'warn',
            `watching node ${this.#o.nodeName}: ${(err as Error).message}; retrying in ${backoff} ms`,
          );
          await new Promise((r) => setTimeout(r, backoff));
          backoff = Math.min(backoff * 2, 30_000);
        }
      }
    } finally {
      clearInterval(timer);
      stopWatching?.();
    }
  }

  /** Writes a problem the agent cannot fix itself on its node (e.g. a reboot that did not happen). */
  reportProblem(message: string): Promise<void> {
    this.#o.log('error', `${this.#o.nodeName}: ${message}`);
    return this.#schedule(async () => {
      this.#node = await this.#o.client.patchNode(this.#o.nodeName, {
        metadata: { annotations: { [Annotations.agentProblem]: message } },
      });
    });
  }

  /** Serialises handling: one decision at a time, on the latest node. */
  #schedule(fn: () => Promise<void>): Promise<void> {
    this.#busy = this.#busy.then(fn).catch((err) => this.#o.log('error', (err as Error).message));
    return this.#busy;
  }

  async #check(): Promise<void> {
    this.#detection = await this.#o.detector.check();
    if (this.#node) await this.#onNode(this.#node);
  }

  async #onNode(node: LeanNode): Promise<void> {
    this.#node = node;
    const step = agentStep({
      annotations: node.metadata.annotations ?? {},
      bootId: this.#bootId,
      bootedAt: this.#bootedAt,
      detection: this.#detection,
      rebootRequested: this.#rebootRequested,
    });
    if (step.log) this.#o.log(step.log.level, `${this.#o.nodeName}: ${step.log.message}`);
    const labels = Object.fromEntries(
      Object.entries(this.#o.labels).filter(([k, v]) => node.metadata.labels?.[k] !== v),
    );
    if (step.patch || Object.keys(labels).length > 0) {
      try {
        this.#node = await this.#o.client.patchNode(this.#o.nodeName, {
          metadata: {
            resourceVersion: node.metadata.resourceVersion,
            ...(step.patch ? { annotations: step.patch } : {}),
            ...(Object.keys(labels).length > 0 ? { labels } : {}),
          },
        });
      } catch (err) {
        // 409: the node changed under us; the watch delivers the new version and we decide again.
        if (err instanceof LeanApiError && err.status === 409) return;
        throw err;
      }
    }
    if (step.reboot) {
      this.#rebootRequested = true;
      this.#o.log(
        'info',
        `${this.#o.nodeName}: rebooting with ${this.#o.rebooter.name} (boot ${this.#bootId})`,
      );
      await this.#o.rebooter.reboot();
    }
  }
}
