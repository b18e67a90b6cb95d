/**
 * Asks, in the background, what blocks each policy's pool: its Prometheus (an alert firing), its pod
 * blockers (a running pod the selectors match) and its health checks. Every `intervalMs`, one round at a
 * time per policy, the latest answers kept for the passes to read (a pass never waits on a blocker). An
 * answer that changes asks for a pass at once, and so does every fresh health reading (a finished node
 * waits for one taken after its return). Until its first round a policy with blockers is held (fail
 * closed), and so it is while Prometheus, the pods or a checked object cannot be read.
 */
import type { CoreV1Api } from '@kubernetes/client-node';
import type { KubeLog } from '../../kube/backoff.ts';
import { sleep } from '../../kube/backoff.ts';
import { describeError } from '../../kube/errors.ts';
import { PrometheusBlocker } from '../../policy/prometheus.ts';
import type { ResolvedPolicy } from '../../policy/resolve.ts';
import type { PolicyEntry } from '../policies/policies.ts';
import type { BlockingPod, PolicyBlockers } from '../policies/pool-holds.ts';
import { type ObjectReader, readHealth } from './health-check-reads.ts';

interface Watched {
  key: string;
  stop: AbortController;
  answer?: PolicyBlockers;
}

/**
 * What a policy's blockers are, compared between passes: a change starts a new watch. Every data field
 * counts (JSON drops only the parsed matchers), so no edit to a blocker can leave the old one running.
 */
export const blockersKey = (p: Pick<ResolvedPolicy, 'prometheus' | 'podBlockers' | 'healthChecks'>) =>
  JSON.stringify([p.prometheus ?? null, p.podBlockers, p.healthChecks]);

/** An answer as logged and compared for a change: a health reading's time left out. */
const withoutTime = (a: PolicyBlockers | undefined) =>
  JSON.stringify(a?.health ? { ...a, health: a.health.checks } : (a ?? null));

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
      w.stop.abort();
      this.#watched.delete(name);
    }
    for (const [name, r] of wanted) if (!this.#watched.has(name)) this.#watch(name, r);
  }

  /** The latest answers for a policy's pool; undefined before its first round. */
  blockers(policy: string): PolicyBlockers | undefined {
    return this.#watched.get(policy)?.answer;
  }

  /** Stops every watch (leadership lost, or shutdown); a new leadership asks afresh. */
  stop(): void {
    for (const w of this.#watched.values()) w.stop.abort();
    this.#watched.clear();
  }

  #watch(name: string, policy: ResolvedPolicy): void {
    const w: Watched = { key: blockersKey(policy), stop: new AbortController() };
    this.#watched.set(name, w);
    const prometheus = policy.prometheus ? new PrometheusBlocker(policy.prometheus) : undefined;
    void (async () => {
      while (!w.stop.signal.aborted) {
        const answer: PolicyBlockers = {
          ...(prometheus ? { prometheus: await prometheus.check(w.stop.signal) } : {}),
          ...(policy.podBlockers.length > 0 ? { pods: await this.#pods(policy, w.stop.signal) } : {}),
          ...(policy.healthChecks.length > 0
            ? { health: await readHealth(policy.healthChecks, this.#o.objects, w.stop.signal) }
            : {}),
        };
        if (w.stop.signal.aborted) return;
        const changed = withoutTime(answer) !== withoutTime(w.answer);
        w.answer = answer;
        if (changed) this.#o.log('info', 'blockers', { policy: name, ...answer });
        if (changed || answer.health) this.#o.onChange();
        await sleep(this.#o.intervalMs, w.stop.signal);
      }
    })();
  }

  /**
   * The running pods the policy's pod blockers match (its namespace selector too), or an error that
   * holds the pool: they could not be read.
   */
  async #pods(policy: ResolvedPolicy, signal: AbortSignal): Promise<BlockingPod[] | { error: string }> {
    try {
      if (signal.aborted) return [];
      const namespaces = await this.#o.core.listNamespace();
      const labelsOf = new Map(
        namespaces.items.map((n) => [n.metadata?.name ?? '', n.metadata?.labels ?? {}]),
      );
      const found: BlockingPod[] = [];
      for (const [i, b] of policy.podBlockers.entries()) {
        const pods = await this.#o.core.listPodForAllNamespaces({
          labelSelector: b.selector,
          fieldSelector: 'status.phase=Running',
        });
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
      return { error: `the pods of blockers.pods could not be read: ${describeError(err)}` };
    }
  }
}
