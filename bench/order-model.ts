/**
 * npm run bench:order -- --log DIR/operator-bench.log [--reboot-time R --soak S]
 *
 * What another admission order would have made of a measured rollout (the operator's log of a
 * `bench:rollout --keep-logs DIR` run). Replaying the measured slot times in another order is not enough:
 * the drains of nodes that hold pods slow each other down (their evictions wait on the same PDBs and on
 * the replacements being scheduled), so an order that puts them together makes them longer. This fits
 * that contention to the run — each such drain takes a fixed part, then its pods are evicted at a rate
 * the drains in progress share — and then plays the whole rollout in each order with it: the rollout
 * time, the mean drain, and the efficiency figure bench:rollout would print for it.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { parseDuration } from '../src/util/duration.ts';
import { fitContention, type Measured, Order, play } from './order-play.ts';

const { values } = parseArgs({
  options: {
    log: { type: 'string' },
    // The run's, for the efficiency figure's bound (bench:rollout's defaults are 5s and 10s).
    'reboot-time': { type: 'string', default: '30s' },
    soak: { type: 'string', default: '10s' },
  },
  strict: true,
});
if (!values.log) throw new Error('--log is required: the operator log of a bench:rollout --keep-logs run');
const restFloorMs = parseDuration(values['reboot-time']) + parseDuration(values.soak);

/** The nodes of the run, in admission order, from the operator's JSON log lines. */
function measured(path: string): { nodes: Measured[]; k: number; rolloutMs: number } {
  const byNode = new Map<string, { admitted?: number; drainMs?: number; pods?: number; freed?: number }>();
  let config: { maxUnavailable?: string } | undefined;
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (!line.startsWith('{')) continue;
    const l = JSON.parse(line) as Record<string, unknown>;
    if (l.config && !config) config = l.config as { maxUnavailable?: string };
    if (typeof l.node !== 'string' || typeof l.time !== 'number') continue;
    const n = byNode.get(l.node) ?? {};
    byNode.set(l.node, n);
    if (l.msg === 'admitted') n.admitted ??= l.time;
    else if (l.msg === 'reboot granted' && n.drainMs === undefined) {
      const m = /drained (\d+) pod\(s\) in ([\d.]+)s/.exec(String(l.drain));
      if (!m) throw new Error(`${path}: node ${l.node}: unreadable drain summary ${JSON.stringify(l.drain)}`);
      n.pods = Number(m[1]);
      n.drainMs = Number(m[2]) * 1000;
    } else if (l.msg === 'slot released') n.freed ??= l.time;
  }
  const k = Number(config?.maxUnavailable);
  if (!Number.isInteger(k) || k < 1)
    throw new Error(
      `${path}: no absolute maxUnavailable in the operator's config line (${config?.maxUnavailable})`,
    );
  const done = [...byNode.values()].filter(
    (n): n is Required<typeof n> =>
      n.admitted !== undefined && n.drainMs !== undefined && n.pods !== undefined && n.freed !== undefined,
  );
  if (done.length === 0) throw new Error(`${path}: no node went through an attempt`);
  done.sort((a, b) => a.admitted - b.admitted);
  const start = done[0]?.admitted ?? 0;
  const nodes = done.map((n) => ({
    pods: n.pods,
    drainMs: n.drainMs,
    restMs: n.freed - n.admitted - n.drainMs,
    admittedMs: n.admitted - start,
  }));
  return { nodes, k, rolloutMs: Math.max(...done.map((n) => n.freed)) - start };
}

const run = measured(values.log);
const fit = fitContention(run.nodes);
const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const orders: { order: Order; label: string }[] = [
  { order: Order.measured, label: 'as admitted in the run (longest-waiting first)' },
  { order: Order.mostPods, label: 'most pods first' },
  { order: Order.mostPodsInTail, label: 'as admitted, but most pods first once 2·K or fewer wait' },
  { order: Order.spread, label: 'nodes with pods evenly spread through the order' },
];
console.log(
  `${run.nodes.length} nodes, K ${run.k}; from the first admission to the last slot freed ${s(run.rolloutMs)}`,
);
console.log(
  `contention fitted: a drain with pods takes ${s(fit.baseMs)}, then its pods leave at ${fit.podsPerSecond.toFixed(1)} pods/s shared by the drains in progress (drain times: RMS error ${s(fit.rmsErrorMs)})`,
);
console.log(
  '\n| order | rollout (model) | mean drain (model) | efficiency figure (model) |\n|---|---|---|---|',
);
for (const { order, label } of orders) {
  const r = play(run.nodes, run.k, fit, order, restFloorMs);
  console.log(
    `| ${label} | ${s(r.rolloutMs)} | ${s(r.meanDrainMs)} | ${(100 * r.efficiency).toFixed(1)} % |`,
  );
}
