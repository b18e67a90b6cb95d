/** What `nuo whatif run --suggest` prints: the settings tried and the one suggested, as text or JSON. Pure. */
import { table } from '../cli/table.ts';
import { formatMs } from './report-table.ts';
import { type Settings, settingsPatch, settingsText } from './suggest.ts';
import type { Outcome, Ranked } from './suggest-rank.ts';

export interface SuggestOutput {
  policy: string;
  /** Nodes of the pool, and per zone. */
  nodes: number;
  zones: Record<string, number>;
  speed: number;
  windowMs?: number;
  /** Settings generated but not tried (beyond --suggest-max). */
  notTried: number;
  /** Best first; the first is the suggestion when `suggestion` is set. */
  tried: ({
    settings: Settings;
    current: boolean;
    eligible: boolean;
    why: string[];
  } & Outcome)[];
  suggestion?: { settings: Settings; totalMs?: number; kubectl: string; spec: string };
}

export function suggestOutput(
  pool: { policy: string; nodes: number; zones: Map<string, number> },
  ranked: readonly Ranked[],
  run: { speed: number; windowMs?: number; notTried: number },
): SuggestOutput {
  const first = ranked[0];
  return {
    policy: pool.policy,
    nodes: pool.nodes,
    zones: Object.fromEntries(pool.zones),
    speed: run.speed,
    ...(run.windowMs !== undefined ? { windowMs: run.windowMs } : {}),
    notTried: run.notTried,
    tried: ranked.map((r) => ({
      settings: r.candidate.settings,
      current: r.candidate.current,
      eligible: r.eligible,
      why: r.why,
      ...r.outcome,
    })),
    ...(first?.eligible
      ? {
          suggestion: {
            settings: first.candidate.settings,
            ...(first.outcome.totalMs !== undefined ? { totalMs: first.outcome.totalMs } : {}),
            ...settingsPatch(pool.policy, first.candidate.settings),
          },
        }
      : {}),
  };
}

const yesNo = (v: boolean | undefined) => (v === undefined ? '-' : v ? 'yes' : 'no');

export function suggestTable(o: SuggestOutput): string {
  const speed = o.speed === 1 ? 'in real time' : `${o.speed}× faster than real time, times mapped back`;
  const zones = Object.keys(o.zones).length;
  const parts = [
    `Tried ${o.tried.length} setting(s) of UpdatePolicy ${o.policy} (${o.nodes} node(s) in ${zones} zone(s)), each on a fresh twin ${speed}:`,
    table([
      [
        '',
        'MAX-UNAVAILABLE',
        'PER-ZONE',
        'ZONE-ORDER',
        'TOTAL',
        'FINISHED',
        'PDBS-BLOCKED',
        'STUCK',
        'FITS-WINDOW',
      ],
      ...o.tried.map((t, i) => [
        i === 0 && o.suggestion ? '*' : ' ',
        `${t.settings.maxUnavailable}${t.current ? ' (now)' : ''}`,
        String(t.settings.maxUnavailablePerZone ?? '-'),
        t.settings.zoneOrder,
        t.error === undefined ? formatMs(t.totalMs) : 'failed',
        `${t.finished}/${t.nodes}`,
        t.pdbsBlocked.length > 0 ? t.pdbsBlocked.join(',') : '-',
        String(t.stuck.length),
        yesNo(t.fitsWindow),
      ]),
    ]),
  ];
  const held = o.tried.filter((t) => !t.eligible);
  if (held.length > 0)
    parts.push(
      ['Not suggested:', ...held.map((t) => `  ${settingsText(t.settings)}: ${t.why.join('; ')}`)].join('\n'),
    );
  if (o.notTried > 0) parts.push(`${o.notTried} more setting(s) not tried: raise --suggest-max to try them.`);
  const s = o.suggestion;
  const now = o.tried.find((t) => t.current);
  if (s) {
    const against =
      now && !now.eligible
        ? ` (the policy's own settings: ${now.why.join('; ')})`
        : now?.totalMs !== undefined
          ? ` against ${formatMs(now.totalMs)} with the policy's own settings`
          : '';
    parts.push(
      [
        `Suggested: ${settingsText(s.settings)}, the fastest that kept every PDB unblocked: ${formatMs(s.totalMs)}${against}.`,
        'Apply it:',
        `  ${s.kubectl}`,
        'or in the UpdatePolicy:',
        ...s.spec
          .trimEnd()
          .split('\n')
          .map((l) => `  ${l}`),
      ].join('\n'),
    );
  } else
    parts.push(
      'No suggestion: no setting tried finished its pool with every PDB unblocked and inside the window.',
    );
  return `${parts.join('\n\n')}\n`;
}
