/**
 * npm run chaos -- --runs N --seed S [--nodes M] [--max-unavailable K] [--keep-logs DIR]
 *
 * The control plane's, operators' and agents' logs are copied to .tmp/chaos-logs-seed-S when a run has a
 * violation, or always to DIR with --keep-logs.
 *
 * Rollouts on one local control plane while faults strike at random moments (src/sim/chaos.ts): the
 * operator leader SIGKILLed, agents restarted, kube-apiserver restarted, delayed reboots and sometimes a
 * node that never returns. Prints each run's plan and outcome, then a table of the faults injected by
 * kind and the violations by rule, and the command that replays the runs. Exits 1 on any violation.
 */
import { parseArgs } from 'node:util';
import { RULES, reproduceCommand, runChaos } from '../src/sim/chaos.ts';
import { FAULT_KINDS } from '../src/sim/chaos-plan.ts';
import { publish } from './report.ts';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '10' },
    seed: { type: 'string', default: '1' },
    nodes: { type: 'string', default: '6' },
    'max-unavailable': { type: 'string', default: '2' },
    'keep-logs': { type: 'string' },
  },
  strict: true,
});

function int(name: string, value: string | undefined, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new Error(`--${name} must be an integer in [${min}, ${max}], got ${value}`);
  }
  return n;
}

const runs = int('runs', values.runs, 1);
const seed = int('seed', values.seed, 0, 2 ** 32 - 1);
const nodes = int('nodes', values.nodes, 2, 64);
const maxUnavailable = int('max-unavailable', values['max-unavailable'], 1, nodes);
// Logs are kept when a run has a violation, or always when --keep-logs names a directory.
const keepLogsDir = values['keep-logs'] ?? `.tmp/chaos-logs-seed-${seed}`;

const started = Date.now();
const result = await runChaos({
  runs,
  seed,
  nodes,
  maxUnavailable,
  keepLogsDir,
  keepLogsAlways: values['keep-logs'] !== undefined,
  log: (line) => process.stdout.write(`${line}\n`),
});

const row = (label: string, value: string | number) => `  ${label.padEnd(34)} ${value}`;
const totalViolations = RULES.reduce((s, r) => s + result.violations[r], 0);
const runaways = result.runs.flatMap((r) => r.runaways);
const lines = [
  '',
  `Chaos: ${runs} run(s), seeds ${seed}…${seed + runs - 1}, ${nodes} nodes, maxUnavailable ${maxUnavailable}, ${((Date.now() - started) / 1000).toFixed(0)}s`,
  row('runs finished', `${result.runs.filter((r) => r.finished).length}/${runs}`),
  row('expected stalls (never returns)', result.expectedStalls),
  'faults injected',
  ...FAULT_KINDS.map((k) => row(`  ${k}`, result.injected[k])),
  row(
    '  skipped',
    result.runs.reduce((s, r) => s + r.skipped.length, 0),
  ),
  'violations',
  ...RULES.map((r) => row(`  ${r}`, result.violations[r])),
  row('  total', totalViolations),
  row('operators killed as runaways (memory guard)', runaways.length),
  ...runaways.map((r) => `  ${r}`),
  '',
  `reproduce: ${result.reproduce}`,
];
const failing = result.runs.filter((r) => r.violations.length > 0 || r.runaways.length > 0);
for (const r of failing) {
  lines.push(
    `  run ${r.index + 1}'s plan alone (the pods placed afresh): ${reproduceCommand({ runs: 1, seed: r.plan.seed, nodes, maxUnavailable })}`,
    `  run ${r.index + 1} after the runs before it (the pods where they left them): ${reproduceCommand({ runs: r.index + 1, seed, nodes, maxUnavailable })}`,
  );
}
if (result.logsKeptIn) lines.push(`logs (operators, agents, control plane): ${result.logsKeptIn}`);
process.stdout.write(`${lines.join('\n')}\n`);
const cell = (label: string, value: string | number) => `| ${label} | ${value} |`;
publish({
  id: 'chaos',
  title: 'Fault injection against the safety rules',
  versions: result.versions,
  command: result.reproduce,
  body: [
    `${runs} seeded run(s) (seeds ${seed}…${seed + runs - 1}), ${nodes} nodes, maxUnavailable ${maxUnavailable}; faults at random`,
    'moments of rollouts on one local control plane, an independent checker watching every node.',
    '',
    '| | count |',
    '|---|---|',
    cell('runs finished', `${result.runs.filter((r) => r.finished).length}/${runs}`),
    cell('expected stalls (a node that never returns holds its slot)', result.expectedStalls),
    ...FAULT_KINDS.map((k) => cell(`fault: ${k}`, result.injected[k])),
    ...RULES.map((r) => cell(`**violations: ${r}**`, `**${result.violations[r]}**`)),
    cell('operators killed as runaways (memory guard)', runaways.length),
  ].join('\n'),
});
process.exit(totalViolations > 0 || runaways.length > 0 ? 1 : 0);
