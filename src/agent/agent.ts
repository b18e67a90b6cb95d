/**
 * The node agent: node-local facts and actions only. It watches its own Node, publishes reboot-needed
 * from its Detector, and reboots when the operator granted it — only on a grant the operator signed for
 * this node, boot and attempt, never twice for one grant, never because a check failed. It writes only its own keys, only on its own
 * Node, and only when a value changes (an idle agent makes no writes).
 */
import { Annotations } from '../api/keys.ts';
import type { BackoffOptions } from '../kube/backoff.ts';
import { LeanApiError, type LeanClient, type LeanNode } from '../kube/lean-client.ts';
import { Reflector } from '../kube/reflector.ts';
import type { GrantVerifier } from './grant-key.ts';
import { type BootId, type BootTime, type Detection, type Detector, Need, type Rebooter } from './os.ts';
import { agentStep } from './step.ts';

/** Retries of the Node watch: 500 ms doubling to 30 s, jittered so agents that failed together spread out. */
const WATCH_BACKOFF: BackoffOptions = { initialMs: 500, maxMs: 30_000, jitter: 0.5 };
/** The default of AgentOptions.reportSpreadMs. */
export const REPORT_SPREAD_MS = 10_000;

export interface AgentOptions {
  nodeName: string;
  client: LeanClient;
  detector: Detector;
  rebooter: Rebooter;
  bootId: BootId;
  /** When the boot began, reported as `nuo.dev/boot-time`; absent: not reported. */
  bootTime?: BootTime;
  /** Checks `nuo.dev/reboot-ok` against the operator's key: only a grant it gave is obeyed. */
  grants: GrantVerifier;
  /** Labels the agent keeps on its node (os-id, os-version). */
  labels?: Record<string, string>;
  /** How often the detector is polled (push detectors also call back). */
  checkIntervalMs?: number;
  /**
   * A need for a reboot that is not on the node yet is reported after a random delay up to this long, so
   * an update that reaches a whole fleet at once does not have every agent write its node in the same
   * instant, a burst the operator's first admissions would queue behind. 0 reports at once.
   */
  reportSpreadMs?: number;
  /** Random numbers in [0, 1) for the report's delay (tests fix them). */
  random?: () => number;
  log?: (level: 'info' | 'warn' | 'error', message: string) => void;
}

export class NodeAgent {
  readonly #o: Required<Omit<AgentOptions, 'bootTime'>> & Pick<AgentOptions, 'bootTime'>;
  #node: LeanNode | undefined;
  #detection: Detection = { need: Need.unknown, reason: 'not checked yet' };
  #bootId = '';
  #bootTime: string | undefined;
  /** The last line agentStep asked to log: a node seen again in the same state does not repeat it. */
  #lastStepLog = '';
  #rebootRequested = false;
  #busy: Promise<void> = Promise.resolve();
  /**
   * A need not on the node yet (see #holdBack): held back until its timer fires, then due. The timer
   * alone ends the hold: compared with Date.now() instead, a timer that fired a millisecond before the
   * wall clock reached the moment (timers run on the monotonic clock) left the report held until the
   * next check, a whole check interval later — a 6-node benchmark rollout stood still 42 s for it.
   */
  #report: 'held' | 'due' | undefined;
  #reportTimer: ReturnType<typeof setTimeout> | undefined;
  /** The running agent's stop signal: a report held back must not be written by a stopped agent. */
  #stopped: AbortSignal | undefined;

  constructor(options: AgentOptions) {
    if (!options.nodeName) throw new Error('agent: the node name is required (--node-name or NODE_NAME)');
    const spread = options.reportSpreadMs ?? REPORT_SPREAD_MS;
    if (!(spread >= 0 && Number.isFinite(spread)))
      throw new Error(`agent: the report spread must be a duration ≥ 0, got ${options.reportSpreadMs} ms`);
    // An option passed as undefined means "the default", not "nothing" (a spread would keep the undefined).
    this.#o = {
      ...options,
      checkIntervalMs: options.checkIntervalMs ?? 60_000,
      reportSpreadMs: spread,
      random: options.random ?? Math.random,
      log: options.log ?? (() => {}),
      labels: options.labels ?? {},
    };
  }

  /** Runs until the signal aborts. */
  async run(signal: AbortSignal): Promise<void> {
    this.#stopped = signal;
    this.#bootId = await this.#o.bootId.read();
    this.#bootTime = await this.#readBootTime();
    const stopWatching = this.#o.detector.watch?.(() => this.#schedule(() => this.#check()));
    const timer = setInterval(() => this.#schedule(() => this.#check()), this.#o.checkIntervalMs);
    try {
      await this.#check();
      await this.#follow(signal);
    } finally {
      clearInterval(timer);
      clearTimeout(this.#reportTimer);
      stopWatching?.();
    }
  }

  /** The boot's start as RFC 3339; one that cannot be read is logged and not reported (no refresh then). */
  async #readBootTime(): Promise<string | undefined> {
    try {
      return (await this.#o.bootTime?.read())?.toISOString();
    } catch (err) {
      this.#o.log('warn', `${this.#o.nodeName}: boot time not reported: ${(err as Error).message}`);
      return undefined;
    }
  }

  /**
   * Follows the agent's Node with the reflector loop (reflector.ts): list it (by field selector), watch
   * from the list's resourceVersion, watch again from the last one seen; only 410 Gone lists again.
   * Watching from the Node's own resourceVersion instead, which is as old as its last change, is answered
   * 410 after every kube-apiserver restart.
   */
  async #follow(signal: AbortSignal): Promise<void> {
    const name = this.#o.nodeName;
    let announced = false;
    const reflector = new Reflector<LeanNode>({
      name: `watching node ${name}`,
      list: async () => {
        const list = await this.#o.client.listNode(name);
        const node = list.items[0];
        if (!node) throw new Error(`node ${name} not found`);
        await this.#schedule(() => this.#onNode(node));
        if (!announced && !signal.aborted) {
          // Once per process, after its first decision on the Node: says which boot this agent runs in
          // (and lets tests know a restarted agent has looked at its Node).
          announced = true;
          this.#o.log('info', `${name}: agent running (boot ${this.#bootId}); watching its node`);
        }
        return { resourceVersion: list.metadata.resourceVersion };
      },
      watch: (resourceVersion, onEvent, watchSignal) =>
        this.#o.client.watchNode(name, resourceVersion ?? '', onEvent, watchSignal),
      onEvent: (type, node) => {
        if (type === 'ADDED' || type === 'MODIFIED') void this.#schedule(() => this.#onNode(node));
      },
      isGone: (err) => err instanceof LeanApiError && err.status === 410,
      backoff: WATCH_BACKOFF,
      log: (level, message) => {
        if (level !== 'debug') this.#o.log(level, message);
      },
    });
    await reflector.run(signal);
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

  /** Serialises handling: one decision at a time, on the latest node; none once the agent is stopped. */
  #schedule(fn: () => Promise<void>): Promise<void> {
    this.#busy = this.#busy
      .then(() => (this.#acting() ? fn() : undefined))
      .catch((err) => this.#o.log('error', (err as Error).message));
    return this.#busy;
  }

  /**
   * A stopped agent acts on nothing, not even a decision it was in the middle of when stopped: a
   * reboot asked for after the stop would be a second one if the next agent, seeing the marker and the
   * same boot, asks again.
   */
  #acting(): boolean {
    return this.#stopped?.aborted !== true;
  }

  async #check(): Promise<void> {
    const detection = await this.#o.detector.check();
    if (this.#holdBack(detection)) return;
    this.#detection = detection;
    if (this.#node) await this.#onNode(this.#node);
  }

  /**
   * Whether a detection is kept from the node for now: a need the node does not show yet waits until a
   * random moment within reportSpreadMs of its first detection (a timer checks again then). Only that
   * report waits: a need already shown, its withdrawal and everything else go on at once, and so does a
   * need found before the agent has read its node (its start: a DaemonSet's agents restart a few at a
   * time, not all at once).
   */
  #holdBack(d: Detection): boolean {
    const node = this.#node;
    const shown = node?.metadata.annotations?.[Annotations.rebootNeeded] === 'true';
    if (!node || d.need !== Need.needed || shown || this.#o.reportSpreadMs === 0) {
      this.#report = undefined;
      clearTimeout(this.#reportTimer);
      return false;
    }
    if (this.#report === undefined && this.#acting()) {
      const delayMs = Math.floor(this.#o.random() * this.#o.reportSpreadMs);
      this.#report = 'held';
      this.#o.log('info', `${this.#o.nodeName}: ${d.reason}: reporting it in ${delayMs} ms`);
      this.#reportTimer = setTimeout(() => {
        this.#report = 'due';
        if (this.#acting()) void this.#schedule(() => this.#check());
      }, delayMs);
    }
    return this.#report === 'held';
  }

  async #onNode(node: LeanNode): Promise<void> {
    this.#node = node;
    const annotations = node.metadata.annotations ?? {};
    const grant = annotations[Annotations.rebootOk];
    const step = agentStep({
      annotations,
      bootId: this.#bootId,
      grant:
        grant === undefined
          ? undefined
          : await this.#o.grants.verify(grant, { node: this.#o.nodeName, bootId: this.#bootId }),
      detection: this.#detection,
      rebootRequested: this.#rebootRequested,
      unschedulable: node.spec?.unschedulable === true,
      ...(this.#bootTime === undefined ? {} : { bootTime: this.#bootTime }),
    });
    if (!this.#acting()) return;
    const line = step.log ? `${this.#o.nodeName}: ${step.log.message}` : '';
    if (step.log && line !== this.#lastStepLog) this.#o.log(step.log.level, line);
    this.#lastStepLog = line;
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
    if (step.reboot && this.#acting()) {
      this.#rebootRequested = true;
      this.#o.log(
        'info',
        `${this.#o.nodeName}: rebooting with ${this.#o.rebooter.name} (boot ${this.#bootId})`,
      );
      await this.#o.rebooter.reboot();
    }
  }
}
