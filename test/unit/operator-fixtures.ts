/**
 * What the operator's unit tests share: decide()'s configuration as the defaults of a test cluster, nodes
 * as the API server returns them, and decide() run on them at a fixed time.
 */
import type { V1Node, V1Taint } from '@kubernetes/client-node';
import { Annotations } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import type { Action } from '../../src/operator/decide/action.ts';
import { parseMaxUnavailable } from '../../src/operator/decide/budget.ts';
import { decide } from '../../src/operator/decide/decide.ts';
import type { DecideConfig, Snapshot } from '../../src/operator/decide/decide-input.ts';
import type { Ledger } from '../../src/operator/decide/ledger-view.ts';
import type { NodeView } from '../../src/operator/decide/node-view.ts';
import { viewNode } from '../../src/operator/decide/node-view.ts';
import { stepHolder } from '../../src/operator/decide/phase-steps.ts';

/** One slot, 10-minute timeouts, a 30 s soak, no hooks, a 1-minute retry backoff. */
export const decideConfig: DecideConfig = {
  maxUnavailable: parseMaxUnavailable('1'),
  minGrantSpacingMs: 0,
  drainTimeoutMs: 600_000,
  rebootTimeoutMs: 600_000,
  returnTimeoutMs: 600_000,
  soakMs: 30_000,
  beforeRebootAnnotations: [],
  afterRebootAnnotations: [],
  retryBackoffMs: 60_000,
  retryBackoffMaxMs: 3_600_000,
  maxIneffectiveReboots: 3,
  paused: false,
  pendingTaint: false,
};

export const NOW = new Date('2026-11-21T12:00:00Z');
export const ago = (s: number) => new Date(NOW.getTime() - s * 1000).toISOString();

export interface NodeOpts {
  annotations?: Record<string, string>;
  labels?: Record<string, string>;
  ready?: boolean;
  readySince?: string;
  unschedulable?: boolean;
  bootId?: string;
  taints?: V1Taint[];
}
export function node(name: string, o: NodeOpts = {}): V1Node {
  return {
    metadata: { name, resourceVersion: '1', annotations: o.annotations ?? {}, labels: o.labels ?? {} },
    spec: { unschedulable: o.unschedulable, ...(o.taints ? { taints: o.taints } : {}) },
    status: {
      nodeInfo: { bootID: o.bootId ?? 'boot-1' } as never,
      conditions: [
        {
          type: 'Ready',
          status: o.ready === false ? 'False' : 'True',
          lastTransitionTime: (o.readySince ?? ago(3600)) as never,
        },
      ],
    },
  };
}
export const state = (phase: string, since: number, extra: Record<string, string> = {}) => ({
  [Annotations.state]: phase,
  [Annotations.stateSince]: ago(since),
  ...extra,
});
export const needs = { [Annotations.rebootNeeded]: 'true' };

export function run(
  nodes: V1Node[],
  opts: {
    ledger?: Ledger;
    cfg?: Partial<DecideConfig>;
    draining?: string[];
    admitting?: string[];
    healthy?: string[];
    ownGrant?: Snapshot['ownGrant'];
  } = {},
) {
  const snapshot: Snapshot = {
    ...(opts.ownGrant ? { ownGrant: opts.ownGrant } : {}),
    nodes: nodes.map(viewNode),
    ledger: opts.ledger ?? { slots: {} },
    draining: new Set(opts.draining ?? []),
    admitting: new Set(opts.admitting ?? []),
    health: new Map((opts.healthy ?? []).map((n) => [n, { daemonSetPodsReady: true, detail: 'all ready' }])),
  };
  return decide(snapshot, { ...decideConfig, ...opts.cfg }, NOW);
}
export const ofType = (actions: Action[], type: Action['type']) =>
  actions.filter((a) => a.type === type).map((a) => a.node);

/**
 * What a slot holder's step does at NOW with its DaemonSet pods ready, in a line: action types, a
 * transition with its phase (and "(grant kept)" when an AfterReboot keeps the grant).
 */
export function holderStep(n: NodeView, config: DecideConfig): string {
  const actions = stepHolder(n, {
    config,
    now: NOW,
    draining: new Set(),
    health: new Map([[n.name, { daemonSetPodsReady: true, detail: 'ready' }]]),
    wake: () => {},
    slotOf: () => undefined,
  });
  return actions
    .map((a: Action) =>
      a.type === 'transition'
        ? `transition ${a.to}${a.clearGrant ? '' : a.to === Phase.afterReboot ? ' (grant kept)' : ''}`
        : a.type,
    )
    .join(',');
}
