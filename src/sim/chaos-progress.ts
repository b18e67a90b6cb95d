/** Whether a chaos run is done: every planned node rebooted once, and the expected stalls seen as such. */
import type { V1Node } from '@kubernetes/client-node';
import { Annotations } from '../api/keys.ts';
import { Phase } from '../api/phases.ts';
import { pollUntil } from '../util/poll.ts';
import type { Env } from './chaos-env.ts';
import type { RunPlan } from './chaos-plan.ts';
import { type ChaosPools, waitsOnFailedZone } from './chaos-policies.ts';
import type { Fleet } from './fleet.ts';

const ZONE = 'topology.kubernetes.io/zone';

/** Where a run stands: done = every planned node rebooted once and Idle, the never-returning one Failed. */
export function progress(
  nodes: V1Node[],
  plan: RunPlan,
  fleet: Fleet,
  pools: ChaosPools | undefined,
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
  return { done, states: states.join(', ') };
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
): Promise<{ finished: boolean; last: string }> {
  let last = '';
  let overdue: ReturnType<typeof setTimeout> | undefined;
  const finished = await Promise.race([
    faults.then(() =>
      pollUntil(
        'the rollout to finish',
        async () => {
          const p = progress((await env.core.listNode()).items, plan, fleet, pools);
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
