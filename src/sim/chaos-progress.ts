/** Whether a chaos run is done: every planned node rebooted once, and the expected stalls seen as such. */
import type { V1Node } from '@kubernetes/client-node';
import { Annotations, planLabel } from '../api/keys.ts';
import { Phase } from '../api/phases.ts';
import { pollUntil } from '../util/poll.ts';
import type { Env } from './chaos-env.ts';
import type { RunPlan } from './chaos-plan.ts';
import { type ChaosPools, waitsOnFailedZone } from './chaos-policies.ts';
import { UPGRADE_NAME } from './chaos-upgrade.ts';
import type { Fleet } from './fleet.ts';

const ZONE = 'topology.kubernetes.io/zone';

/**
 * Where a run stands: done = every planned node rebooted once and Idle, the never-returning one Failed,
 * and, in a run with an upgrade Plan (`upgrade.hash`: the hash it applies, undefined while not resolved),
 * every other node Idle with the Plan applied at that hash.
 */
export function progress(
  nodes: V1Node[],
  plan: RunPlan,
  fleet: Fleet,
  pools: ChaosPools | undefined,
  upgrade?: { hash: string | undefined },
): { done: boolean; states: string } {
  const byName = new Map(nodes.map((n) => [n.metadata?.name ?? '', n]));
  let done = true;
  const states: string[] = [];
  for (const { node } of plan.updates) {
    const a = byName.get(node)?.metadata?.annotations ?? {};
    const state = a[Annotations.state];
    const reboots = fleet.checker.rebootsOf(node);
    const zoneOf = (name: string) => byName.get(name)?.metadata?.labels?.[ZONE];
    const stalled =
      pools !== undefined &&
      reboots === 0 &&
      waitsOnFailedZone(node, plan.neverReturns, pools, zoneOf, a[Annotations.stateReason] ?? '');
    const ok =
      stalled || node === plan.neverReturns
        ? state === Phase.failed
        : // A node deleted after its reboot and registered again has no phase: nothing left to do.
          (state === Phase.idle || (state === undefined && reboots === 1)) &&
          a[Annotations.rebootNeeded] === undefined &&
          a[Annotations.rebootRequested] === undefined &&
          a[Annotations.rebootInProgress] === undefined &&
          reboots === 1;
    if (!ok) done = false;
    states.push(`${node}=${state ?? '-'}(${reboots} reboot(s); ${a[Annotations.stateReason] ?? ''})`);
  }
  if (upgrade) {
    const upgrading = upgrade.hash
      ? upgradeProgress(nodes, plan, pools, upgrade.hash)
      : { done: false, states: 'upgrade Plan not resolved yet' };
    if (!upgrading.done) done = false;
    states.push(upgrading.states);
  }
  return { done, states: states.join(', ') };
}

/** Every node applied the upgrade at `hash` and is Idle, but the never-returning one and those it stalls. */
function upgradeProgress(
  nodes: V1Node[],
  plan: RunPlan,
  pools: ChaosPools | undefined,
  hash: string,
): { done: boolean; states: string } {
  const zoneOf = (name: string) => nodes.find((n) => n.metadata?.name === name)?.metadata?.labels?.[ZONE];
  const left: string[] = [];
  for (const n of nodes) {
    const name = n.metadata?.name ?? '';
    const a = n.metadata?.annotations ?? {};
    const reason = a[Annotations.stateReason] ?? '';
    if (name === plan.neverReturns) continue;
    if (pools && waitsOnFailedZone(name, plan.neverReturns, pools, zoneOf, reason)) continue;
    const idle = (a[Annotations.state] ?? Phase.idle) === Phase.idle;
    if (!idle || n.metadata?.labels?.[planLabel(UPGRADE_NAME)] !== hash) left.push(`${name} (${reason})`);
  }
  return {
    done: left.length === 0,
    states: left.length === 0 ? 'upgrade applied' : `upgrade left on ${left.join(', ')}`,
  };
}

/**
 * Waits until the rollout is finished and every fault has struck (a late fault must not undo it
 * either), or the run's deadline passes; `last` is the node states last read.
 */
export async function awaitRollout(
  env: Env,
  plan: RunPlan,
  fleet: Fleet,
  faults: Promise<unknown>,
  deadline: number,
  pools: ChaosPools | undefined,
  upgradeHash?: () => Promise<string | undefined>,
): Promise<{ finished: boolean; last: string }> {
  let last = '';
  let overdue: ReturnType<typeof setTimeout> | undefined;
  const finished = await Promise.race([
    faults.then(() =>
      pollUntil(
        'the rollout to finish',
        async () => {
          const upgrade = upgradeHash ? { hash: await upgradeHash() } : undefined;
          const p = progress((await env.core.listNode()).items, plan, fleet, pools, upgrade);
          last = p.states;
          return p.done ? true : undefined;
        },
        { timeoutMs: Math.max(0, deadline - Date.now()), intervalMs: 250 },
      ),
    ),
    new Promise<false>((resolve) => {
      overdue = setTimeout(() => resolve(false), Math.max(0, deadline - Date.now()) + 1000);
    }),
  ]).catch(() => false as const);
  clearTimeout(overdue);
  return { finished: finished === true, last };
}
