/**
 * The upgrade Plan of a chaos run with Plans (`npm run chaos -- --plans`): one Plan over every node,
 * applied as the run's reboots are staged, so Plan attempts and reboots share the budget while the faults
 * strike. How it runs — its concurrency, whether it drains, only cordons or neither, whether nuo reboots
 * the node after its Job, how long its Jobs run — comes from the seed alone, drawn from a generator of
 * its own, so a seed's faults are the same with Plans or without. Pure.
 */
import type { PlanSpec } from '../api/plan.ts';
import type { PlanPrepare } from '../operator/decide/plan-work.ts';
import { SimJobAnnotations, SimJobLabels } from './job-keys.ts';
import type { PlanObject } from './plans.ts';
import { Random } from './random.ts';

export const UPGRADE_NAMESPACE = 'chaos-plans';
export const UPGRADE_NAME = 'os';
/** "namespace/name", as the checker and nuo.dev/plan name the Plan. */
export const UPGRADE_REF = `${UPGRADE_NAMESPACE}/${UPGRADE_NAME}`;

/** Mixed into the seed: the upgrade's draws must not be the fault plan's. */
const SALT = 0x5eed_9a15;

export interface ChaosUpgrade {
  /** A version of the run's own, so every run applies a new hash on every node. */
  version: string;
  concurrency: number;
  prepare: PlanPrepare;
  /** nuo's agent reboots the node after its Job (`reboot: true`), in the same attempt. */
  reboot: boolean;
  /** How long each Job's pod runs before it completes. */
  jobMs: number;
  /** The Job's pod reboots its node's host itself, as SUC's kernel Job runs `reboot` (job-reboots.ts). */
  hostReboot?: boolean;
  /** A `prepare` container, run as a Job of its own before the attempt (SUC's prepare). */
  prepareJob?: boolean;
  /** The nodes the Plan selects (by hostname); every node when absent. */
  nodes?: string[];
}

/** The run's upgrade Plan, from its seed. */
export function planUpgrade(seed: number, maxUnavailable: number): ChaosUpgrade {
  const rnd = new Random((seed ^ SALT) >>> 0);
  const reboot = rnd.chance(0.4);
  // A Plan that reboots always drains; one that does not drains, cordons only, or runs beside the pods.
  const prepare = reboot ? 'drain' : rnd.pick(['drain', 'drain', 'cordon', 'none'] as const);
  return {
    version: `v1.${seed}.0`,
    concurrency: rnd.int(1, Math.max(1, maxUnavailable)),
    prepare,
    reboot,
    jobMs: rnd.int(5, 40) * 100,
  };
}

/** The Plan object the run applies. */
export function upgradePlan(u: ChaosUpgrade): PlanObject {
  const spec: PlanSpec = {
    concurrency: u.concurrency,
    version: u.version,
    upgrade: { image: 'registry.example/os-upgrade', command: ['/upgrade'] },
    ...(u.prepare === 'drain' ? { drain: { force: true } } : {}),
    ...(u.prepare === 'cordon' ? { cordon: true } : {}),
    ...(u.reboot ? { reboot: true } : {}),
    ...(u.prepareJob ? { prepare: { image: 'registry.example/os-prepare', command: ['/prepare'] } } : {}),
    ...(u.nodes
      ? {
          nodeSelector: {
            matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: u.nodes }],
          },
        }
      : {}),
  } as PlanSpec;
  const delay = `${u.jobMs}ms`;
  return {
    namespace: UPGRADE_NAMESPACE,
    name: UPGRADE_NAME,
    annotations: { [SimJobAnnotations.completeDelay]: delay },
    // A Plan's Jobs carry its labels: this one makes the upgrade's pod reboot its host.
    ...(u.hostReboot ? { labels: { [SimJobLabels.rebootsHost]: 'true' } } : {}),
    spec,
  };
}

/**
 * How much longer the run may take with the upgrade: every node it selects applies it once,
 * `min(concurrency, budget)` at a time, each attempt a drain, a Job (and its prepare), a reboot if one is
 * asked or the Job makes one, and a soak, with the rollout's slack per wave.
 */
export function upgradeBoundMs(
  u: ChaosUpgrade,
  nodes: number,
  maxUnavailable: number,
  per: { rebootMs: number; soakMs: number; slackPerWaveMs: number },
): number {
  const waves = Math.ceil((u.nodes?.length ?? nodes) / Math.max(1, Math.min(u.concurrency, maxUnavailable)));
  const jobs = u.prepareJob ? 2 : 1;
  const reboots = u.reboot || u.hostReboot ? per.rebootMs : 0;
  return waves * (jobs * u.jobMs + reboots + per.soakMs + per.slackPerWaveMs);
}

export function describeUpgrade(u: ChaosUpgrade): string {
  const prepare = { drain: 'drains', cordon: 'cordons', none: 'neither drains nor cordons' }[u.prepare];
  return `  upgrade Plan ${UPGRADE_REF} ${u.version}${u.nodes ? ` on ${u.nodes.join(', ')}` : ''}: concurrency ${u.concurrency}, ${prepare}${u.prepareJob ? ', a prepare Job first' : ''}${u.reboot ? ', reboots after its Job' : ''}${u.hostReboot ? ', its Job reboots the node' : ''}, Jobs of ${(u.jobMs / 1000).toFixed(1)}s`;
}
