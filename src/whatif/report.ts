/**
 * The prediction `nuo whatif run` reports, built from what the run observed (observations.ts): total
 * and per-pool time, waves, each node's timeline, drains that waited and on which PDB and why, nodes
 * that never finished and why, pods evicted again, the windows used. Pure.
 */
import { type Phase, SLOT_PHASES } from '../api/phases.ts';
import type {
  ObservedEviction,
  ObservedNode,
  ObservedPdb,
  ObservedPhase,
  RunObservations,
} from './observations.ts';
import { inStretch } from './windows-used.ts';

/** Attempts that start within this long of the one before belong to one wave (one pass admits them). */
export const WAVE_GAP_MS = 2000;

export interface NodeLine {
  name: string;
  pool?: string;
  zone?: string;
  wave?: number;
  /** Its first attempt began (its first slot phase). */
  startMs?: number;
  /** Drained: its last reboot was granted. */
  drainedMs?: number;
  /** Its last reboot began. */
  rebootMs?: number;
  /** Idle again, rebooted: only when it finished. */
  finishMs?: number;
  /** Each attempt, from its start to its end (none: still in it when the run ended). */
  attempts: { startMs: number; endMs?: number }[];
  finished: boolean;
  /** startMs and finishMs on the run's (simulated) calendar, when it was recorded. */
  startAt?: string;
  finishAt?: string;
}

/** A window stretch in which attempts began, on the run's calendar (RFC 3339). */
export interface WindowUsed {
  pool: string;
  /** Absent: open since before the run could tell. */
  opens?: string;
  /** Absent: never closes. */
  closes?: string;
  /** The nodes with an attempt that began in it. */
  nodes: string[];
}

export interface PoolLine {
  name: string;
  nodes: number;
  finished: number;
  startMs?: number;
  /** Its last node finished: only when all did. */
  finishMs?: number;
}

export interface Wave {
  wave: number;
  startMs: number;
  nodes: string[];
}

/** Evictions of pods on `node` a PDB refused. */
export interface DrainWait {
  node: string;
  pdb: string;
  refusals: number;
  firstMs: number;
  lastMs: number;
  why: string;
}

export interface StuckNode {
  node: string;
  why: string[];
}

/** A workload some of whose pods were evicted again: replacements of pods evicted earlier in the run. */
export interface EvictedAgain {
  workload: string;
  evictions: number;
  again: string[];
}

export interface WhatifReport {
  /** Every node finished. */
  finished: boolean;
  elapsedMs: number;
  /** From the rollout's start to the last node's finish, when every node finished. */
  totalMs?: number;
  rebootMs: number;
  /** The twin ran this many times faster than real time; every time here is mapped back. */
  speed?: number;
  pools: PoolLine[];
  waves: Wave[];
  nodes: NodeLine[];
  drainWaits: DrainWait[];
  stuck: StuckNode[];
  evictedAgain: EvictedAgain[];
  /** Per pool, whether its windows were open at each attempt's start (empty: it has none). */
  windows: { pool: string; windows: string[] }[];
  /** The calendar instant the rollout started at (RFC 3339): --start, on the simulated clock. */
  startsAt?: string;
  /** The window stretches attempts began in, per pool, in order (with startsAt). */
  windowsUsed?: WindowUsed[];
  violations: string[];
}

const inSlot = (phase: string) => SLOT_PHASES.has(phase as Phase);

/** The node's timeline, read from the phases it entered. */
function nodeLine(n: ObservedNode): NodeLine {
  const line: NodeLine = {
    name: n.name,
    ...(n.pool ? { pool: n.pool } : {}),
    ...(n.zone ? { zone: n.zone } : {}),
    attempts: [],
    finished: n.finished,
  };
  let was = false;
  for (const p of n.phases) {
    const now = inSlot(p.phase);
    if (now && !was) {
      line.attempts.push({ startMs: p.atMs });
      line.startMs ??= p.atMs;
    }
    const current = line.attempts.at(-1);
    if (!now && was && current) current.endMs = p.atMs;
    if (p.phase === 'RebootGranted') line.drainedMs = p.atMs;
    if (p.phase === 'Rebooting') line.rebootMs = p.atMs;
    if (!now && was && n.finished) line.finishMs = p.atMs;
    was = now;
  }
  return line;
}

/** Groups first attempts into waves: each starts within WAVE_GAP_MS of the attempt before. */
export function waves(lines: readonly NodeLine[]): Wave[] {
  const started = lines
    .filter((l) => l.startMs !== undefined)
    .sort((a, b) => (a.startMs ?? 0) - (b.startMs ?? 0) || a.name.localeCompare(b.name));
  const out: Wave[] = [];
  let last = Number.NEGATIVE_INFINITY;
  for (const l of started) {
    const at = l.startMs ?? 0;
    const current = out.at(-1);
    if (!current || at - last > WAVE_GAP_MS) out.push({ wave: out.length + 1, startMs: at, nodes: [l.name] });
    else current.nodes.push(l.name);
    last = at;
  }
  return out;
}

const isZero = (v: number | string | undefined) => v === 0 || v === '0' || v === '0%';

/** Why a PodDisruptionBudget allowed no disruption: by its spec first (for good), then its pods' health. */
export function pdbWhy(p: ObservedPdb | undefined): string {
  if (!p) return 'it allowed no disruption (the PDB is gone)';
  if (isZero(p.maxUnavailable)) return 'maxUnavailable is 0: it never allows a disruption';
  if (p.minAvailable === '100%') return 'minAvailable is 100%: it never allows a disruption';
  const expected = p.expectedPods;
  if (typeof p.minAvailable === 'number' && expected !== undefined && p.minAvailable >= expected)
    return `minAvailable ${p.minAvailable} ${p.minAvailable === expected ? 'equals' : 'exceeds'} its ${expected} pod(s): it never allows a disruption`;
  const healthy = p.currentHealthy;
  if (expected !== undefined && healthy !== undefined && healthy < expected)
    return `${expected - healthy} of its ${expected} pod(s) unhealthy: it allows no disruption while they are`;
  return 'it allowed no disruption while pods it covers, evicted from other nodes, were not yet back';
}

/** Refused evictions, per node and PDB. */
function drainWaits(evictions: readonly ObservedEviction[], pdbs: readonly ObservedPdb[]): DrainWait[] {
  const waits = new Map<string, DrainWait>();
  for (const e of evictions) {
    if (e.code !== 429) continue;
    const node = e.node ?? '(unknown node)';
    const pdb = e.pdb ?? '(unnamed PDB)';
    const key = `${node}\0${pdb}`;
    const w = waits.get(key);
    if (w) {
      w.refusals++;
      w.firstMs = Math.min(w.firstMs, e.atMs);
      w.lastMs = Math.max(w.lastMs, e.atMs);
    } else {
      const why = pdbWhy(pdbs.find((p) => p.name === pdb));
      waits.set(key, { node, pdb, refusals: 1, firstMs: e.atMs, lastMs: e.atMs, why });
    }
  }
  return [...waits.values()].sort((a, b) => a.node.localeCompare(b.node) || a.pdb.localeCompare(b.pdb));
}

/**
 * Pods evicted that replaced a pod of the same workload evicted earlier in the run (created after that
 * eviction): the workload's pods were moved more than once.
 */
export function evictedAgain(evictions: readonly ObservedEviction[]): EvictedAgain[] {
  const done = evictions.filter((e) => e.code !== 429 && e.workload).sort((a, b) => a.atMs - b.atMs);
  const byWorkload = new Map<string, ObservedEviction[]>();
  for (const e of done) byWorkload.set(e.workload ?? '', [...(byWorkload.get(e.workload ?? '') ?? []), e]);
  const out: EvictedAgain[] = [];
  for (const [workload, list] of byWorkload) {
    const first = list[0]?.atMs ?? 0;
    const again = list.filter((e) => e.createdMs !== undefined && e.createdMs > first).map((e) => e.pod);
    if (again.length > 0) out.push({ workload, evictions: list.length, again });
  }
  return out.sort((a, b) => a.workload.localeCompare(b.workload));
}

/** At most this many of the operator's reasons for where an unfinished node is now. */
const NOW_REASONS = 3;

/** The distinct reasons the operator gave, latest first, since the node entered the phase it ends in. */
function nowReasons(phases: readonly ObservedPhase[], ended: ObservedPhase | undefined): string[] {
  const current = phases.at(-1);
  if (!current) return [];
  let from = phases.length - 1;
  while (from > 0 && phases[from - 1]?.phase === current.phase && phases[from - 1]?.atMs === current.atMs)
    from--;
  const reasons = phases
    .slice(from)
    .filter((p) => p !== ended && p.reason)
    .map((p) => p.reason as string);
  return [...new Set(reasons.reverse())].slice(0, NOW_REASONS).map((r) => `now ${current.phase}: ${r}`);
}

/**
 * Why a node did not finish: its host, its last attempt's end, the operator's reason for where it is now,
 * its drains' waits, and the operator's view of what holds it.
 */
function stuckWhy(n: ObservedNode, waits: readonly DrainWait[]): string[] {
  const why: string[] = [];
  if (n.notReady) why.push('NotReady in the snapshot: the twin keeps it down, so it never returns');
  const lastEnd = [...n.phases].reverse().findIndex((p, i, all) => {
    const before = all[i + 1];
    return !inSlot(p.phase) && before !== undefined && inSlot(before.phase);
  });
  const ended = lastEnd >= 0 ? n.phases[n.phases.length - 1 - lastEnd] : undefined;
  if (ended?.reason) why.push(`last attempt ended: ${ended.reason}`);
  why.push(...nowReasons(n.phases, ended));
  for (const w of waits.filter((w) => w.node === n.name))
    why.push(`drain waited on PDB ${w.pdb} (${w.refusals} eviction(s) refused): ${w.why}`);
  why.push(...n.explain);
  return why;
}

/** The stretches of each pool's windows in which attempts of its nodes began. */
export function windowsUsed(o: RunObservations, lines: readonly NodeLine[]): WindowUsed[] {
  const start = o.calendarStartMs;
  if (start === undefined) return [];
  const iso = (ms: number | undefined) => (ms === undefined ? {} : { at: new Date(ms).toISOString() });
  return (o.windowStretches ?? []).flatMap(({ pool, stretches }) =>
    stretches.flatMap((s): WindowUsed[] => {
      const nodes = lines
        .filter((l) => l.pool === pool && l.attempts.some((a) => inStretch(s, start + a.startMs)))
        .map((l) => l.name);
      if (nodes.length === 0) return [];
      const opens = iso(s.opens).at;
      const closes = iso(s.closes).at;
      return [{ pool, ...(opens ? { opens } : {}), ...(closes ? { closes } : {}), nodes }];
    }),
  );
}

/** The line with its start and finish on the run's calendar. */
function onCalendar(l: NodeLine, start: number | undefined): NodeLine {
  if (start === undefined) return l;
  const at = (ms: number | undefined) => (ms === undefined ? undefined : new Date(start + ms).toISOString());
  const startAt = at(l.startMs);
  const finishAt = at(l.finishMs);
  return { ...l, ...(startAt ? { startAt } : {}), ...(finishAt ? { finishAt } : {}) };
}

export function buildReport(o: RunObservations): WhatifReport {
  const lines = o.nodes
    .map((n) => onCalendar(nodeLine(n), o.calendarStartMs))
    .sort((a, b) => a.name.localeCompare(b.name));
  const grouped = waves(lines);
  const waveOf = new Map(grouped.flatMap((w) => w.nodes.map((n) => [n, w.wave] as const)));
  for (const l of lines) {
    const wave = waveOf.get(l.name);
    if (wave !== undefined) l.wave = wave;
  }
  const pools = [...new Set(lines.flatMap((l) => (l.pool ? [l.pool] : [])))].sort().map((name): PoolLine => {
    const of = lines.filter((l) => l.pool === name);
    const starts = of.flatMap((l) => (l.startMs === undefined ? [] : [l.startMs]));
    const finished = of.filter((l) => l.finished).length;
    return {
      name,
      nodes: of.length,
      finished,
      ...(starts.length ? { startMs: Math.min(...starts) } : {}),
      ...(finished === of.length ? { finishMs: Math.max(0, ...of.map((l) => l.finishMs ?? 0)) } : {}),
    };
  });
  const waits = drainWaits(o.evictions, o.pdbs);
  const finished = lines.every((l) => l.finished);
  const windows = pools.map((p) => ({
    pool: p.name,
    windows: [...new Set(o.nodes.filter((n) => n.pool === p.name).flatMap((n) => n.windows))].sort(),
  }));
  return {
    finished,
    elapsedMs: o.elapsedMs,
    ...(finished ? { totalMs: Math.max(0, ...lines.map((l) => l.finishMs ?? 0)) } : {}),
    rebootMs: o.rebootMs,
    ...(o.speed !== undefined && o.speed !== 1 ? { speed: o.speed } : {}),
    pools,
    waves: grouped,
    nodes: lines,
    drainWaits: waits,
    stuck: o.nodes
      .filter((n) => !n.finished)
      .sort((a, b) => a.name.localeCompare(b.name))
      .map((n) => ({ node: n.name, why: stuckWhy(n, waits) })),
    evictedAgain: evictedAgain(o.evictions),
    windows: windows.filter((w) => w.windows.length > 0),
    ...(o.calendarStartMs !== undefined
      ? { startsAt: new Date(o.calendarStartMs).toISOString(), windowsUsed: windowsUsed(o, lines) }
      : {}),
    violations: o.violations,
  };
}
