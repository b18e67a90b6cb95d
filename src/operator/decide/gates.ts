/**
 * Admission gates: each says why a node that needs a reboot may not start one now, and when that may
 * change (decide() looks again then). Gates are values in ordered lists, so a new condition (a
 * maintenance window, a blocker) is one more gate, not one more branch of the admission loop. The first
 * gate that holds a node back names the reason it shows.
 */
import { Annotations, Labels } from '../../api/keys.ts';
import type { DecideConfig } from './decide-input.ts';
import { ms, nextPlan, remediationOnly } from './need.ts';
import type { NodeView } from './node-view.ts';
import { rateWait } from './policy-need.ts';
import type { Wait } from './wait.ts';

/** What the admission loop has done so far this pass. */
export interface PassState {
  /** When the last node was admitted before this pass (ms; -Infinity for never). */
  lastGrant: number;
  /** Nodes admitted so far in this pass. */
  admitted: number;
  /** Of those, admitted for a remediation (the pool's rate limit counts them). */
  remediated: number;
}

export interface GateInput {
  node: NodeView;
  config: DecideConfig;
  now: number;
  pass: PassState;
}

export interface Gate {
  readonly name: string;
  /** Why `node` may not start now, or undefined when this gate lets it. */
  wait(input: GateInput): Wait | undefined;
}

/** When a node with `failures` consecutive failed attempts may try again (0: at once). */
function retryAt(n: NodeView, c: Pick<DecideConfig, 'retryBackoffMs' | 'retryBackoffMaxMs'>): number {
  if (n.failures === 0 || !n.stateSince) return 0;
  const wait = Math.min(c.retryBackoffMs * 2 ** Math.min(n.failures - 1, 30), c.retryBackoffMaxMs);
  return ms(n.stateSince) + wait;
}

const paused: Gate = { name: 'paused', wait: ({ node }) => (node.paused ? { reason: 'paused' } : undefined) };

const skipped: Gate = {
  name: 'skipped',
  wait: ({ node }) =>
    node.skipped
      ? {
          reason: `skipped: its drain failed ${node.drainFailures} time(s) in a row; remove the label ${Labels.skipped} to try again`,
        }
      : undefined,
};

const foreignGrant: Gate = {
  name: 'foreign-grant',
  wait: ({ node }) =>
    node.grantShown ? { reason: 'waiting: a reboot grant nuo did not give is being removed' } : undefined,
};

const clusterPaused: Gate = {
  name: 'cluster-paused',
  wait: ({ config }) => (config.paused ? { reason: 'waiting: nuo is paused cluster-wide' } : undefined),
};

/** The pool admits nothing now (its window is closed, a blocker holds, its policy is invalid, ...). */
const poolHold: Gate = { name: 'pool-hold', wait: ({ config }) => config.hold };

/** The Plan the node's attempt would apply starts nothing now (outside its window, invalid, ...). */
const planHold: Gate = { name: 'plan-hold', wait: ({ node, now }) => nextPlan(node, now)?.hold };

/** The Plan runs on as many nodes at once as its `concurrency` allows. */
const planConcurrency: Gate = {
  name: 'plan-concurrency',
  wait: ({ node, config, now }) => {
    const plan = nextPlan(node, now);
    return plan && config.plans?.wait(plan, node.name);
  },
};

/** An autoscaler is removing the node: its pods are leaving for good, a reboot would only slow that. */
const beingRemoved: Gate = {
  name: 'autoscaler-removal',
  wait: ({ node }) =>
    node.removedBy ? { reason: `waiting: ${node.removedBy} is removing the node` } : undefined,
};

const notReady: Gate = {
  name: 'not-ready',
  wait: ({ node }) => (node.ready ? undefined : { reason: 'waiting: node is NotReady' }),
};

/** One of the node's pods asks not to be disrupted (`nuo.dev/do-not-disrupt`), or its pods are unread. */
const podBlocker: Gate = {
  name: 'pod-blocker',
  wait: ({ node, config }) => config.podBlocked?.get(node.name),
};
const podOptOut: Gate = { name: 'do-not-disrupt', wait: ({ node, config }) => config.nodeHold?.(node.name) };

const backoff: Gate = {
  name: 'backoff',
  wait: ({ node, config, now }) => {
    const until = retryAt(node, config);
    if (now >= until) return undefined;
    return {
      reason: `waiting: retry after ${new Date(until).toISOString()} (${node.failures} failure(s))`,
      until,
    };
  },
};

/**
 * A reboot that completed and left the need in place is a reboot loop in the making: each next attempt
 * waits out the retry backoff, doubling, and past maxIneffectiveReboots none is made until a person looks.
 */
const rebootLoop: Gate = {
  name: 'reboot-loop',
  wait: ({ node, config, now }) => {
    const k = node.ineffectiveReboots;
    if (k === 0) return undefined;
    if (k >= config.maxIneffectiveReboots)
      return {
        reason: `stopped: the need survived ${k} reboots in a row; remove ${Annotations.ineffectiveReboots} to try again`,
      };
    const until = retryAt({ ...node, failures: k }, config);
    if (now >= until) return undefined;
    return {
      reason: `waiting: the need survived ${k} reboot(s) in a row; next try after ${new Date(until).toISOString()}`,
      until,
    };
  },
};

/** A remediation waits while the pool has started its policy's maxPerHour of them within the hour. */
const remediationRate: Gate = {
  name: 'remediation-rate',
  wait: ({ node, config, now, pass }) =>
    config.remediationRate && remediationOnly(node, now)
      ? rateWait(config.remediationRate, pass.remediated)
      : undefined,
};

const spacing: Gate = {
  name: 'spacing',
  wait: ({ config, now, pass }) => {
    const spacingMs = config.minGrantSpacingMs;
    if (spacingMs <= 0) return undefined;
    if (pass.admitted === 0 && now - pass.lastGrant >= spacingMs) return undefined;
    return {
      reason: `waiting: minimum spacing between grants (${spacingMs / 1000}s)`,
      until: pass.lastGrant + spacingMs,
    };
  },
};

/**
 * The operator's own node, ordered last, waits while another node of its pool was admitted this pass:
 * it goes once nothing else can (its drain hands the leadership over, own-node.ts).
 */
const ownNodeLast: Gate = {
  name: 'own-node-last',
  wait: ({ node, config, pass }) =>
    node.name === config.ownNode && pass.admitted > 0
      ? {
          reason:
            "waiting: the operator's leader runs on this node; it goes after the other nodes of its pool",
        }
      : undefined,
};

/** Conditions of the node itself, checked before the budget: the reason a node shows comes first from these. */
export const NODE_GATES: readonly Gate[] = [
  paused,
  skipped,
  foreignGrant,
  clusterPaused,
  poolHold,
  planHold,
  beingRemoved,
  notReady,
  podBlocker,
  podOptOut,
  backoff,
  rebootLoop,
  remediationRate,
  planConcurrency,
];

/** Gates that count the admission itself once it is in the ledger: a redone admission is past them. */
const COUNT_THE_ADMISSION: ReadonlySet<string> = new Set([remediationRate.name, planConcurrency.name]);

/**
 * The gates an admission whose node write never happened must still pass to be redone: the node's own,
 * as when it was admitted (slots.ts withdrawUnstarted asks the pool's hold on its own).
 */
export const REDO_GATES: readonly Gate[] = NODE_GATES.filter(
  (g) => g !== poolHold && !COUNT_THE_ADMISSION.has(g.name),
);

/** Conditions of the pass, checked once a slot is free for the node. */
export const PASS_GATES: readonly Gate[] = [spacing, ownNodeLast];

/** The first gate's wait, in list order; undefined when every gate lets the node start. */
export function firstWait(gates: readonly Gate[], input: GateInput): Wait | undefined {
  for (const gate of gates) {
    const wait = gate.wait(input);
    if (wait) return wait;
  }
  return undefined;
}
