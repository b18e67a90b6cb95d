/**
 * Asks each policy's Prometheus, in the background, whether an alert blocks its pool: every
 * `intervalMs`, one question at a time per policy, the latest verdict kept for the passes to read (a pass
 * never waits on Prometheus). A verdict that changes asks for a pass at once. Until its first answer a
 * policy's pool is held (fail closed), and so it is while Prometheus cannot be reached.
 */
import type { KubeLog } from '../kube/backoff.ts';
import { sleep } from '../kube/backoff.ts';
import { PrometheusBlocker, type PrometheusBlockerSpec } from '../policy/prometheus.ts';
import type { PolicyEntry } from './policies.ts';
import type { BlockerVerdict } from './pool-plan.ts';

interface Watched {
  key: string;
  stop: AbortController;
  verdict?: BlockerVerdict;
}

export class BlockerWatch {
  readonly #intervalMs: number;
  readonly #onChange: () => void;
  readonly #log: KubeLog;
  readonly #watched = new Map<string, Watched>();

  constructor(o: { intervalMs: number; onChange: () => void; log: KubeLog }) {
    this.#intervalMs = o.intervalMs;
    this.#onChange = o.onChange;
    this.#log = o.log;
  }

  /** Watches the blockers of these policies (their valid generation's), and stops watching the rest. */
  sync(policies: readonly PolicyEntry[]): void {
    const wanted = new Map<string, PrometheusBlockerSpec>();
    for (const p of policies) {
      const spec = p.current.ok ? p.current.policy.prometheus : undefined;
      if (spec) wanted.set(p.name, spec);
    }
    for (const [name, w] of this.#watched) {
      if (wanted.get(name) && JSON.stringify(wanted.get(name)) === w.key) continue;
      w.stop.abort();
      this.#watched.delete(name);
    }
    for (const [name, spec] of wanted) if (!this.#watched.has(name)) this.#watch(name, spec);
  }

  /** The latest verdict for a policy's pool; undefined before the first answer. */
  verdict(policy: string): BlockerVerdict | undefined {
    return this.#watched.get(policy)?.verdict;
  }

  /** Stops every watch (leadership lost, or shutdown); a new leadership asks afresh. */
  stop(): void {
    for (const w of this.#watched.values()) w.stop.abort();
    this.#watched.clear();
  }

  #watch(name: string, spec: PrometheusBlockerSpec): void {
    const w: Watched = { key: JSON.stringify(spec), stop: new AbortController() };
    this.#watched.set(name, w);
    const blocker = new PrometheusBlocker(spec);
    void (async () => {
      while (!w.stop.signal.aborted) {
        const verdict = await blocker.check(w.stop.signal);
        if (w.stop.signal.aborted) return;
        const changed = verdict.blocked !== w.verdict?.blocked || verdict.reason !== w.verdict?.reason;
        w.verdict = verdict;
        if (changed) {
          this.#log('info', verdict.blocked ? 'pool blocked' : 'pool no longer blocked', {
            policy: name,
            reason: verdict.reason,
          });
          this.#onChange();
        }
        await sleep(this.#intervalMs, w.stop.signal);
      }
    })();
  }
}
