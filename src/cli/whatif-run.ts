/** `nuo whatif run`: a snapshot's twin rolled by the real operator and agents, and the prediction. */
import { writeFileSync } from 'node:fs';
import { readSnapshotFiles } from '../whatif/parse.ts';
import { buildReport, type WhatifReport } from '../whatif/report.ts';
import { reportSvg } from '../whatif/report-svg.ts';
import { formatMs, reportTable } from '../whatif/report-table.ts';
import { retimed } from '../whatif/retime.ts';
import { type Snapshot, SnapshotError } from '../whatif/snapshot.ts';
import { type PoolTimes, TimingError, twinTiming } from '../whatif/timing.ts';
import { buildTwin } from '../whatif/twin.ts';
import { err, out, UsageError } from './command.ts';
import type { WhatifRunHarness } from './harness.ts';

/** The exit code of a prediction whose rollout could not finish (1 is an error, 2 bad usage). */
export const EXIT_UNFINISHED = 3;

export const RUN_FORMATS = ['table', 'json'] as const;
export type RunFormat = (typeof RUN_FORMATS)[number];

export interface RunFlags {
  /** From the agent's reboot until the host boots again; absent: each pool's measure (timing.ts). */
  rebootMs?: number;
  /** From the new boot until the node is Ready; absent: each pool's measure. */
  returnMs?: number;
  /** How many times faster than real time the twin rolls (timing.ts). */
  speed: number;
  /** The calendar instant the twin's operator starts at (default: the real time then): windows are read on a clock from there. */
  startMs?: number;
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
  /** Each pool's host times, in real-rollout time, and where they came from. */
  times?: PoolTimes[];
}

/** "main: reboot 1m35s (measured, median of 7 attempts), return 0.0s (default)". */
function timesLine(t: PoolTimes): string {
  const from = (source: string) =>
    source === 'measured' ? `measured, median of ${t.measuredAttempts} attempts` : source;
  return `${t.pool ?? '(no pool)'}: reboot ${formatMs(t.rebootMs)} (${from(t.rebootFrom)}), return ${formatMs(t.returnMs)} (${from(t.returnFrom)})`;
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
    timing = twinTiming(chosen.updatePolicies, flags, read.snapshot.updatePolicies);
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
      rebootMsByPool: timing.hostDownMsByPool,
      calendar: { ...(flags.startMs === undefined ? {} : { originMs: flags.startMs }), speed: flags.speed },
    });
  } catch (e) {
    err(`nuo whatif run: ${(e as Error).message}`);
    return 1;
  }
  for (const d of result.twin.differences) err(`twin differs from the snapshot: ${d}`);
  const report = buildReport(retimed(result.observations, flags.speed));
  if (flags.format === 'json') {
    const output: RunOutput = {
      ...report,
      twin: { notes: twin.notes, differences: result.twin.differences },
      times: timing.times,
    };
    out(JSON.stringify(output, null, 2));
  } else
    out(
      [
        reportTable(report).trimEnd(),
        '',
        'Host times:',
        ...timing.times.map((t) => `  ${timesLine(t)}`),
      ].join('\n'),
    );
  if (flags.svg !== undefined) {
    writeFileSync(flags.svg, reportSvg(report));
    err(`timeline written to ${flags.svg}`);
  }
  return report.finished ? 0 : EXIT_UNFINISHED;
}
