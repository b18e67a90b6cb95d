/**
 * Asks, in the background, what blocks each policy's pool: its Prometheus (an alert firing), its pod
 * blockers (a running pod the selectors match) and its health checks. Every `intervalMs` (more often when
 * the policy's readings.maxAge asks for it), one round at a time per policy, the three read side by side,
 * the latest answers kept for the passes to read (a pass never waits on a blocker). An answer that
 * changes asks for a pass at once, and so does every fresh health reading (a finished node waits for one
 * taken after its return), and so does a reading that grows older than readings.maxAge. Until its first
 * round a policy with blockers is held (fail closed), and so it is while Prometheus, the pods or a checked
 * object cannot be read, a read takes longer than readings.timeout, or the last reading is older than
 * readings.maxAge (a round that hangs keeps no answer in force), ages measured on this process's
 * monotonic clock from when it took the reading.
 */
import type { CoreV1Api } from '@kubernetes/client-node';
import type { KubeLog } from '../../kube/backoff.ts';
import { sleep } from '../../kube/backoff.ts';
import { describeError } from '../../kube/errors.ts';
import { settledBy, withSignal } from '../../kube/request-signal.ts';
import { PrometheusBlocker } from '../../policy/prometheus.ts';
import type { ResolvedPolicy } from '../../policy/resolve.ts';
import type { PolicyEntry } from '../policies/policies.ts';
import {
  type BlockingPod,
  expireReadings,
  type PolicyBlockers,
  type ReadingPart,
  type ReadingTimes,
} from '../policies/pool-holds.ts';
import { type ObjectReader, readHealth } from './health-check-reads.ts';

interface Watched {
  key: string;
  policy: ResolvedPolicy;
  stop: AbortController;
  answer?: PolicyBlockers;
  /** When each part of the answer was taken, on the monotonic clock. */
  taken: ReadingTimes;
  /** Asks for a pass when the answer grows too old (a condition and reasons to say so). */
  expiry?: ReturnType<typeof setTimeout>;
}

/** The monotonic clock readings are aged on: a wall-clock step neither ages nor renews one. */
const monotonic = () => performance.now();

/**
 * How often a policy's blockers are read: every `intervalMs`, or often enough that a reading is renewed
 * well before it is readings.maxAge old even when each read takes its whole timeout.
 */
export function roundIntervalMs(intervalMs: number, r: ResolvedPolicy['readings']): number {
  return Math.max(1000, Math.min(intervalMs, (r.maxAgeMs - r.timeoutMs) / 2));
}

/**
 * What a policy's blockers are, compared between passes: a change starts a new watch. Every data field
 * counts (JSON drops only the parsed matchers), so no edit to a blocker can leave the old one running.
 */
export const blockersKey = (
  p: Pick<ResolvedPolicy, 'prometheus' | 'podBlockers' | 'healthChecks' | 'readings'>,
) => JSON.stringify([p.prometheus ?? null, p.podBlockers, p.healthChecks, p.readings]);

/** An answer as logged and compared for a change: a health reading's time left out. */
const withoutTime = (a: PolicyBlockers | undefined) =>
  JSON.stringify(a?.health && 'checks' in a.health ? { ...a, health: a.health.checks } : (a ?? null));

interface Options {
  core: CoreV1Api;
  objects: ObjectReader;
  intervalMs: number;
  onChange: () => void;
  log: KubeLog;
}

export class BlockerWatch {
  readonly #o: Options;
  readonly #watched = new Map<string, Watched>();

  constructor(o: Options) {
    this.#o = o;
  }

  /** Watches the blockers of these policies (their valid generation's), and stops watching the rest. */
  sync(policies: readonly PolicyEntry[]): void {
    const wanted = new Map<string, ResolvedPolicy>();
    for (const p of policies) {
      const r = p.current.ok ? p.current.policy : undefined;
      if (r && (r.prometheus || r.podBlockers.length > 0 || r.healthChecks.length > 0)) wanted.set(p.name, r);
    }
    for (const [name, w] of this.#watched) {
      const r = wanted.get(name);
      if (r && blockersKey(r) === w.key) continue;
      this.#end(w);
      this.#watched.delete(name);
    }
    for (const [name, r] of wanted) if (!this.#watched.has(name)) this.#watch(name, r);
  }

  /**
   * The latest answers for a policy's pool, each older than the policy's readings.maxAge now replaced by
   * its age; undefined before its first round.
   */
  blockers(policy: string): PolicyBlockers | undefined {
    const w = this.#watched.get(policy);
    if (!w?.answer) return undefined;
    return expireReadings(w.answer, w.taken, w.policy.readings.maxAgeMs, monotonic());
  }

  /** Stops every watch (leadership lost, or shutdown); a new leadership asks afresh. */
  stop(): void {
    for (const w of this.#watched.values()) this.#end(w);
    this.#watched.clear();
  }

  #end(w: Watched): void {
    w.stop.abort();
    clearTimeout(w.expiry);
  }

  #watch(name: string, policy: ResolvedPolicy): void {
    const w: Watched = { key: blockersKey(policy), policy, stop: new AbortController(), taken: {} };
    this.#watched.set(name, w);
    const { timeoutMs } = policy.readings;
    const prometheus = policy.prometheus
      ? new PrometheusBlocker(policy.prometheus, { timeoutMs })
      : undefined;
    /** One reading, under its own deadline, and when it was taken: when its read began (what it says is no newer). */
    const read = async <T>(part: ReadingPart, take: (signal: AbortSignal) => Promise<T>) => {
      const at = monotonic();
      const signal = AbortSignal.any([w.stop.signal, AbortSignal.timeout(timeoutMs)]);
      return { part, value: await take(signal), at };
    };
    void (async () => {
      while (!w.stop.signal.aborted) {
        const readings = await Promise.all([
          ...(prometheus ? [read('prometheus', (signal) => prometheus.check(signal))] : []),
          ...(policy.podBlockers.length > 0 ? [read('pods', (signal) => this.#pods(policy, signal))] : []),
          ...(policy.healthChecks.length > 0
            ? [read('health', (signal) => readHealth(policy.healthChecks, this.#o.objects, signal))]
            : []),
        ]);
        if (w.stop.signal.aborted) return;
        const answer: PolicyBlockers = {};
        for (const r of readings) {
          Object.assign(answer, { [r.part]: r.value });
          w.taken[r.part] = r.at;
        }
        const changed = withoutTime(answer) !== withoutTime(w.answer);
        w.answer = answer;
        if (changed) this.#o.log('info', 'blockers', { policy: name, ...answer });
        if (changed || answer.health) this.#o.onChange();
        // Should the next round not land in time, the pass that finds this answer too old runs then.
        clearTimeout(w.expiry);
        w.expiry = setTimeout(this.#o.onChange, policy.readings.maxAgeMs + 1);
        w.expiry.unref?.();
        await sleep(roundIntervalMs(this.#o.intervalMs, policy.readings), w.stop.signal);
      }
    })();
  }

  /**
   * The running pods the policy's pod blockers match (its namespace selector too), or an error that
   * holds the pool: they could not be read, or not within readings.timeout (`signal`).
   */
  async #pods(policy: ResolvedPolicy, signal: AbortSignal): Promise<BlockingPod[] | { error: string }> {
    try {
      if (signal.aborted) return [];
      const bounded = withSignal(signal, policy.readings.timeoutMs);
      const namespaces = await settledBy(this.#o.core.listNamespace({}, bounded), signal);
      const labelsOf = new Map(
        namespaces.items.map((n) => [n.metadata?.name ?? '', n.metadata?.labels ?? {}]),
      );
      const found: BlockingPod[] = [];
      for (const [i, b] of policy.podBlockers.entries()) {
        const pods = await settledBy(
          this.#o.core.listPodForAllNamespaces(
            { labelSelector: b.selector, fieldSelector: 'status.phase=Running' },
            bounded,
          ),
          signal,
        );
        for (const pod of pods.items) {
          const namespace = pod.metadata?.namespace ?? '';
          if (!b.namespaces(labelsOf.get(namespace) ?? {})) continue;
          found.push({
            namespace,
            name: pod.metadata?.name ?? '',
            node: pod.spec?.nodeName ?? '',
            blocker: i,
          });
        }
      }
      return found;
    } catch (err) {
      const why = signal.aborted
        ? `no answer within readings.timeout (${policy.readings.timeoutMs / 1000}s)`
        : describeError(err);
      return { error: `the pods of blockers.pods could not be read: ${why}` };
    }
  }
}
