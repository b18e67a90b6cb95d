/**
 * A whatif report as an SVG timeline a person opens in a browser: one row per node, its attempt from
 * start to drained, to reboot, to finish, an unfinished node's bar running to the end of the run in red,
 * wave starts as lines, and the reasons in each row's tooltip. Pure.
 */
import type { NodeLine, WhatifReport } from './report.ts';
import { formatMs } from './report-table.ts';

const LABEL = 160;
const PLOT = 720;
const ROW = 22;
const TOP = 48;
const AXIS = 30;

const xmlText = (s: string) =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** A round step for about six ticks over `spanMs`. */
function tickStep(spanMs: number): number {
  const raw = spanMs / 6;
  const magnitude = 10 ** Math.floor(Math.log10(Math.max(raw, 1)));
  return [1, 2, 5, 10].map((m) => m * magnitude).find((s) => s >= raw) ?? raw;
}

/**
 * The bars of a node's row, [class, from, to]: each attempt that did not finish it in red; the one that
 * did from start to drained, to reboot, to finish; a thin line from the last attempt's end to the end of
 * the run while it waited unfinished.
 */
function segments(n: NodeLine, endMs: number): [string, number, number][] {
  const out: [string, number, number][] = [];
  n.attempts.forEach((a, i) => {
    const last = i === n.attempts.length - 1;
    const end = a.endMs ?? endMs;
    if (!last || !n.finished) {
      out.push(['failed', a.startMs, end]);
      return;
    }
    const marks = [
      ['draining', a.startMs],
      ['granted', n.drainedMs],
      ['rebooting', n.rebootMs],
    ].filter((m): m is [string, number] => typeof m[1] === 'number' && m[1] >= a.startMs);
    marks.forEach(([cls, from], j) => {
      out.push([cls, from, Math.max(from, marks[j + 1]?.[1] ?? end)]);
    });
  });
  if (!n.finished) out.push(['waiting', n.attempts.at(-1)?.endMs ?? 0, endMs]);
  return out;
}

export function reportSvg(r: WhatifReport): string {
  const endMs = Math.max(r.totalMs ?? 0, r.elapsedMs, 1);
  const x = (ms: number) => LABEL + (ms / endMs) * PLOT;
  const height = TOP + r.nodes.length * ROW + AXIS;
  const width = LABEL + PLOT + 20;
  const stuck = new Map(r.stuck.map((s) => [s.node, s.why]));
  const title = r.finished
    ? `Rollout finished in ${formatMs(r.totalMs)}`
    : `Rollout did not finish: ${r.stuck.length} of ${r.nodes.length} node(s) unfinished after ${formatMs(r.elapsedMs)}`;
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    '<style>.draining{fill:#e8a33d}.granted{fill:#c9c24a}.rebooting{fill:#4a7fc9}.failed{fill:#c94a4a}.waiting{fill:#c94a4a;opacity:.35}.wave{stroke:#999;stroke-dasharray:3 3}.tick{stroke:#ddd}</style>',
    `<text x="8" y="20" font-size="14" font-weight="bold">${xmlText(title)}</text>`,
    '<text x="8" y="38" fill="#555">drain (amber), granted (yellow), reboot and return (blue); an attempt that failed in red, then waiting unfinished (pale red)</text>',
  ];
  const step = tickStep(endMs);
  for (let t = 0; t <= endMs; t += step) {
    const at = x(t).toFixed(1);
    out.push(
      `<line class="tick" x1="${at}" y1="${TOP}" x2="${at}" y2="${height - AXIS}"/>`,
      `<text x="${at}" y="${height - AXIS + 14}" text-anchor="middle" fill="#555">${xmlText(formatMs(t))}</text>`,
    );
  }
  for (const w of r.waves) {
    const at = x(w.startMs).toFixed(1);
    out.push(
      `<line class="wave" data-wave="${w.wave}" x1="${at}" y1="${TOP - 4}" x2="${at}" y2="${height - AXIS}"><title>wave ${w.wave}: ${xmlText(w.nodes.join(', '))}</title></line>`,
    );
  }
  r.nodes.forEach((n, i) => {
    const y = TOP + i * ROW;
    const why = stuck.get(n.name);
    const tip = [
      `${n.name}${n.pool ? ` (pool ${n.pool})` : ''}`,
      `start ${formatMs(n.startMs)}, drained ${formatMs(n.drainedMs)}, reboot ${formatMs(n.rebootMs)}, finish ${n.finished ? formatMs(n.finishMs) : 'never'}`,
      ...(why ?? []),
    ].join('\n');
    out.push(
      `<g class="node" data-node="${xmlText(n.name)}" data-finished="${n.finished}"><title>${xmlText(tip)}</title>`,
      `<text x="8" y="${y + 15}"${n.finished ? '' : ' fill="#c94a4a"'}>${xmlText(n.name)}</text>`,
      ...segments(n, endMs).map(([cls, from, to]) => {
        const thin = cls === 'waiting';
        return `<rect class="${cls}" x="${x(from).toFixed(1)}" y="${y + (thin ? 10 : 4)}" width="${Math.max(1, x(to) - x(from)).toFixed(1)}" height="${thin ? 2 : ROW - 8}"/>`;
      }),
      '</g>',
    );
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
