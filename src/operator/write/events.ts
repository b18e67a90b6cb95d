/**
 * Kubernetes Events on Nodes and UpdatePolicies, so `kubectl describe` tells what nuo did and why. Best
 * effort: an Event that cannot be written is logged at debug and dropped, never retried or waited for.
 */
import type { CoreV1Api } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, PLAN, UPDATE_POLICY } from '../../api/crd.ts';
import type { KubeLog } from '../../kube/backoff.ts';
import { describeError } from '../../kube/errors.ts';

/** The object an Event is about; a cluster-scoped one's Events live in the default namespace. */
interface Involved {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  namespace?: string;
}

export class EventRecorder {
  readonly #core: CoreV1Api;
  readonly #instance: string;
  readonly #log: KubeLog;

  constructor(core: CoreV1Api, instance: string, log: KubeLog) {
    this.#core = core;
    this.#instance = instance;
    this.#log = log;
  }

  normal(node: string, reason: string, message: string): void {
    this.#record(nodeRef(node), 'Normal', reason, message);
  }

  warning(node: string, reason: string, message: string): void {
    this.#record(nodeRef(node), 'Warning', reason, message);
  }

  /** An Event on an UpdatePolicy (policy-events.ts says which). */
  policy(
    policy: { name: string; uid: string },
    type: 'Normal' | 'Warning',
    reason: string,
    message: string,
  ): void {
    const ref = { apiVersion: `${API_GROUP}/${API_VERSION}`, kind: UPDATE_POLICY.kind, ...policy };
    this.#record(ref, type, reason, message);
  }

  /** An Event on a Plan, in its namespace; the Plan of nuo's group unless its apiVersion says SUC's. */
  plan(
    plan: { namespace: string; name: string; uid: string; apiVersion?: string },
    type: 'Normal' | 'Warning',
    reason: string,
    message: string,
  ): void {
    this.#record(
      { apiVersion: `${API_GROUP}/${API_VERSION}`, kind: PLAN.kind, ...plan },
      type,
      reason,
      message,
    );
  }

  #record(ref: Involved, type: string, reason: string, message: string): void {
    const now = new Date();
    this.#core
      .createNamespacedEvent({
        namespace: ref.namespace ?? 'default',
        body: {
          metadata: { generateName: `${ref.name}.nuo.` },
          involvedObject: ref,
          type,
          reason,
          message: message.slice(0, 1024),
          source: { component: 'nuo-operator', host: this.#instance },
          firstTimestamp: now,
          lastTimestamp: now,
          count: 1,
          reportingComponent: 'nuo.dev/operator',
          reportingInstance: this.#instance,
        },
      })
      .catch((err) =>
        this.#log('debug', 'event not recorded', {
          [ref.kind.toLowerCase()]: ref.name,
          reason,
          error: describeError(err),
        }),
      );
  }
}

/** A Node as the kubelet names it in its own Events: its name stands for its uid. */
const nodeRef = (node: string): Involved => ({ apiVersion: 'v1', kind: 'Node', name: node, uid: node });
