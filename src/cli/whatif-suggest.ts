/**
 * `nuo whatif run --suggest`: one UpdatePolicy's settings (src/whatif/suggest.ts) each tried on a fresh
 * twin of the snapshot, rolled as `nuo whatif run` rolls one, and the fastest that kept every PDB
 * unblocked suggested (suggest-rank.ts) as a patch to apply.
 */
import { writeFileSync } from 'node:fs';
import { buildReport, type WhatifReport } from '../whatif/report.ts';
import { reportSvg } from '../whatif/report-svg.ts';
import { formatMs } from '../whatif/report-table.ts';
import { retimed } from '../whatif/retime.ts';
import { type Snapshot, SnapshotError } from '../whatif/snapshot.ts';
import {
  type Candidate,
  poolFacts,
  SuggestError,
  settingsText,
  suggestCandidates,
  withSettings,
} from '../whatif/suggest.ts';
import { outcomeOf, rankSuggestions, type Tried } from '../whatif/suggest-rank.ts';
import { suggestOutput, suggestTable } from '../whatif/suggest-report.ts';
import { TimingError, twinTiming } from '../whatif/timing.ts';
import { buildTwin } from '../whatif/twin.ts';
import { durationFlag } from './args.ts';
import { err, out, UsageError } from './command.ts';
import type { WhatifRunHarness } from './harness.ts';
import { EXIT_UNFINISHED, type RunFlags, withPolicies } from './whatif-run.ts';

export interface SuggestFlags {
  /** At most this many settings tried. */
  max: number;
  /** The UpdatePolicy varied (needed when the snapshot holds several). */
  policy?: string;
  /** The maintenance window the pool must finish in, in real-rollout time. */
  windowMs?: number;
}

/** Settings tried by default: about a minute each for a small pool at --speed 10. */
export const DEFAULT_SUGGEST_MAX = 8;

/** `--suggest`'s flags, checked before anything is read; undefined without --suggest. */
export function suggestFlags(values: {
  suggest?: boolean;
  'suggest-max'?: string;
  'suggest-policy'?: string;
  window?: string;
}): SuggestFlags | undefined {
  if (!values.suggest) {
    const stray = (['suggest-max', 'suggest-policy', 'window'] as const).filter(
      (f) => values[f] !== undefined,
    );
    if (stray.length > 0) throw new UsageError(`--${stray.join(', --')} go with --suggest`);
    return undefined;
  }
  const max = Number(values['suggest-max'] ?? DEFAULT_SUGGEST_MAX);
  if (!(Number.isInteger(max) && max >= 1 && max <= 100))
    throw new UsageError(
      `--suggest-max must be a whole number from 1 to 100, got "${values['suggest-max']}"`,
    );
  return {
    max,
    ...(values['suggest-policy'] !== undefined ? { policy: values['suggest-policy'] } : {}),
    ...(values.window !== undefined ? { windowMs: durationFlag('window', values.window, '0s') } : {}),
  };
}

/** What starting and stopping a local control plane adds to each run, for the estimate. */
const START_STOP_MS = 20_000;

export async function runSuggest(
  harness: WhatifRunHarness,
  read: { snapshot: Snapshot; notes: string[]; source: string },
  flags: RunFlags,
  suggest: SuggestFlags,
): Promise<number> {
  let snapshot: Snapshot;
  let facts: ReturnType<typeof poolFacts>;
  try {
    snapshot = withPolicies(read.snapshot, flags.policies);
    facts = poolFacts(snapshot, suggest.policy);
    twinTiming(snapshot.updatePolicies, flags);
  } catch (e) {
    if (e instanceof TimingError || e instanceof SuggestError) throw new UsageError(e.message);
    if (!(e instanceof SnapshotError)) throw e;
    err(`nuo whatif: ${e.message}`);
    return 1;
  }
  for (const note of read.notes) err(`note: ${note}`);
  const { candidates, left } = suggestCandidates(facts, suggest.max);
  const eachMs = flags.standTimeoutMs + flags.timeoutMs / flags.speed + START_STOP_MS;
  err(
    `trying ${candidates.length} setting(s) of UpdatePolicy ${facts.policy} (${facts.nodes} node(s)) on fresh twins of ${read.source}, one after another: each at most ${formatMs(eachMs)} (standing the twin, at most ${formatMs(flags.timeoutMs / flags.speed)} of rollout), at most ${formatMs(eachMs * candidates.length)} in all`,
  );
  const tried: Tried[] = [];
  const reports = new Map<Candidate, WhatifReport>();
  for (const [i, candidate] of candidates.entries()) {
    const policies = snapshot.updatePolicies.map((p) =>
      p.metadata.name === facts.policy ? withSettings(p, candidate.settings) : p,
    );
    const timing = twinTiming(policies, flags);
    const twinSnapshot = { ...snapshot, updatePolicies: timing.policies };
    const twin = buildTwin(twinSnapshot);
    if (i === 0) for (const note of twin.notes) err(`twin: ${note}`);
    err(
      `[${i + 1}/${candidates.length}] ${settingsText(candidate.settings)}${candidate.current ? ' (the policy now)' : ''}…`,
    );
    const since = performance.now();
    try {
      const result = await harness.runWhatif(twinSnapshot, twin, {
        rebootMs: timing.hostDownMs,
        standTimeoutMs: flags.standTimeoutMs,
        timeoutMs: timing.timeoutMs,
        until: facts.members,
        log: (line) => err(`    ${line}`),
      });
      const report = buildReport(retimed(result.observations, flags.speed));
      tried.push({ candidate, outcome: outcomeOf(report, facts.policy, suggest.windowMs) });
      reports.set(candidate, report);
    } catch (e) {
      const error = (e as Error).message;
      err(`    the run failed: ${error}`);
      tried.push({
        candidate,
        outcome: { nodes: facts.nodes, finished: 0, pdbsBlocked: [], stuck: [], violations: [], error },
      });
    }
    err(`    done in ${formatMs(performance.now() - since)}`);
  }
  const ranked = rankSuggestions(tried);
  const output = suggestOutput(facts, ranked, {
    speed: flags.speed,
    notTried: left,
    ...(suggest.windowMs !== undefined ? { windowMs: suggest.windowMs } : {}),
  });
  out(flags.format === 'json' ? JSON.stringify(output, null, 2) : suggestTable(output).trimEnd());
  const chosen = ranked[0];
  const report = chosen ? reports.get(chosen.candidate) : undefined;
  if (flags.svg !== undefined && report) {
    writeFileSync(flags.svg, reportSvg(report));
    err(`timeline of ${settingsText(chosen?.candidate.settings ?? facts.current)} written to ${flags.svg}`);
  }
  if (output.suggestion) return 0;
  return tried.every((t) => t.outcome.error !== undefined) ? 1 : EXIT_UNFINISHED;
}
