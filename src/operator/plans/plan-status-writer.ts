/**
 * Writes each Plan's status after a pass, only when it changed (plan-status.ts builds it), one write per
 * Plan at a time, through the status subresource; and tells in Events on the Plan what changed, as SUC
 * does (plan-events.ts).
 */
import { CustomObjectsApi } from '@kubernetes/client-node';
import { PLAN } from '../../api/crd.ts';
import type { PlanStatus } from '../../api/plan.ts';
import { apiVersionOf } from '../../api/plan-groups.ts';
import type { KubeLog } from '../../kube/backoff.ts';
import { describeError, statusCode } from '../../kube/errors.ts';
import { mergePatch } from '../../kube/patch.ts';
import type { PooledKubeConfig } from '../../kube/pooled-kubeconfig.ts';
import { statusChanged } from '../policies/policy-status.ts';
import type { EventRecorder } from '../write/events.ts';
import { planEvents } from './plan-events.ts';
import type { PlanEntry } from './plan-resolve.ts';
import { type PlanStatusInput, planStatus } from './plan-status.ts';

export class PlanStatusWriter {
  readonly #api: CustomObjectsApi;
  readonly #events: EventRecorder;
  readonly #log: KubeLog;
  /** The status last written for each Plan (by uid and generation). */
  readonly #written = new Map<string, { key: string; status: PlanStatus }>();
  readonly #writing = new Set<string>();

  constructor(o: { kubeconfig: PooledKubeConfig; events: EventRecorder; log: KubeLog }) {
    this.#api = o.kubeconfig.makeApiClient(CustomObjectsApi);
    this.#events = o.events;
    this.#log = o.log;
  }

  /** Each Plan's status after this pass, written in the background where it changed. */
  update(inputs: readonly PlanStatusInput[]): void {
    for (const input of inputs) {
      const { entry } = input;
      if (this.#writing.has(entry.ref)) continue;
      const key = `${entry.uid}/${entry.generation}`;
      const written = this.#written.get(entry.ref);
      const previous = written?.key === key ? written.status : entry.plan.status;
      const known = { ...entry, plan: { ...entry.plan, ...(previous ? { status: previous } : {}) } };
      const status = planStatus({ ...input, entry: known });
      if (!statusChanged(previous, status)) continue;
      this.#write(entry, key, status, previous);
    }
  }

  /** A new leadership compares with what it reads, not with what an earlier one wrote. */
  clear(): void {
    this.#written.clear();
  }

  #write(entry: PlanEntry, key: string, status: PlanStatus, previous: PlanStatus | undefined): void {
    this.#writing.add(entry.ref);
    const { namespace, name } = entry;
    this.#api
      .patchNamespacedCustomObjectStatus(
        { ...entry.group, plural: PLAN.plural, namespace, name, body: { status } },
        mergePatch,
      )
      .then(() => {
        this.#written.set(entry.ref, { key, status });
        this.#tell(entry, previous, status);
      })
      .catch((err: unknown) => {
        if (statusCode(err) !== 404)
          this.#log('warn', 'writing a Plan status failed', { plan: entry.ref, error: describeError(err) });
      })
      .finally(() => this.#writing.delete(entry.ref));
  }

  #tell(entry: PlanEntry, previous: PlanStatus | undefined, status: PlanStatus): void {
    const plan = {
      namespace: entry.namespace,
      name: entry.name,
      uid: entry.uid,
      apiVersion: apiVersionOf(entry.group),
    };
    const source = entry.plan.spec.version === undefined ? 'Spec.Channel' : 'Spec.Version';
    for (const e of planEvents(previous, status, source))
      this.#events.plan(plan, e.type, e.reason, e.message);
  }
}
