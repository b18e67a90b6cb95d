/**
 * The pools of a pass: which nodes each budget covers, with the settings decide() applies to them and
 * why, if at all, it admits nothing now. Pure: policies, the cluster-wide pause, nodes, ledger and time
 * in; pools out.
 * - UpdatePolicies make the pools (policy/pools.ts says which node goes where). A node no policy selects
 *   is left alone: without any policy, nuo touches no node.
 * - A pool whose policy is gone, invalid, or not read yet finishes its attempts in progress under the
 *   settings it last had (a policy's defaults when it never had any) and admits nothing: a missing or
 *   broken policy never frees a budget. So does the default pool '', which only an older operator's
 *   ledger entries (no pool named) can hold.
 */

import { AgentProtocol, type CoreosProtocol } from '../../api/keys.ts';
import { type CalendarClock, REAL_CLOCK } from '../../policy/calendar-clock.ts';
import { assignPools } from '../../policy/pools.ts';
import { type ResolvedPolicy, resolvePolicy } from '../../policy/resolve.ts';
import { speaking } from '../decide/agent-protocol.ts';
import type { DecideConfig } from '../decide/decide-input.ts';
import type { Ledger, RemediationRecord } from '../decide/ledger-view.ts';
import type { NodeView } from '../decide/node-view.ts';
import { AS_WRITTEN, type Observed } from '../decide/observed-clock.ts';
import { policyReading, RATE_WINDOW_MS, remediationRate } from '../decide/policy-need.ts';
import { activeBudgets } from '../decide/reason-budgets.ts';
import {
  nextRollout,
  type RolloutRecord,
  type RolloutSettings,
  rolloutHold,
  waveCap,
} from '../decide/waves.ts';
import { kuredDisrupted } from '../protocols/kured-lock.ts';
import { inPool, poolOf } from '../read/ledger.ts';
import type { PolicyEntry, PolicyState } from './policies.ts';
import {
  foreignOperatorHold,
  type HoldCode,
  healthGate,
  nodeBlocks,
  type OperatorSighting,
  type PolicyBlockers,
  type PoolHold,
  policyHold,
} from './pool-holds.ts';

/** The pool of a ledger entry that names none (written by an operator older than policies). */
export const DEFAULT_POOL = '';

/** An UpdatePolicy that sets nothing: the settings an attempt without a policy's finishes under. */
const EMPTY_POLICY = resolvePolicy({ metadata: { name: DEFAULT_POOL }, spec: {} });
if (!EMPTY_POLICY.ok)
  throw new Error(`the UpdatePolicy defaults do not resolve: ${EMPTY_POLICY.errors[0]?.message}`);
export const POLICY_DEFAULTS: ResolvedPolicy = EMPTY_POLICY.policy;

export interface Pool {
  /** The pool's name: its UpdatePolicy's, or DEFAULT_POOL. */
  name: string;
  /** decide()'s settings; `config.hold` is `hold`. */
  config: DecideConfig;
  hold?: PoolHold;
  nodes: NodeView[];
  /** The policy that makes this pool now, if any. */
  policy?: PolicyEntry;
  /** Its rollout in waves (spec.rollout): the record after this look, and whether the ledger must take it. */
  rollout?: PoolRollout;
  /** The ledger's remediation records of the pool out of the rate limit's hour: forgotten by the pass. */
  expiredRemediations?: RemediationRecord[];
}

export interface PoolRollout {
  settings?: RolloutSettings;
  /** Absent: no rollout in progress (or none kept: the policy has no spec.rollout). */
  record?: RolloutRecord;
  /** The record differs from the ledger's: the pass writes it. */
  changed: boolean;
}

export interface PoolPlan {
  pools: Pool[];
  /** Nodes two or more policies select → those policies (each of them reports it). */
  conflicts: Map<string, string[]>;
  /** Nodes no policy selects (only while policies exist). */
  unmatched: string[];
}

/** decide()'s settings from a policy's, with the operator's cluster-wide pause. */
export function policyConfig(p: ResolvedPolicy, paused: boolean): DecideConfig {
  return {
    maxUnavailable: p.maxUnavailable,
    minGrantSpacingMs: p.reboot.minGrantSpacingMs,
    drainTimeoutMs: p.drain.timeoutMs,
    rebootTimeoutMs: p.reboot.rebootTimeoutMs,
    returnTimeoutMs: p.reboot.returnTimeoutMs,
    soakMs: p.reboot.soakMs,
    beforeRebootAnnotations: p.reboot.beforeRebootAnnotations,
    afterRebootAnnotations: p.reboot.afterRebootAnnotations,
    retryBackoffMs: p.reboot.retryBackoffMs,
    retryBackoffMaxMs: p.reboot.retryBackoffMaxMs,
    maxIneffectiveReboots: p.reboot.maxIneffectiveReboots,
    paused,
    pendingTaint: p.reboot.pendingTaint,
    ...(p.reboot.failedSlotTtlMs === undefined ? {} : { failedSlotTtlMs: p.reboot.failedSlotTtlMs }),
    ...(p.maxUnavailablePerZone || p.zoneOrder === 'OneAtATime'
      ? {
          zones: {
            label: p.zoneLabel,
            order: p.zoneOrder,
            ...(p.maxUnavailablePerZone ? { max: p.maxUnavailablePerZone } : {}),
          },
        }
      : {}),
  };
}

/**
 * The protocol a node's agent is read through: the one its slot recorded at its admission while it holds
 * one (an attempt ends in the protocol it began in, whatever its policy says meanwhile), else its pool's.
 */
export function protocolOf(ledger: Ledger, node: string, pool: AgentProtocol): AgentProtocol {
  const slot = ledger.slots[node];
  return slot ? (slot.protocol ?? AgentProtocol.nuo) : pool;
}

/** Nodes of a pool without a policy: only its attempts in progress, each in its slot's protocol. */
const spokenByTheirSlots = (nodes: NodeView[], ledger: Ledger) =>
  nodes.map((n) => speaking(n, protocolOf(ledger, n.name, AgentProtocol.nuo)));

/** A pool with its hold, if any, in its settings too (decide()'s first gate after the pauses). */
function pool(
  name: string,
  config: DecideConfig,
  nodes: NodeView[],
  hold?: PoolHold,
  policy?: PolicyEntry,
): Pool {
  return {
    name,
    config: hold ? { ...config, hold } : config,
    nodes,
    ...(hold ? { hold } : {}),
    ...(policy ? { policy } : {}),
  };
}

/** The pool of a valid or invalid policy: its settings (the last valid ones), and its hold. */
function policyPool(
  entry: PolicyEntry,
  paused: boolean,
  nodes: NodeView[],
  now: Date,
  blockers: PolicyBlockers | undefined,
  sighting: (protocol: CoreosProtocol) => OperatorSighting | undefined,
  ledger: Ledger,
  clock: CalendarClock,
  observed: Observed,
): Pool | undefined {
  const resolved = entry.current.ok ? entry.current.policy : entry.lastValid;
  if (!resolved) return undefined;
  // Read through the pool's protocol (a need is the protocol's reboot-needed), with what the policy asks.
  const spoken = nodes.map((n) =>
    withPolicyAsks(speaking(n, protocolOf(ledger, n.name, resolved.agentProtocol)), resolved, now, observed),
  );
  const rollout = poolRollout(entry, resolved, spoken, ledger, now);
  const standDown = foreignOperatorHold(resolved, sighting);
  const hold: PoolHold | undefined = standDown
    ? standDown
    : entry.current.ok
      ? policyHold(
          resolved,
          nodes,
          now,
          blockers,
          rollout.settings &&
            rolloutHold(rollout.record, rollout.settings, entry.name, now.getTime(), observed),
          clock,
        )
      : {
          code: 'InvalidSpec',
          reason: `waiting: UpdatePolicy ${entry.name} is invalid (${entry.current.errors[0]?.field}: ${entry.current.errors[0]?.message}); fix it to go on`,
        };
  const config = policyConfig(resolved, paused);
  const cap = rollout.settings && waveCap(rollout.record, rollout.settings);
  if (cap) config.slotCaps = [cap];
  if (resolved.budgets.length > 0) {
    const budgets = activeBudgets(resolved.budgets, nodes.length, now, clock);
    config.reasonBudgets = budgets.active;
    if (budgets.changesAt !== undefined) config.reasonBudgetsChangeAt = budgets.changesAt;
  }
  if (entry.current.ok && resolved.podBlockers.some((b) => b.scope === 'Node'))
    config.podBlocked = nodeBlocks(resolved, blockers?.pods);
  // Only a valid policy's checks are read (blocker-watch.ts): an invalid one's finished nodes are not held.
  const checks = entry.current.ok ? healthGate(resolved, blockers?.health) : undefined;
  if (checks) config.healthChecks = checks;
  // kured's holders use the pool's slots whether or not the policy is valid now: they are disrupted.
  const kured = blockers?.kured;
  if (resolved.kured && kured && !('error' in kured)) {
    config.disruptedElsewhere = kuredDisrupted(
      kured,
      nodes.map((n) => n.name),
    );
  }
  let expired: RemediationRecord[] = [];
  if (resolved.remediation) {
    const { expired: out, ...rate } = remediationRate(
      nodes,
      ledger.remediations?.[entry.name] ?? [],
      resolved.remediation.maxPerHour,
      now.getTime(),
      RATE_WINDOW_MS / clock.speed,
      observed,
    );
    config.remediationRate = rate;
    expired = out;
  }
  return {
    ...pool(entry.name, config, spoken, hold, entry),
    ...(rollout.settings || rollout.changed ? { rollout } : {}),
    ...(expired.length > 0 ? { expiredRemediations: expired } : {}),
  };
}

/** The pool's rollout after this look; a policy without spec.rollout keeps no record. */
function poolRollout(
  entry: PolicyEntry,
  p: ResolvedPolicy,
  nodes: readonly NodeView[],
  ledger: Ledger,
  now: Date,
): PoolRollout {
  const mine = inPool(ledger, entry.name);
  const record =
    p.rollout &&
    nextRollout({
      previous: mine.rollout,
      settings: p.rollout,
      nodes,
      slots: mine.slots,
      now,
      ...(entry.resumed ? { resumedAt: entry.resumed.at } : {}),
    });
  return {
    ...(p.rollout ? { settings: p.rollout } : {}),
    ...(record ? { record } : {}),
    changed: JSON.stringify(record) !== JSON.stringify(mine.rollout),
  };
}

/** The node with what its policy's remediation and maxUptime ask of it this pass, if anything. */
function withPolicyAsks(n: NodeView, p: ResolvedPolicy, now: Date, observed: Observed): NodeView {
  if (!p.remediation && p.reboot.maxUptimeMs === undefined) return n;
  const asks = policyReading(
    n,
    {
      ...(p.remediation ? { remediation: p.remediation } : {}),
      ...(p.reboot.maxUptimeMs === undefined ? {} : { maxUptimeMs: p.reboot.maxUptimeMs }),
    },
    now.getTime(),
    observed,
  );
  return Object.keys(asks).length > 0 ? { ...n, policyAsks: asks } : n;
}

export function planPools(input: {
  state: PolicyState;
  /** The operator's cluster-wide pause. */
  paused: boolean;
  nodes: readonly NodeView[];
  ledger: Ledger;
  now: Date;
  /** What each policy's blockers answered last. */
  blockers?: (policy: string) => PolicyBlockers | undefined;
  /** What nuo saw of CLUO's and FLUO's own update-operator; absent: not looked yet. */
  sighting?: (protocol: CoreosProtocol) => OperatorSighting | undefined;
  /** The clock windows and scheduled budgets are read on; absent: the real one. */
  clock?: CalendarClock;
  /**
   * When the deciding process first saw the times a wait counts from (a wave's start, a remediation, a
   * condition's transition); absent: as written (a reader that observes nothing over time).
   */
  observed?: Observed;
}): PoolPlan {
  const { state, ledger, now, paused } = input;
  const holding = (name: string) => poolOf(ledger, name);
  const byPool = new Map<string, NodeView[]>();
  const add = (pool: string, n: NodeView) => byPool.set(pool, [...(byPool.get(pool) ?? []), n]);
  const orphan = (name: string, code: HoldCode, why: string): Pool =>
    pool(name, policyConfig(POLICY_DEFAULTS, paused), spokenByTheirSlots(byPool.get(name) ?? [], ledger), {
      code,
      reason: `waiting: ${why}`,
    });

  if (!state.known) {
    for (const n of input.nodes) {
      const pool = holding(n.name);
      if (pool !== undefined) add(pool, n);
    }
    return {
      pools: [...byPool.keys()].map((name) =>
        orphan(name, 'PoliciesNotRead', 'the UpdatePolicies are not read yet'),
      ),
      conflicts: new Map(),
      unmatched: [],
    };
  }

  const selectors = state.policies.flatMap((e) => {
    const p = e.current.ok ? e.current.policy : e.lastValid;
    return p ? [{ name: e.name, selects: p.selects }] : [];
  });
  const assignment = assignPools(input.nodes, selectors, holding);
  const byName = new Map(input.nodes.map((n) => [n.name, n]));
  for (const [node, pool] of assignment.pools) add(pool, byName.get(node) as NodeView);
  const pools: Pool[] = [];
  for (const entry of state.policies) {
    const made = policyPool(
      entry,
      paused,
      byPool.get(entry.name) ?? [],
      now,
      input.blockers?.(entry.name),
      input.sighting ?? (() => undefined),
      ledger,
      input.clock ?? REAL_CLOCK,
      input.observed ?? AS_WRITTEN,
    );
    if (made) pools.push(made);
    byPool.delete(entry.name);
  }
  for (const name of byPool.keys()) {
    pools.push(
      name === DEFAULT_POOL
        ? orphan(
            name,
            'Superseded',
            'no UpdatePolicy holds this attempt (an older operator began it): it finishes, nothing new starts',
          )
        : orphan(
            name,
            'PolicyGone',
            `UpdatePolicy ${name} is gone: its attempts in progress finish, nothing new starts`,
          ),
    );
  }
  return { pools, conflicts: assignment.conflicts, unmatched: assignment.unmatched };
}
