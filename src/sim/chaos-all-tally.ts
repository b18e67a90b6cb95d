/**
 * What the gates of an `--all` run held, as the operator said it (each pool's `Blocked` condition, each
 * node's `nuo.dev/state-reason`): a count of the times each hold began, for the run's report, beside what
 * the checker saw and what the runner did. The counts say a gate was exercised; the checker's rules say
 * whether it held as it should.
 */
import { CoreV1Api, CustomObjectsApi, type KubeConfig, type V1Node } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, UPDATE_POLICY } from '../api/crd.ts';
import { Annotations } from '../api/keys.ts';
import { Phase } from '../api/phases.ts';
import type { UpdatePolicy } from '../api/update-policy.ts';
import { ResilientInformer } from '../kube/informer.ts';

/** The holds counted. */
export const HOLDS = [
  'healthCheck',
  'podBlockerPool',
  'podBlockerNode',
  'circuitOpen',
  'halted',
  'reasonBudget',
  'doNotDisrupt',
  'autoscaler',
  'planAttempts',
] as const;
export type Hold = (typeof HOLDS)[number];

/** The hold a pool's Blocked condition reason (a HoldCode) names, if one counted. */
export function poolHoldOf(reason: string | undefined): Hold | undefined {
  switch (reason) {
    case 'HealthCheck':
      return 'healthCheck';
    case 'PodBlocker':
      return 'podBlockerPool';
    case 'CircuitOpen':
      return 'circuitOpen';
    case 'Halted':
      return 'halted';
    default:
      return undefined;
  }
}

/** The hold a node's state and state-reason name, if one counted (a Plan's attempt counts as it starts). */
export function nodeHoldOf(state: string | undefined, reason: string | undefined): Hold | undefined {
  if (state === Phase.upgrading) return 'planAttempts';
  const r = reason ?? '';
  // A pod's own opt-out, not the read of the pods every waiting node has first ("being checked for").
  if (/ has nuo\.dev\/do-not-disrupt=/.test(r)) return 'doNotDisrupt';
  if (/waiting for a free slot \(budget /.test(r)) return 'reasonBudget';
  if (/^waiting: pod .* is running on it$/.test(r)) return 'podBlockerNode';
  if (/is removing the node/.test(r)) return 'autoscaler';
  return undefined;
}

/** Counts each hold as it begins for a key (a node, a pool): a new hold, not the same one seen again. */
export class HoldCounter {
  readonly counts = Object.fromEntries(HOLDS.map((h) => [h, 0])) as Record<Hold, number>;
  readonly #last = new Map<string, Hold | undefined>();

  seen(key: string, hold: Hold | undefined): void {
    if (hold !== undefined && this.#last.get(key) !== hold) this.counts[hold]++;
    this.#last.set(key, hold);
  }
}

/** Watches the nodes and the policies for the run, counting the holds they show. */
export class HoldTally {
  readonly #counter = new HoldCounter();
  readonly #nodes: ResilientInformer<V1Node>;
  readonly #policies: ResilientInformer<UpdatePolicy>;

  constructor(kubeconfig: KubeConfig) {
    const core = kubeconfig.makeApiClient(CoreV1Api);
    const custom = kubeconfig.makeApiClient(CustomObjectsApi);
    const ref = { group: API_GROUP, version: API_VERSION, plural: UPDATE_POLICY.plural };
    this.#nodes = new ResilientInformer<V1Node>({
      kubeconfig,
      path: '/api/v1/nodes',
      list: (o) => core.listNode(o),
      name: 'tally-nodes',
    });
    this.#nodes.onEvent((type, n) => {
      const a = n.metadata?.annotations ?? {};
      const hold =
        type === 'delete' ? undefined : nodeHoldOf(a[Annotations.state], a[Annotations.stateReason]);
      this.#counter.seen(`node/${n.metadata?.name}`, hold);
    });
    this.#policies = new ResilientInformer<UpdatePolicy>({
      kubeconfig,
      path: `/apis/${API_GROUP}/${API_VERSION}/${UPDATE_POLICY.plural}`,
      list: (o) => custom.listClusterCustomObject({ ...ref, ...o }),
      name: 'tally-policies',
    });
    this.#policies.onEvent((type, p) => {
      const blocked = p.status?.conditions?.find((c) => c.type === 'Blocked' && c.status === 'True');
      this.#counter.seen(
        `policy/${p.metadata.name}`,
        type === 'delete' ? undefined : poolHoldOf(blocked?.reason),
      );
    });
  }

  get counts(): Record<Hold, number> {
    return this.#counter.counts;
  }

  async start(): Promise<void> {
    await Promise.all([this.#nodes.start(), this.#policies.start()]);
  }

  async stop(): Promise<void> {
    await Promise.all([this.#nodes.stop(), this.#policies.stop()]);
  }
}
