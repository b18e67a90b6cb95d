/** `nuo whatif run`: a snapshot's twin rolled by the real operator and agents, and the prediction. */
import { writeFileSync } from 'node:fs';
import { readSnapshotFiles } from '../whatif/parse.ts';
import { buildReport, type WhatifReport } from '../whatif/report.ts';
import { reportSvg } from '../whatif/report-svg.ts';
import { reportTable } from '../whatif/report-table.ts';
import { type Snapshot, SnapshotError } from '../whatif/snapshot.ts';
import { observedAtSpeed, TimingError, twinTiming } from '../whatif/timing.ts';
import { buildTwin } from '../whatif/twin.ts';
import { err, out, UsageError } from './command.ts';
import type { WhatifRunHarness } from './harness.ts';

/** The exit code of a prediction whose rollout could not finish (1 is an error, 2 bad usage). */
export const EXIT_UNFINISHED = 3;

export const RUN_FORMATS = ['table', 'json'] as const;
export type RunFormat = (typeof RUN_FORMATS)[number];

export interface RunFlags {
  /** From the agent's reboot until the host boots again. */
  rebootMs: number;
  /** From the new boot until the node is Ready. */
  returnMs: number;
  /** How many times faster than real time the twin rolls (timing.ts). */
  speed: number;
  standTimeoutMs: number;
  timeoutMs: number;
  format: RunFormat;
  svg?: string;
  /** A file of UpdatePolicies rolled instead of the snapshot's. */
  policies?: string;
}

/** The report as `-o json` writes it: the prediction, and what the twin left out or changed. */
export interface RunOutput extends WhatifReport {
  twin: { notes: string[]; differences: string[] };
}

/** The snapshot's policies, or those of `file` in their place. */
export function withPolicies(snapshot: Snapshot, file: string | undefined): Snapshot {
  if (file === undefined) return snapshot;
  const { updatePolicies } = readSnapshotFiles(file).snapshot;
  if (updatePolicies.length === 0)
    throw new UsageError(
      `--policies ${file} holds no UpdatePolicy (apiVersion nuo.dev/v1alpha1, kind UpdatePolicy)`,
    );
  return { ...snapshot, updatePolicies };
}

export async function runPrediction(
  harness: WhatifRunHarness,
  read: { snapshot: Snapshot; notes: string[]; source: string },
  flags: RunFlags,
): Promise<number> {
  let snapshot: Snapshot;
  let timing: ReturnType<typeof twinTiming>;
  try {
    const chosen = withPolicies(read.snapshot, flags.policies);
    timing = twinTiming(chosen.updatePolicies, flags);
    snapshot = { ...chosen, updatePolicies: timing.policies };
  } catch (e) {
    if (e instanceof TimingError) throw new UsageError(e.message);
    if (!(e instanceof SnapshotError)) throw e;
    err(`nuo whatif: ${e.message}`);
    return 1;
  }
  for (const note of read.notes) err(`note: ${note}`);
  const twin = buildTwin(snapshot);
  for (const note of twin.notes) err(`twin: ${note}`);
  const speed = flags.speed === 1 ? '' : `, ${flags.speed}× faster than real time`;
  err(
    `rolling the twin of ${read.source} (each host down ${timing.hostDownMs / 1000} s, at most ${timing.timeoutMs / 1000} s${speed})…`,
  );
  let result: Awaited<ReturnType<WhatifRunHarness['runWhatif']>>;
  try {
    result = await harness.runWhatif(snapshot, twin, {
      rebootMs: timing.hostDownMs,
      standTimeoutMs: flags.standTimeoutMs,
      timeoutMs: timing.timeoutMs,
      log: (line) => err(`  ${line}`),
    });
  } catch (e) {
    err(`nuo whatif run: ${(e as Error).message}`);
    return 1;
  }
  for (const d of result.twin.differences) err(`twin differs from the snapshot: ${d}`);
  const report = buildReport(observedAtSpeed(result.observations, flags.speed));
  if (flags.format === 'json') {
    const output: RunOutput = {
      ...report,
      twin: { notes: twin.notes, differences: result.twin.differences },
    };
    out(JSON.stringify(output, null, 2));
  } else out(reportTable(report).trimEnd());
  if (flags.svg !== undefined) {
    writeFileSync(flags.svg, reportSvg(report));
    err(`timeline written to ${flags.svg}`);
  }
  return report.finished ? 0 : EXIT_UNFINISHED;
}
