/** Kubernetes Events on Nodes, so `kubectl describe node` tells what nuo did and why. Best effort. */
import type { CoreV1Api } from '@kubernetes/client-node';
import type { KubeLog } from '../kube/backoff.ts';
import { describeError } from '../kube/errors.ts';

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
    this.#record(node, 'Normal', reason, message);
  }

  warning(node: string, reason: string, message: string): void {
    this.#record(node, 'Warning', reason, message);
  }

  #record(node: string, type: string, reason: string, message: string): void {
    const now = new Date();
    this.#core
      .createNamespacedEvent({
        namespace: 'default',
        body: {
          metadata: { generateName: `${node}.nuo.` },
          involvedObject: { apiVersion: 'v1', kind: 'Node', name: node, uid: node },
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
      .catch((err) => this.#log('debug', 'event not recorded', { node, reason, error: describeError(err) }));
  }
}
