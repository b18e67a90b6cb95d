/**
 * Why a node is where it is, in sentences for `nuo policy explain`: which pool holds it (or why none
 * does), its phase and need, and every condition that keeps it from starting now — each gate, the pool's
 * hold, its budget and its zone — not only the first one its reason shows. Pure: the same plan and
 * decision the operator makes.
 */
import { Phase } from '../../api/phases.ts';
import type { Decision } from '../decide/decide.ts';
import { type GateInput, NODE_GATES, PASS_GATES } from '../decide/gates.ts';
import type { Ledger } from '../decide/ledger-view.ts';
import { needsWork, outsideAttempt } from '../decide/need.ts';
import type { NodeView } from '../decide/node-view.ts';
import { inPool } from '../read/ledger.ts';
import { DEFAULT_POOL, type PoolPlan } from './pool-plan.ts';

export interface ExplainInput {
  node: NodeView;
  plan: PoolPlan;
  /** The decision of the node's pool, as a pass would make it now. */
  decision?: Decision;
  ledger: Ledger;
  now: Date;
}

function poolLine(node: NodeView, plan: PoolPlan): { line: string; pool?: PoolPlan['pools'][number] } {
  const pool = plan.pools.find((p) => p.nodes.some((n) => n.name === node.name));
  const conflict = plan.conflicts.get(node.name);
  if (conflict) {
    return {
      line: `pool: none — UpdatePolicies ${conflict.join(' and ')} both select it; it is left alone until one does`,
    };
  }
  if (!pool) return { line: 'pool: none — no UpdatePolicy selects it; it is left alone' };
  const name =
    pool.name === DEFAULT_POOL
      ? 'none — an attempt an older operator began, finishing under the policy defaults'
      : `UpdatePolicy ${pool.name}`;
  return { line: `pool: ${name}`, pool };
}

export function explainNode(input: ExplainInput): string[] {
  const { node, plan, decision, ledger, now } = input;
  const { line, pool } = poolLine(node, plan);
  const lines = [line];
  const need = needsWork(node, now.getTime());
  const since = node.stateSince ? ` since ${node.stateSince.toISOString()}` : '';
  lines.push(`phase: ${node.state ?? Phase.idle}${since}; ${need ?? 'needs no reboot'}`);
  if (!pool) return lines;
  const slot = ledger.slots[node.name];
  if (slot) {
    lines.push(`in an attempt: it holds a slot since ${slot.since}`);
    const checks = pool.config.healthChecks;
    const failing =
      checks &&
      (checks.at === undefined
        ? 'not evaluated yet'
        : checks.failing && `health check ${checks.failing.name} fails: ${checks.failing.reading}`);
    if (failing) lines.push(`health checks: ${failing}; once back, it keeps its slot until they pass`);
    return lines;
  }
  if (!need || !outsideAttempt(node)) return lines;
  const waits = gateWaits(node, pool.config, inPool(ledger, pool.name), now);
  const action = decision?.actions.find((a) => a.node === node.name);
  if (decision) {
    const { slots, used } = decision.budget;
    lines.push(`budget: ${used} of ${slots} slot(s) in use in this pool`);
  }
  if (action?.type === 'admit') lines.push('nothing holds it: the next pass admits it');
  else if (waits.length === 0 && action && 'reason' in action) lines.push(`waits: ${action.reason}`);
  for (const w of waits) lines.push(`waits: ${w}`);
  return lines;
}

/** Every gate's wait for the node now (the pool's hold among them), in the order they are checked. */
function gateWaits(node: NodeView, config: GateInput['config'], ledger: Ledger, now: Date): string[] {
  const lastGrant = ledger.lastGrant ? Date.parse(ledger.lastGrant) : Number.NEGATIVE_INFINITY;
  const input: GateInput = {
    node,
    config,
    now: now.getTime(),
    pass: { lastGrant, admitted: 0, remediated: 0 },
  };
  return [...NODE_GATES, ...PASS_GATES].flatMap((g) => {
    const wait = g.wait(input);
    if (!wait) return [];
    const detail = wait.detail === undefined ? '' : `: ${wait.detail}`;
    const until = wait.until === undefined ? '' : ` (until ${new Date(wait.until).toISOString()})`;
    return [`${wait.reason}${detail}${until}`];
  });
}
