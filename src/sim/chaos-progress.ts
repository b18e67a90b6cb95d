/** Whether a chaos run is done: every planned node rebooted once, and the expected stalls seen as such. */
import type { V1Node } from '@kubernetes/client-node';
import { Annotations, planLabel } from '../api/keys.ts';
import { Phase } from '../api/phases.ts';
import { pollUntil } from '../util/poll.ts';
import type { Env } from './chaos-env.ts';
import type { RunPlan } from './chaos-plan.ts';
import { type ChaosPools, waitsOnFailedZone } from './chaos-policies.ts';
import { UPGRADE_NAME, UPGRADE_REF } from './chaos-upgrade.ts';
import type { Fleet } from './fleet.ts';

const ZONE = 'topology.kubernetes.io/zone';

/** The run's upgrade Plan as progress reads it: the hash it applies (undefined while not resolved). */
export interface UpgradeState {
  hash: string | undefined;
  concurrency: number;
  /** The nodes the Plan selects; every node when absent. */
  nodes?: readonly string[];
}

/**
 * Whether `node` is expected to wait for good, because the node that never returns holds what it waits
 * for: its zone's only place in its pool (a zone cap of 1), or every place of the upgrade Plan (its
 * concurrency, when the never-returning node failed in the Plan's attempt: a Plan whose attempt failed
 * stops spreading, and a node needing a reboot waits for a Plan that reboots).
 */
function expectedStall(
  node: string,
  byName: ReadonlyMap<string, V1Node>,
  plan: RunPlan,
  pools: ChaosPools | undefined,
  upgrade: UpgradeState | undefined,
): boolean {
  if (!plan.neverReturns || node === plan.neverReturns) return false;
  const reason = byName.get(node)?.metadata?.annotations?.[Annotations.stateReason] ?? '';
  const zoneOf = (name: string) => byName.get(name)?.metadata?.labels?.[ZONE];
  if (pools && waitsOnFailedZone(node, plan.neverReturns, pools, zoneOf, reason)) return true;
  const failed = byName.get(plan.neverReturns)?.metadata?.annotations ?? {};
  return (
    upgrade?.concurrency === 1 &&
    failed[Annotations.plan] === UPGRADE_REF &&
    failed[Annotations.state] === Phase.failed &&
    reason.startsWith(`waiting: Plan ${UPGRADE_REF} runs on`)
  );
}

/**
 * A gates run's reboots (chaos-gates-plan.ts expectedReboots): each node's count, its update's and the
 * policy's own; the remediation's node may instead wait for the rate limit, one reboot short (an
 * aborted remediation used the hour's one).
 */
export interface GatesState {
  expected: ReadonlyMap<string, number>;
  remediation: string;
}

/**
 * Where a run stands (`rebootsOf`: the checker's count): done = every planned node rebooted once (in a
 * gates run, as often as expected) and Idle, the never-returning one Failed and the nodes it stalls
 * waiting, and, in a run with an upgrade Plan, every other node Idle with the Plan applied at its hash.
 */
export function progress(
  nodes: V1Node[],
  plan: RunPlan,
  rebootsOf: (node: string) => number,
  pools: ChaosPools | undefined,
  upgrade?: UpgradeState,
  gates?: GatesState,
): { done: boolean; states: string } {
  const byName = new Map(nodes.map((n) => [n.metadata?.name ?? '', n]));
  let done = true;
  const states: string[] = [];
  const wanted = gates?.expected ?? new Map(plan.updates.map((u) => [u.node, 1]));
  for (const [node, want] of wanted) {
    const a = byName.get(node)?.metadata?.annotations ?? {};
    const state = a[Annotations.state];
    const reboots = rebootsOf(node);
    const rateLimited =
      node === gates?.remediation &&
      reboots === want - 1 &&
      /remediation rate limit/.test(a[Annotations.stateReason] ?? '');
    const ok =
      node === plan.neverReturns
        ? state === Phase.failed
        : (reboots === 0 && expectedStall(node, byName, plan, pools, upgrade)) ||
          rateLimited ||
          // A node deleted after its reboot and registered again has no phase: nothing left to do.
          ((state === Phase.idle || (state === undefined && reboots === want)) &&
            a[Annotations.rebootNeeded] === undefined &&
            a[Annotations.rebootRequested] === undefined &&
            a[Annotations.rebootInProgress] === undefined &&
            reboots === want);
    if (!ok) done = false;
    states.push(`${node}=${state ?? '-'}(${reboots} reboot(s); ${a[Annotations.stateReason] ?? ''})`);
  }
  if (upgrade) {
    const upgrading = upgrade.hash
      ? upgradeProgress(byName, plan, pools, upgrade)
      : { done: false, states: 'upgrade Plan not resolved yet' };
    if (!upgrading.done) done = false;
    states.push(upgrading.states);
  }
  return { done, states: states.join(', ') };
}

/** Every node applied the upgrade at its hash and is Idle, but the never-returning one and those it stalls. */
function upgradeProgress(
  byName: ReadonlyMap<string, V1Node>,
  plan: RunPlan,
  pools: ChaosPools | undefined,
  upgrade: UpgradeState,
): { done: boolean; states: string } {
  const left: string[] = [];
  for (const [name, n] of byName) {
    if (upgrade.nodes && !upgrade.nodes.includes(name)) continue;
    if (name === plan.neverReturns || expectedStall(name, byName, plan, pools, upgrade)) continue;
    const a = n.metadata?.annotations ?? {};
    const idle = (a[Annotations.state] ?? Phase.idle) === Phase.idle;
    if (!idle || n.metadata?.labels?.[planLabel(UPGRADE_NAME)] !== upgrade.hash)
      left.push(`${name} (${a[Annotations.stateReason] ?? ''})`);
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
  upgrade?: { concurrency: number; hash: () => Promise<string | undefined>; nodes?: readonly string[] },
  gates?: GatesState,
  /** What else is left (undefined: nothing), read with the nodes. */
  left?: (nodes: readonly V1Node[]) => Promise<string | undefined>,
): Promise<{ finished: boolean; last: string }> {
  let last = '';
  let overdue: ReturnType<typeof setTimeout> | undefined;
  const finished = await Promise.race([
    faults.then(() =>
      pollUntil(
        'the rollout to finish',
        async () => {
          const state = upgrade && {
            hash: await upgrade.hash(),
            concurrency: upgrade.concurrency,
            ...(upgrade.nodes ? { nodes: upgrade.nodes } : {}),
          };
          const nodes = (await env.core.listNode()).items;
          const p = progress(nodes, plan, (n) => fleet.checker.rebootsOf(n), pools, state, gates);
          const more = await left?.(nodes);
          last = more ? `${p.states}, ${more}` : p.states;
          return p.done && !more ? true : undefined;
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
