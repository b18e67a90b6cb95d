/**
 * Delivers a pool's notifications (policy `notifications[]`) without ever holding up the control loop:
 * notify() only queues. Each receiver has its own queue, delivered in order, each message retried with
 * backoff; a full queue drops its oldest message. The receiver's URL is a key of the Secret
 * nuo-notifications in the operator's namespace (read again after a minute), so a rotated webhook is
 * picked up without a restart, and the operator may read that one Secret and no other.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { CoreV1Api } from '@kubernetes/client-node';
import { NOTIFICATIONS_SECRET } from '../api/update-policy.ts';
import type { KubeLog } from '../kube/backoff.ts';
import { describeError } from '../kube/errors.ts';
import type { OperatorMetrics } from '../operator/metrics.ts';
import type { ResolvedNotification } from '../policy/resolve.ts';
import { type NotifyEvent, payload } from './message.ts';

/** Messages waiting per receiver: a receiver down for long loses its oldest news, not the operator's memory. */
const QUEUE_LIMIT = 100;
const URL_TTL_MS = 60_000;

/** The wait before retry `attempt` (0-based): 1 s, doubling, at most 30 s. */
export function retryDelayMs(attempt: number, baseMs = 1000): number {
  return Math.min(baseMs * 2 ** attempt, 30_000);
}

export interface NotifierOptions {
  core: CoreV1Api;
  /** Where the Secret holding the receivers' URLs is: the operator's namespace. */
  namespace: string;
  log: KubeLog;
  metrics?: OperatorMetrics;
  /** Per request (default 10 s): a receiver that hangs is given up and tried again. */
  timeoutMs?: number;
  /** Tries per message (default 5). */
  attempts?: number;
  /** The first retry's wait (default 1 s). */
  retryBaseMs?: number;
}

interface Queue {
  items: NotifyEvent[];
  running: boolean;
}

export class Notifier {
  readonly #o: NotifierOptions;
  readonly #queues = new Map<string, Queue>();
  readonly #urls = new Map<string, { url: string; at: number }>();
  /** The block each receiver was last told of, per policy: told once per block. */
  readonly #blocksTold = new Map<string, number>();
  readonly #stop = new AbortController();

  constructor(options: NotifierOptions) {
    this.#o = options;
  }

  /** Queues `event` for each of the policy's receivers that asks for its kind; returns at once. */
  notify(receivers: readonly ResolvedNotification[], event: NotifyEvent): void {
    for (const r of receivers) if (r.on.has(event.kind)) this.#enqueue(r, event);
  }

  /**
   * A pool blocked since `since`: each receiver that asks for Blocked is told once per block, when the
   * block has lasted its `blockedFor`.
   */
  blocked(receivers: readonly ResolvedNotification[], event: NotifyEvent, since: Date): void {
    for (const r of receivers) {
      if (!r.on.has('Blocked') || event.at.getTime() - since.getTime() < r.blockedForMs) continue;
      const key = `${event.policy}\u0000${receiverKey(r)}`;
      if (this.#blocksTold.get(key) === since.getTime()) continue;
      this.#blocksTold.set(key, since.getTime());
      this.#enqueue(r, event);
    }
  }

  /** Ends deliveries in flight and forgets what is queued (the operator stops). */
  stop(): void {
    this.#stop.abort();
    this.#queues.clear();
  }

  #enqueue(r: ResolvedNotification, event: NotifyEvent): void {
    if (this.#stop.signal.aborted) return;
    const key = receiverKey(r);
    const queue = this.#queues.get(key) ?? { items: [], running: false };
    this.#queues.set(key, queue);
    queue.items.push(event);
    if (queue.items.length > QUEUE_LIMIT) {
      queue.items.shift();
      this.#o.metrics?.notifications.inc({ result: 'dropped' });
      this.#o.log('warn', 'a notification was dropped: its receiver is behind', { secretKey: r.secretKey });
    }
    if (!queue.running) void this.#run(r, queue);
  }

  async #run(r: ResolvedNotification, queue: Queue): Promise<void> {
    queue.running = true;
    try {
      for (let event = queue.items.shift(); event; event = queue.items.shift()) await this.#deliver(r, event);
    } finally {
      queue.running = false;
    }
  }

  async #deliver(r: ResolvedNotification, event: NotifyEvent): Promise<void> {
    const attempts = this.#o.attempts ?? 5;
    let last = '';
    for (let attempt = 0; attempt < attempts && !this.#stop.signal.aborted; attempt++) {
      if (attempt > 0) await sleep(retryDelayMs(attempt - 1, this.#o.retryBaseMs), this.#stop.signal);
      try {
        await this.#post(await this.#url(r), payload(r.format, event));
        this.#o.metrics?.notifications.inc({ result: 'sent' });
        return;
      } catch (err) {
        last = describeError(err);
      }
    }
    if (this.#stop.signal.aborted) return;
    this.#o.metrics?.notifications.inc({ result: 'failed' });
    this.#o.log('warn', `a notification was not delivered after ${attempts} tries`, {
      secretKey: r.secretKey,
      kind: event.kind,
      policy: event.policy,
      error: last,
    });
  }

  async #post(url: string, body: Record<string, unknown>): Promise<void> {
    const timeout = AbortSignal.timeout(this.#o.timeoutMs ?? 10_000);
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.any([timeout, this.#stop.signal]),
    });
    await res.body?.cancel();
    if (!res.ok) throw new Error(`the receiver answered ${res.status} ${res.statusText}`);
  }

  /** The receiver's URL, from the Secret (read again after a minute): an http(s) URL, or why not. */
  async #url(r: ResolvedNotification): Promise<string> {
    const cached = this.#urls.get(r.secretKey);
    if (cached && Date.now() - cached.at < URL_TTL_MS) return cached.url;
    const where = `Secret ${this.#o.namespace}/${NOTIFICATIONS_SECRET}`;
    const secret = await this.#o.core.readNamespacedSecret({
      name: NOTIFICATIONS_SECRET,
      namespace: this.#o.namespace,
    });
    const encoded = secret.data?.[r.secretKey];
    if (encoded === undefined) throw new Error(`${where} has no key ${r.secretKey}`);
    const url = Buffer.from(encoded, 'base64').toString('utf8').trim();
    if (!/^https?:\/\/[^/\s]+/.test(url))
      throw new Error(`${where} key ${r.secretKey} is not an http(s) URL`);
    this.#urls.set(r.secretKey, { url, at: Date.now() });
    return url;
  }
}

const receiverKey = (r: ResolvedNotification) => `${r.format}\u0000${r.secretKey}`;

/** Waits `ms`, or less when the notifier stops. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return delay(ms, undefined, { signal }).catch(() => {});
}
