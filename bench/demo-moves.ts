/**
 * npm run bench:demo-moves [-- --runs N]
 *
 * Evictions per pod in `nuo demo` with its defaults (12 nodes in 3 zones, maxUnavailable 3, at most 1 per
 * zone, 18 pods under PDBs), N runs each on a cluster of its own, against the bound no rollout filling
 * its budget at once can beat without spare capacity (src/sim/moves.ts, decision 0065).
 */
import { parseArgs } from 'node:util';
import { runDemo } from '../src/sim/demo.ts';
import type { Moves } from '../src/sim/moves.ts';
import { publish, type Versions } from './report.ts';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '3' } }, strict: true });
const runs = Number(values.runs);
if (!Number.isInteger(runs) || runs < 1)
  throw new Error(`--runs must be a positive integer, got ${values.runs}`);

const rows: string[] = [];
let versions: Versions | undefined;
for (let i = 1; i <= runs; i++) {
  let moved: Moves | undefined;
  const code = await runDemo({
    nodes: 12,
    zones: 3,
    maxUnavailable: 3,
    maxUnavailablePerZone: 1,
    rebootMs: 5000,
    soakMs: 2000,
    plan: false,
    keep: false,
    vms: 0,
    out: (text) => process.stdout.write(text),
    tty: false,
    onMoves: (m, v) => {
      moved = m;
      versions = v;
    },
  });
  if (code !== 0 || !moved) throw new Error(`run ${i} of ${runs} failed (exit ${code}); nothing published`);
  const m: Moves = moved;
  const per = (n: number) => (n / m.pods).toFixed(2);
  rows.push(
    `| ${i} | ${m.pods} | ${m.evictions} | **${per(m.evictions)}** | ${per(m.bound)} (${m.bound}) | ${per(m.pods + (m.pods * 3) / 12)} | ${m.forced} / ${m.missed} |`,
  );
}
publish({
  id: 'demo-moves',
  title: 'Evictions per pod in `npm run demo` (12 nodes, maxUnavailable 3, at most 1 per zone)',
  ...(versions ? { versions } : {}),
  command: `npm run bench:demo-moves -- --runs ${runs}`,
  body: [
    "`nuo demo`'s defaults: 12 simulated nodes in 3 zones, every one needing a reboot, 18 pods in 2 Deployments under PDBs (maxUnavailable 1), each spread over the zones; pods watched by the demo, independently of the operator.",
    'The bound: every pod is evicted once, and the pods of the first K nodes drained, which can land only on nodes still to drain, once more; no rollout that fills its K slots at once can evict fewer than P + the pods on the K nodes holding the fewest at the start, P·(1 + K/N) with the pods spread evenly ([decision 0065](decisions/0065-steering-evicted-pods.md)).',
    'A pod moved again was either placed before any node was updated (forced: the bound counts these) or placed on a node still to drain while an updated node was there (steering missed).',
    '',
    '| run | pods P | evictions | **evictions per pod** | bound per pod (evictions) | P·(1 + K/N) per pod, pods spread evenly | moved again: forced / steering missed |',
    '|---|---|---|---|---|---|---|',
    ...rows,
  ].join('\n'),
});
