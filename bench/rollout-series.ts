/**
 * Several runs of one rollout benchmark, summarised. On the shared 2-core testing ground the same code
 * and command have measured 88–96 % at 1,000 nodes, as the host's speed moved: one run says little about
 * whether a goal is met reliably, so `bench:rollout --runs N` measures N and publishes them all, their
 * median and range, and how many met each goal. Pure, so the arithmetic is unit-tested.
 */
import type { Report } from './report.ts';

/** What one run of bench:rollout hands the series (its `--json` file). */
export interface RunFigures {
  elapsedMs: number;
  /** Bound / rollout time. */
  efficiency: number;
  grantP50Ms: number;
  grantP99Ms: number;
  /** The slots' mean empty time after their last attempt (slotIdle's end over K). */
  endIdleMsPerSlot: number;
  /** Milliseconds of API server CPU per request answered: how fast the host was. */
  apiserverCpuMsPerRequest: number;
  maxDisrupted: number;
  violations: number;
  leadershipLost: number;
  /** Pods evicted over the pods at the start (an independent watch on the pods). */
  evictionsPerPod: number;
  /** The run's own section of docs/benchmarks.md. */
  report: Report;
}

/**
 * The goals a run is held to, each a comparison that can fail: efficiency and grant latency from the
 * rollout benchmark's issues, evictions per pod from issue 52's table (every pod moved about once).
 */
export const GOALS = { efficiency: 0.95, grantP99Ms: 1000, evictionsPerPod: 1.1 } as const;

/** A goal cell: the goal, and whether this figure missed it, so a missed goal says so in the table. */
export function goalCell(goal: string, met: boolean): string {
  return met ? goal : `${goal} (**missed**)`;
}

/** The run whose efficiency is the median (of an even count, the lower of the two: a run, not a mean). */
export function medianRun(runs: readonly RunFigures[]): number {
  if (runs.length === 0) throw new Error('a series needs at least one run');
  const order = runs.map((_, i) => i).sort((a, b) => (runs[a]?.efficiency ?? 0) - (runs[b]?.efficiency ?? 0));
  return order[Math.ceil(runs.length / 2) - 1] as number;
}

const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
const ms = (x: number) => `${x.toFixed(0)} ms`;
const range = (xs: number[], f: (x: number) => string) => `${f(Math.min(...xs))} – ${f(Math.max(...xs))}`;

/** The series' own section: one row a run, the range, and how many runs met each goal. */
export function seriesBody(runs: readonly RunFigures[], k: number): string {
  const median = medianRun(runs);
  const met = (ok: (r: RunFigures) => boolean) => `${runs.filter(ok).length} of ${runs.length}`;
  const safe = (r: RunFigures) => r.violations === 0 && r.maxDisrupted <= k;
  return [
    `${runs.length} runs of the same command, one after another, each on a cluster of its own. The run`,
    `marked * is the median by efficiency; its full figures are the section above.`,
    '',
    '| run | rollout time | **efficiency** | grant latency p50 / **p99** | slots empty at the end, mean | API server CPU a request (host speed) | most disrupted | violations | leadership lost |',
    '|---|---|---|---|---|---|---|---|---|',
    ...runs.map(
      (r, i) =>
        `| ${i + 1}${i === median ? ' *' : ''} | ${s(r.elapsedMs)} | ${pct(r.efficiency)} | ${ms(r.grantP50Ms)} / ${ms(r.grantP99Ms)} | ${s(r.endIdleMsPerSlot)} | ${r.apiserverCpuMsPerRequest.toFixed(2)} ms | ${r.maxDisrupted} | ${r.violations} | ${r.leadershipLost} |`,
    ),
    '',
    '| across the runs | range | goal | runs that met it |',
    '|---|---|---|---|',
    `| efficiency | ${range(
      runs.map((r) => r.efficiency),
      pct,
    )} | ≥ ${pct(GOALS.efficiency)} | ${met((r) => r.efficiency >= GOALS.efficiency)} |`,
    `| grant latency p99 | ${range(
      runs.map((r) => r.grantP99Ms),
      ms,
    )} | < ${ms(GOALS.grantP99Ms)} | ${met((r) => r.grantP99Ms < GOALS.grantP99Ms)} |`,
    `| evictions per pod | ${range(
      runs.map((r) => r.evictionsPerPod),
      (x) => x.toFixed(2),
    )} | ≤ ${GOALS.evictionsPerPod.toFixed(2)} | ${met((r) => r.evictionsPerPod <= GOALS.evictionsPerPod)} |`,
    `| safety: no violation, at most K = ${k} disrupted | ${range(
      runs.map((r) => r.maxDisrupted),
      String,
    )} disrupted, ${runs.reduce((n, r) => n + r.violations, 0)} violations in all | every run | ${met(safe)} |`,
    `| API server CPU a request | ${range(
      runs.map((r) => r.apiserverCpuMsPerRequest),
      (x) => `${x.toFixed(2)} ms`,
    )} | | |`,
  ].join('\n');
}
