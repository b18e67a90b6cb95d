/**
 * The Secrets Plans hash, watched so that a change re-resolves the Plans that use it at once, as SUC
 * reacts to a Secret's event. Each Secret is watched alone (a field selector on its name) and only once
 * the operator could read it: a Secret is readable only in namespaces where the ClusterRole
 * nuo-plan-secrets is bound (decision 41), and no other Secret of the namespace is listed or cached. Only
 * a Secret's metadata is kept; its data is read again by the resolution.
 */
import { CoreV1Api, type V1Secret } from '@kubernetes/client-node';
import type { KubeLog } from '../../kube/backoff.ts';
import { ResilientInformer } from '../../kube/informer.ts';
import type { PooledKubeConfig } from '../../kube/pooled-kubeconfig.ts';

/** "namespace/name" of a Secret. */
export const secretKey = (namespace: string, name: string) => `${namespace}/${name}`;

export class PlanSecretWatch {
  readonly #kubeconfig: PooledKubeConfig;
  readonly #core: CoreV1Api;
  readonly #log: KubeLog;
  readonly #watches = new Map<string, ResilientInformer<V1Secret>>();
  readonly #changed: ((key: string) => void)[] = [];
  /** The resourceVersion of each watched Secret as last read or seen. */
  readonly #read = new Map<string, string | undefined>();

  constructor(o: { kubeconfig: PooledKubeConfig; log: KubeLog }) {
    this.#kubeconfig = o.kubeconfig;
    this.#core = o.kubeconfig.makeApiClient(CoreV1Api);
    this.#log = o.log;
  }

  /** Calls `fn` with the Secret's key when one watched is created, changed or deleted. */
  onChange(fn: (key: string) => void): void {
    this.#changed.push(fn);
  }

  /**
   * Watches exactly these Secrets ("namespace/name" → the resourceVersion the resolution read, undefined
   * when it found none): new ones start, the others stop. An event for a version other than the one
   * read is a change, so one made between the read and the watch's first list is not missed.
   */
  async watch(read: ReadonlyMap<string, string | undefined>): Promise<void> {
    for (const [key, version] of read) {
      this.#read.set(key, version);
      if (!this.#watches.has(key)) this.#start(key);
    }
    const gone = [...this.#watches.keys()].filter((k) => !read.has(k));
    await Promise.all(gone.map((k) => this.#stop(k)));
  }

  async stop(): Promise<void> {
    await Promise.all([...this.#watches.keys()].map((k) => this.#stop(k)));
  }

  #start(key: string): void {
    const [namespace = '', name = ''] = key.split('/');
    const fieldSelector = `metadata.name=${name}`;
    const informer = new ResilientInformer<V1Secret>({
      kubeconfig: this.#kubeconfig,
      path: `/api/v1/namespaces/${namespace}/secrets`,
      list: (opts) => this.#core.listNamespacedSecret({ namespace, ...opts }),
      fieldSelector,
      objectType: 'V1Secret',
      // The data stays with the API server: the resolution reads it when it hashes.
      transform: (s) => ({ metadata: s.metadata ?? {} }),
      name: `secret ${key}`,
      log: this.#log,
    });
    informer.onEvent((type, s) => {
      const version = type === 'delete' ? undefined : s.metadata?.resourceVersion;
      if (this.#read.get(key) === version) return;
      this.#read.set(key, version);
      for (const fn of this.#changed) fn(key);
    });
    this.#watches.set(key, informer);
    informer.start().catch(() => {});
  }

  async #stop(key: string): Promise<void> {
    const informer = this.#watches.get(key);
    this.#watches.delete(key);
    this.#read.delete(key);
    await informer?.stop();
  }
}
