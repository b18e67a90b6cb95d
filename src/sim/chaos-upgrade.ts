/**
 * The upgrade Plan of a chaos run with Plans (`npm run chaos -- --plans`): one Plan over every node,
 * applied as the run's reboots are staged, so Plan attempts and reboots share the budget while the faults
 * strike. How it runs — its concurrency, whether it drains, only cordons or neither, whether nuo reboots
 * the node after its Job, how long its Jobs run — comes from the seed alone, drawn from a generator of
 * its own, so a seed's faults are the same with Plans or without. Pure.
 */
import type { PlanSpec } from '../api/plan.ts';
import type { PlanPrepare } from '../operator/decide/plan-work.ts';
import { SimJobAnnotations } from './job-keys.ts';
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
  } as PlanSpec;
  const delay = `${u.jobMs}ms`;
  return {
    namespace: UPGRADE_NAMESPACE,
    name: UPGRADE_NAME,
    annotations: { [SimJobAnnotations.completeDelay]: delay },
    spec,
  };
}

/**
 * How much longer the run may take with the upgrade: every node applies it once, `min(concurrency,
 * budget)` at a time, each attempt a drain, a Job, a reboot if asked and a soak, with the rollout's
 * slack per wave.
 */
export function upgradeBoundMs(
  u: ChaosUpgrade,
  nodes: number,
  maxUnavailable: number,
  per: { rebootMs: number; soakMs: number; slackPerWaveMs: number },
): number {
  const waves = Math.ceil(nodes / Math.max(1, Math.min(u.concurrency, maxUnavailable)));
  return waves * (u.jobMs + (u.reboot ? per.rebootMs : 0) + per.soakMs + per.slackPerWaveMs);
}

export function describeUpgrade(u: ChaosUpgrade): string {
  const prepare = { drain: 'drains', cordon: 'cordons', none: 'neither drains nor cordons' }[u.prepare];
  return `  upgrade Plan ${UPGRADE_REF} ${u.version}: concurrency ${u.concurrency}, ${prepare}${u.reboot ? ', reboots after its Job' : ''}, Jobs of ${(u.jobMs / 1000).toFixed(1)}s`;
}
