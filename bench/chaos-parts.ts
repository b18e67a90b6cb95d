/**
 * A fault campaign too long for one sitting runs in parts (`npm run chaos -- --runs 50 --seed 1 --part
 * DIR`, then `--seed 51`, …): each part saves its tallies as JSON, and `--merge DIR/*.json` adds them up
 * into the one published table, refusing parts that overlap, leave a gap, or ran another setting.
 */
import type { Versions } from './report.ts';

export interface ChaosPart {
  seed: number;
  runs: number;
  nodes: number;
  maxUnavailable: number;
  /** Run with two UpdatePolicies (pools and zone caps) rather than the operator's flags. */
  policies?: boolean;
  /** Run with an upgrade Plan over every node beside the reboots. */
  plans?: boolean;
  /** Run with a pool of FLUO's real update-agents beside a pool of nuo's. */
  fluo?: boolean;
  /** Run with one UpdatePolicy with every gate (src/sim/chaos-gates.ts). */
  gates?: boolean;
  /** Gates runs: what the run did to the gates and what the checker saw of them, by kind. */
  gatesSeen?: Record<string, number>;
  /** Run with everything on (src/sim/chaos-all.ts). */
  all?: boolean;
  /** `--all` runs: the gates exercised, the people's acts, the reboots by pool (RunResult.exercised). */
  exercised?: Record<string, number>;
  finished: number;
  expectedStalls: number;
  /** Faults injected by kind, and those that could not strike. */
  injected: Record<string, number>;
  skipped: number;
  /** Violations by rule. */
  violations: Record<string, number>;
  runaways: number;
  elapsedMs: number;
  versions: Versions;
}

const setting = (p: ChaosPart) =>
  `${p.nodes} nodes, maxUnavailable ${p.maxUnavailable}${p.policies ? ', --policies' : ''}${p.plans ? ', --plans' : ''}${p.fluo ? ', --fluo' : ''}${p.gates ? ', --gates' : ''}${p.all ? ', --all' : ''}`;

/** The parts added up, in seed order; throws on an overlap, a gap or a different setting. */
export function mergeParts(parts: readonly ChaosPart[]): ChaosPart {
  if (parts.length === 0) throw new Error('no campaign parts to merge');
  const sorted = [...parts].sort((a, b) => a.seed - b.seed);
  const first = sorted[0] as ChaosPart;
  const sum = (a: Record<string, number>, b: Record<string, number>) => {
    const out = { ...a };
    for (const [k, v] of Object.entries(b)) out[k] = (out[k] ?? 0) + v;
    return out;
  };
  let merged: ChaosPart = { ...first, injected: { ...first.injected }, violations: { ...first.violations } };
  for (const p of sorted.slice(1)) {
    const next = merged.seed + merged.runs;
    if (
      p.nodes !== first.nodes ||
      p.maxUnavailable !== first.maxUnavailable ||
      !p.policies !== !first.policies ||
      !p.plans !== !first.plans ||
      !p.fluo !== !first.fluo ||
      !p.gates !== !first.gates ||
      !p.all !== !first.all
    )
      throw new Error(`part from seed ${p.seed} ran ${setting(p)}; the first ran ${setting(first)}`);
    if (p.seed < next) throw new Error(`part from seed ${p.seed} overlaps seeds up to ${next - 1}`);
    if (p.seed > next) throw new Error(`seeds ${next}…${p.seed - 1} are missing between the parts`);
    merged = {
      ...merged,
      runs: merged.runs + p.runs,
      finished: merged.finished + p.finished,
      expectedStalls: merged.expectedStalls + p.expectedStalls,
      injected: sum(merged.injected, p.injected),
      skipped: merged.skipped + p.skipped,
      violations: sum(merged.violations, p.violations),
      runaways: merged.runaways + p.runaways,
      ...(merged.gatesSeen || p.gatesSeen
        ? { gatesSeen: sum(merged.gatesSeen ?? {}, p.gatesSeen ?? {}) }
        : {}),
      ...(merged.exercised || p.exercised
        ? { exercised: sum(merged.exercised ?? {}, p.exercised ?? {}) }
        : {}),
      elapsedMs: merged.elapsedMs + p.elapsedMs,
    };
  }
  return merged;
}
