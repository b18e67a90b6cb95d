/**
 * Writes each UpdatePolicy's status after a pass, only when it changed (policy-status.ts builds it), one
 * write per policy at a time, through the status subresource: a pass that changes nothing writes
 * nothing, so an idle cluster sees no status writes at all.
 */
import { CustomObjectsApi } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, UPDATE_POLICY } from '../../api/crd.ts';
import type { UpdatePolicyStatus } from '../../api/update-policy.ts';
import type { KubeLog } from '../../kube/backoff.ts';
import { describeError, statusCode } from '../../kube/errors.ts';
import { mergePatch } from '../../kube/patch.ts';
import type { PooledKubeConfig } from '../../kube/pooled-kubeconfig.ts';
import type { Notifier } from '../../notify/notifier.ts';
import type { ResolvedPolicy } from '../../policy/resolve.ts';
import type { PassDecision } from '../decider.ts';
import type { OperatorMetrics } from '../metrics.ts';
import type { EventRecorder } from '../write/events.ts';
import { AttemptClock, type AttemptSample } from './attempt-durations.ts';
import type { PolicyEntry } from './policies.ts';
import { blockedEvent, blockedSince, rolloutFinished, rolloutHalted } from './policy-events.ts';
import { policyStatus, statusChanged, statusPatch } from './policy-status.ts';

export class PolicyStatusWriter {
  readonly #api: CustomObjectsApi;
  readonly #log: KubeLog;
  readonly #metrics: OperatorMetrics | undefined;
  readonly #events: EventRecorder;
  readonly #notifier: Notifier;
  /** The status last written for each policy (by uid and generation): compared before the next write. */
  readonly #written = new Map<string, { key: string; status: UpdatePolicyStatus }>();
  readonly #writing = new Set<string>();
  /** The phases each node entered in its attempt, measured as attempts complete. */
  readonly #attempts = new AttemptClock();
  /** Attempts measured per policy, not yet in a status written. */
  readonly #samples = new Map<string, AttemptSample[]>();

  constructor(o: {
    kubeconfig: PooledKubeConfig;
    events: EventRecorder;
    notifier: Notifier;
    log: KubeLog;
    metrics?: OperatorMetrics;
  }) {
    this.#api = o.kubeconfig.makeApiClient(CustomObjectsApi);
    this.#events = o.events;
    this.#notifier = o.notifier;
    this.#log = o.log;
    this.#metrics = o.metrics;
  }

  /** Each policy's status after this pass, written in the background where it changed. */
  update(decision: PassDecision, policies: readonly PolicyEntry[], now: Date): void {
    this.#measure(decision);
    for (const entry of policies) {
      if (this.#writing.has(entry.name)) continue;
      const pool = decision.pools.find((p) => p.pool.name === entry.name);
      const conflicts = [...decision.plan.conflicts].filter(([, names]) => names.includes(entry.name));
      const completed = pool?.decision.actions.some((a) => a.type === 'complete') ?? false;
      const key = `${entry.uid}/${entry.generation}`;
      const written = this.#written.get(entry.name);
      const known = written?.key === key ? { ...entry, status: written.status } : entry;
      const samples = this.#samples.get(entry.name) ?? [];
      const status = policyStatus({
        entry: known,
        ...(pool ? { pool } : {}),
        conflicts,
        completed,
        samples,
        now,
      });
      this.#tellBlocked(entry, status, now);
      if (!statusChanged(known.status, status)) continue;
      this.#write(entry, key, status, known.status, samples.length);
    }
  }

  /** Measures the attempts completing in this pass, each for its pool's next status. */
  #measure(decision: PassDecision): void {
    const completing = new Set(decision.actions.filter((a) => a.type === 'complete').map((a) => a.node));
    const measured = this.#attempts.observe(
      decision.pools.flatMap((p) => p.pool.nodes),
      completing,
    );
    for (const { pool } of decision.pools) {
      const samples = pool.nodes.flatMap((n) => {
        const s = measured.get(n.name);
        return s ? [s] : [];
      });
      if (samples.length > 0)
        this.#samples.set(pool.name, [...(this.#samples.get(pool.name) ?? []), ...samples]);
    }
  }

  /** A pool blocked for long is told to its receivers once per block (each after its `blockedFor`). */
  #tellBlocked(entry: PolicyEntry, status: UpdatePolicyStatus, now: Date): void {
    const block = blockedSince(status);
    if (!block) return;
    const event = { kind: 'Blocked', policy: entry.name, message: block.message, at: now } as const;
    this.#notifier.blocked(receivers(entry), event, block.since);
  }

  /** A new leadership compares with what it reads, not with what an earlier one wrote. */
  clear(): void {
    this.#written.clear();
  }

  /** Writes `status` over `previous` (what was read or last written), and tells what changed in an Event. */
  #write(
    entry: PolicyEntry,
    key: string,
    status: UpdatePolicyStatus,
    previous: UpdatePolicyStatus | undefined,
    samples: number,
  ): void {
    const name = entry.name;
    this.#writing.add(name);
    this.#api
      .patchClusterCustomObjectStatus(
        {
          group: API_GROUP,
          version: API_VERSION,
          plural: UPDATE_POLICY.plural,
          name,
          body: { status: statusPatch(previous, status) },
        },
        mergePatch,
      )
      .then(() => {
        this.#written.set(name, { key, status });
        this.#samples.set(name, (this.#samples.get(name) ?? []).slice(samples));
        this.#metrics?.policyStatusWrites.inc();
        const event = blockedEvent(previous, status);
        if (event) this.#events.policy(entry, event.type, event.reason, event.message);
        const halted = rolloutHalted(previous, status);
        if (halted) {
          this.#notifier.notify(receivers(entry), {
            kind: 'Halted',
            policy: name,
            message: halted,
            at: new Date(),
          });
        }
        if (rolloutFinished(previous, status)) {
          const message = 'no node of the pool waits for a reboot any more';
          this.#notifier.notify(receivers(entry), {
            kind: 'Finished',
            policy: name,
            message,
            at: new Date(),
          });
        }
      })
      .catch((err: unknown) => {
        // Deleted meanwhile: nothing to report on. Anything else: the next pass tries again.
        if (statusCode(err) !== 404) {
          this.#log('warn', 'writing a policy status failed', { policy: name, error: describeError(err) });
        }
      })
      .finally(() => this.#writing.delete(name));
  }
}

/** Where a policy's news goes: its current generation's receivers, or its last valid one's. */
function receivers(entry: PolicyEntry): ResolvedPolicy['notifications'] {
  return (entry.current.ok ? entry.current.policy : entry.lastValid)?.notifications ?? [];
}
