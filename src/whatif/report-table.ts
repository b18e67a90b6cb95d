/** A whatif report as text a person reads in a terminal (`nuo whatif run`'s default output). Pure. */
import { table } from '../cli/table.ts';
import type { WhatifReport } from './report.ts';

/** 850 → "0.9s", 83_000 → "1m23s", 7_380_000 → "2h03m". */
export function formatMs(ms: number | undefined): string {
  if (ms === undefined) return '-';
  const s = Math.round(ms / 1000);
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

function headline(r: WhatifReport): string {
  const speed = r.speed ? `; simulated ${r.speed}× faster, times mapped back` : '';
  const reboot = `each host down ${formatMs(r.rebootMs)} for its reboot${speed}`;
  const line = r.finished
    ? `Rollout finished in ${formatMs(r.totalMs)} (${reboot}).`
    : `Rollout did not finish: ${r.stuck.length} of ${r.nodes.length} node(s) unfinished after ${formatMs(r.elapsedMs)} (${reboot}).`;
  return r.startsAt === undefined
    ? line
    : `${line}\nStarted at ${r.startsAt} (the clock windows were read on).`;
}

/** "2026-11-23T09:20:00.000Z" → "2026-11-23 09:20:00". */
const clock = (iso: string | undefined) =>
  iso === undefined ? '-' : iso.replace('T', ' ').replace(/\.\d+Z$/, '');

function windowsPart(r: WhatifReport): string | undefined {
  const used = (r.windowsUsed ?? []).map(
    (w) =>
      `  ${w.pool}: ${w.opens ? clock(w.opens) : 'open before the run'} to ${w.closes ? clock(w.closes) : 'no end'}: ${w.nodes.join(', ')}`,
  );
  const states = r.windows.map((w) => `  ${w.pool}: ${w.windows.join('; ')}`);
  if (used.length === 0 && states.length === 0) return undefined;
  return [
    'Windows used:',
    ...used,
    ...(used.length && states.length ? ['  attempts began:'] : []),
    ...states,
  ].join('\n');
}

export function reportTable(r: WhatifReport): string {
  const parts = [headline(r)];
  if (r.pools.length > 0) {
    parts.push(
      table([
        ['POOL', 'NODES', 'FINISHED', 'START', 'FINISH', 'TIME'],
        ...r.pools.map((p) => [
          p.name,
          String(p.nodes),
          String(p.finished),
          formatMs(p.startMs),
          formatMs(p.finishMs),
          p.finishMs === undefined || p.startMs === undefined ? '-' : formatMs(p.finishMs - p.startMs),
        ]),
      ]),
    );
  }
  const at = r.startsAt !== undefined;
  parts.push(
    table([
      [
        'NODE',
        'POOL',
        'ZONE',
        'WAVE',
        'START',
        'DRAINED',
        'REBOOT',
        'FINISH',
        'ATTEMPTS',
        ...(at ? ['STARTED AT', 'FINISHED AT'] : []),
      ],
      ...r.nodes.map((n) => [
        n.name,
        n.pool ?? '-',
        n.zone ?? '-',
        n.wave === undefined ? '-' : String(n.wave),
        formatMs(n.startMs),
        formatMs(n.drainedMs),
        formatMs(n.rebootMs),
        n.finished ? formatMs(n.finishMs) : 'never',
        String(n.attempts.length),
        ...(at ? [clock(n.startAt), clock(n.finishAt)] : []),
      ]),
    ]),
  );
  if (r.waves.length > 0)
    parts.push(
      ['Waves:', ...r.waves.map((w) => `  ${w.wave} at ${formatMs(w.startMs)}: ${w.nodes.join(', ')}`)].join(
        '\n',
      ),
    );
  if (r.drainWaits.length > 0)
    parts.push(
      [
        'Drains that waited:',
        table([
          ['  NODE', 'PDB', 'REFUSED', 'FROM', 'TO', 'WHY'],
          ...r.drainWaits.map((w) => [
            `  ${w.node}`,
            w.pdb,
            String(w.refusals),
            formatMs(w.firstMs),
            formatMs(w.lastMs),
            w.why,
          ]),
        ]),
      ].join('\n'),
    );
  if (r.stuck.length > 0)
    parts.push(
      [
        'Nodes that did not finish:',
        ...r.stuck.flatMap((s) => [`  ${s.node}:`, ...s.why.map((w) => `    ${w}`)]),
      ].join('\n'),
    );
  if (r.evictedAgain.length > 0)
    parts.push(
      [
        'Pods evicted more than once (replacements evicted again):',
        ...r.evictedAgain.map(
          (e) => `  ${e.workload}: ${e.evictions} evictions, again: ${e.again.join(', ')}`,
        ),
      ].join('\n'),
    );
  const windows = windowsPart(r);
  if (windows) parts.push(windows);
  if (r.violations.length > 0)
    parts.push(
      ['Safety rules the independent checker saw broken:', ...r.violations.map((v) => `  ${v}`)].join('\n'),
    );
  return `${parts.join('\n\n')}\n`;
}
