/**
 * npm run chaos -- --runs N --seed S [--nodes M] [--max-unavailable K] [--policies] [--plans] [--fluo] [--gates] [--all]
 *   [--keep-logs DIR] [--part DIR]
 * npm run chaos -- --merge DIR/*.json
 *
 * Rollouts on one local control plane while faults of every kind strike at seeded moments
 * (src/sim/chaos.ts, src/sim/chaos-faults.ts); with --policies under two UpdatePolicies with zone caps,
 * with --plans beside an upgrade Plan over every node (src/sim/chaos-upgrade.ts), with --fluo a third of
 * the nodes on FLUO's real update-agent under a FLUO-protocol UpdatePolicy, the rest under nuo's, with
 * --gates under one UpdatePolicy with every gate (a health check on a custom resource the run flips,
 * waves with a failure budget the run's late node spends and a person resumes, a remediation, refreshes
 * and a budget for those: src/sim/chaos-gates.ts), with --all everything side by side (pools of FLUO's
 * agents, FleetLock clients, kured beside an upgrade Plan, one with every gate; 12 nodes by default:
 * src/sim/chaos-all.ts) and three more kinds of fault. Prints each run's plan and outcome, then a table of the
 * faults injected by kind and the violations by rule, and the command that replays the runs; publishes
 * the table in docs/benchmarks.md. Exits 1 on any violation.
 *
 * A campaign too long for one sitting runs in parts: `--part DIR` saves the part's tallies in
 * DIR/seed-S.json instead of publishing; `--merge` adds the parts up (contiguous seeds, one setting) and
 * publishes the whole campaign.
 *
 * The control plane's, operators' and agents' logs are copied to .tmp/chaos-logs-seed-S when a run has a
 * violation, or always to DIR with --keep-logs.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type ChaosResult, RULES, reproduceCommand, runChaos } from '../src/sim/chaos.ts';
import { FAULT_KINDS } from '../src/sim/chaos-plan.ts';
import { type ChaosPart, mergeParts } from './chaos-parts.ts';
import { publish } from './report.ts';

const USAGE = `usage: npm run chaos -- --runs N --seed S [--nodes M] [--max-unavailable K]
         [--policies] [--plans] [--fluo] [--gates] [--all] [--keep-logs DIR] [--part DIR]
       npm run chaos -- --merge DIR/*.json
(bench/chaos.ts's opening comment says what each campaign runs)`;

/** The flags, or the usage and exit 2 on --help or a flag this script does not know. */
function flags() {
  try {
    const parsed = parseArgs({ options: OPTIONS, allowPositionals: true, strict: true });
    if (parsed.values.help) {
      console.log(USAGE);
      process.exit(0);
    }
    return parsed;
  } catch (err) {
    console.error(`${(err as Error).message}\n${USAGE}`);
    process.exit(2);
  }
}

const OPTIONS = {
  runs: { type: 'string', default: '10' },
  seed: { type: 'string', default: '1' },
  nodes: { type: 'string' },
  'max-unavailable': { type: 'string', default: '2' },
  'keep-logs': { type: 'string' },
  part: { type: 'string' },
  merge: { type: 'boolean', default: false },
  policies: { type: 'boolean', default: false },
  plans: { type: 'boolean', default: false },
  fluo: { type: 'boolean', default: false },
  gates: { type: 'boolean', default: false },
  all: { type: 'boolean', default: false },
  help: { type: 'boolean', default: false },
} as const;
const { values, positionals } = flags();

function int(name: string, value: string | undefined, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new Error(`--${name} must be an integer in [${min}, ${max}], got ${value}`);
  }
  return n;
}

function tally(
  result: ChaosResult,
  o: Pick<
    ChaosPart,
    'seed' | 'runs' | 'nodes' | 'maxUnavailable' | 'policies' | 'plans' | 'fluo' | 'gates' | 'all'
  >,
  elapsedMs: number,
): ChaosPart {
  return {
    ...o,
    finished: result.runs.filter((r) => r.finished).length,
    expectedStalls: result.expectedStalls,
    injected: result.injected,
    skipped: result.runs.reduce((s, r) => s + r.skipped.length, 0),
    violations: result.violations,
    runaways: result.runs.reduce((s, r) => s + r.runaways.length, 0),
    elapsedMs,
    versions: result.versions,
    ...(result.gates ? { gatesSeen: result.gates } : {}),
    ...(result.exercised ? { exercised: result.exercised } : {}),
  };
}

const row = (label: string, value: string | number) => `  ${label.padEnd(34)} ${value}`;

/** What a gates campaign did to the gates, and what the checker saw of them. */
const GATES_ROWS = [
  ['unhealthy', 'health check: unhealthy spells played'],
  ['halts', 'pool Halted (the checker saw it turn True)'],
  ['resumes', 'nuo policy resume run by the person'],
  ['remediations', 'remediation admissions (the checker read)'],
  ['refreshes', 'refresh admissions (the checker read)'],
] as const;
/** What an `--all` campaign exercised (RunResult.exercised's keys), in the order the report gives them. */
const EXERCISED_ROWS = [
  ['holds.healthCheck', 'pool held by a health check (object or PromQL)'],
  ['checker.unhealthy', 'health resources seen unhealthy by the checker'],
  ['people.metricBad', 'PromQL metric turned bad'],
  ['holds.halted', 'pool Halted by its failure budget'],
  ['people.resumes', 'nuo policy resume run by the person'],
  ['checker.remediations', 'remediation admissions'],
  ['checker.refreshes', 'refresh admissions'],
  ['holds.reasonBudget', 'nodes waiting on a reason budget (spec.budgets)'],
  ['holds.podBlockerPool', 'pool held by a Pool-scoped blocking pod'],
  ['holds.podBlockerNode', 'node held by a Node-scoped blocking pod'],
  ['people.blockingPods', 'blocking pods run'],
  ['holds.circuitOpen', 'circuit breaker open (pool held)'],
  ['checker.circuitTrips', 'circuit breaker tripped (the checker saw)'],
  ['people.autoscalerTaints', 'autoscaler deletion taints'],
  ['holds.autoscaler', 'nodes held by an autoscaler taint'],
  ['people.doNotDisruptPods', 'do-not-disrupt pods run'],
  ['holds.doNotDisrupt', 'nodes held by a do-not-disrupt pod'],
  ['holds.planAttempts', 'Plan attempts (Upgrading)'],
  ['reboots.planJobs', "reboots by a Plan's Job"],
  ['reboots.fluo', "reboots by FLUO's agent"],
  ['reboots.fleetlock', 'reboots by a FleetLock client'],
  ['reboots.kured', 'reboots by kured'],
  ['reboots.gates', "reboots by nuo's agent in the gated pool"],
] as const;
const totalOf = (p: ChaosPart) => RULES.reduce((s, r) => s + (p.violations[r] ?? 0), 0);

function summary(p: ChaosPart): string[] {
  return [
    `Chaos: ${p.runs} run(s), seeds ${p.seed}…${p.seed + p.runs - 1}, ${p.nodes} nodes, maxUnavailable ${p.maxUnavailable}${p.policies ? ' per pool (two UpdatePolicies, zone cap 1)' : ''}${p.plans ? ', an upgrade Plan over every node' : ''}${p.fluo ? " per pool (one of FLUO's real update-agents, one of nuo's)" : ''}${p.gates ? ', every gate of one UpdatePolicy' : ''}${p.all ? ', everything on (pools of FLUO, FleetLock, kured and a Plan, one with every gate)' : ''}, ${(p.elapsedMs / 1000).toFixed(0)}s`,
    row('runs finished', `${p.finished}/${p.runs}`),
    row('expected stalls (never returns)', p.expectedStalls),
    'faults injected',
    ...FAULT_KINDS.map((k) => row(`  ${k}`, p.injected[k] ?? 0)),
    row('  skipped', p.skipped),
    ...(p.gates
      ? ['gates', ...GATES_ROWS.map(([k, label]) => row(`  ${label}`, p.gatesSeen?.[k] ?? 0))]
      : []),
    ...(p.all
      ? ['exercised', ...EXERCISED_ROWS.map(([k, label]) => row(`  ${label}`, p.exercised?.[k] ?? 0))]
      : []),
    'violations',
    ...RULES.map((r) => row(`  ${r}`, p.violations[r] ?? 0)),
    row('  total', totalOf(p)),
    row('operators killed (runaway or hung)', p.runaways),
  ];
}

/** What an `--all` campaign runs, for its published section. */
const ALL_TEXT =
  " on one cluster, side by side: two nodes on FLUO's real update-agent under a FLUO-protocol policy (budget 1); two FleetLock clients (Zincati's loop) asking the two operator replicas' FleetLock servers (budget 1); a mixed pool (budget as given) of kured 1.23.0 on one node beside two of nuo's agents, which an upgrade Plan updates (a prepare Job, then a Job that reboots its node; concurrency drawn from the seed); and the rest under one UpdatePolicy with every gate: the gates run's (a CEL health check on a custom resource turned unhealthy, waves with a failure budget a late node spends and a person resumes, a remediation, refreshes, a budget for those reasons) with a PromQL health check against a real Prometheus (Debian's) scraping a metric the run turns bad, pod blockers of both scopes whose pods the run starts, a circuit breaker (maxNotReady 1), a cluster autoscaler's deletion taint on a node for a while, and a pod annotated do-not-disrupt. Beyond the base faults: a running leader's wall clock stepped back 2 to 10 minutes (libfaketime reading its offset from a file), a kubelet posting a rebooted node's boot ID 3 to 12 s after its agent or FleetLock client started, and Prometheus stopped (SIGSTOP) for 12 to 25 s. The checker holds every pool to its budget (with its protocol), the Plan to its concurrency, kured's lock, the gates to their rules (health checks, halts, reason budgets, remediation rate, blockers, the breaker, do-not-disrupt) and the node gates (backoff, loop limit, skip, autoscaler taint; a slot freed only on the new boot; refreshes counted)";

function publishCampaign(p: ChaosPart, command: string): void {
  const cell = (label: string, value: string | number) => `| ${label} | ${value} |`;
  publish({
    id: `chaos${p.policies ? '-policies' : ''}${p.plans ? '-plans' : ''}${p.fluo ? '-fluo' : ''}${p.gates ? '-gates' : ''}${p.all ? '-all' : ''}`,
    title: `Fault injection${p.policies ? ' with UpdatePolicies: two pools, zone caps' : p.fluo ? " with FLUO's real update-agent in a pool of its own" : p.gates ? ' through the gates: health check, waves and halts, remediation, refresh, reason budgets' : p.all ? ' with everything on: every gate, Plans, FLUO, FleetLock and kured side by side' : ' against the safety rules'}${p.plans ? ', an upgrade Plan beside the reboots' : ''}`,
    versions: p.versions,
    command,
    body: [
      `${p.runs} seeded run(s) (seeds ${p.seed}…${p.seed + p.runs - 1}), ${p.nodes} nodes, maxUnavailable ${p.maxUnavailable}${p.policies ? ' in each of two pools (UpdatePolicies) with a zone cap of 1, every pool budget and zone cap checked' : ''}${p.plans ? '; in each run an upgrade Plan over every node (its concurrency, drain and reboot drawn from the seed) shares the budget with the reboots, its concurrency checked too' : ''}${p.fluo ? " in each of two pools: a third of the nodes run FLUO's update-agent (built from its pinned source, one runc container per node) under `agentProtocol: flatcar-update-operator`, the others nuo's agents; every fault strikes both (an agent restart kills FLUO's container), and both pool budgets are checked" : ''}${p.gates ? " under one UpdatePolicy with every gate: a health check (CEL) on a custom resource the run turns unhealthy 1 to 3 times for 3 to 15 s; waves (1 or 2 nodes, ×2) with a failure budget of 1, spent by a node that comes back after its returnTimeout (the plan's never-returning node, else in 60 % of the runs one of the updated nodes; faults spend it too) and resumed with `nuo policy resume` 1 to 8 s after the person reads `Halted`; a node condition (`KernelDeadlock`) remediated, set as node-problem-detector would and cleared after the reboot (maxPerHour 1); nodes booted 3 h ago refreshed (maxUptime 1h); a budget of 1 for Remediation and Refresh. The checker reads the custom resource and the policy itself and holds nuo to: no admission while the check had failed longer than a reading may be old (--blocker-interval 1 s + 4 s), none while Halted until resumed (ordered by resourceVersion), each wave's allowance, the remediation rate, the reason budget" : ''}${p.all ? ALL_TEXT : ''}, ${(p.elapsedMs / 3_600_000).toFixed(1)} h of runs; faults of ${FAULT_KINDS.length} kinds at`,
      'seeded moments of rollouts on one local control plane, an independent checker watching every node.',
      '',
      '| | count |',
      '|---|---|',
      cell('runs finished', `${p.finished}/${p.runs}`),
      cell('expected stalls (a node that never returns holds its slot)', p.expectedStalls),
      ...FAULT_KINDS.map((k) => cell(`fault: ${k}`, p.injected[k] ?? 0)),
      cell('faults that could not strike (skipped)', p.skipped),
      ...(p.gates ? GATES_ROWS.map(([k, label]) => cell(label, p.gatesSeen?.[k] ?? 0)) : []),
      ...(p.all
        ? EXERCISED_ROWS.map(([k, label]) => cell(`exercised: ${label}`, p.exercised?.[k] ?? 0))
        : []),
      ...RULES.map((r) => cell(`**violations: ${r}**`, `**${p.violations[r] ?? 0}**`)),
      cell('operators killed: memory runaway, or hung after SIGTERM', p.runaways),
    ].join('\n'),
  });
}

if (values.merge) {
  if (positionals.length === 0)
    throw new Error('--merge needs the parts: npm run chaos -- --merge DIR/*.json');
  const parts = positionals.map((file) => JSON.parse(readFileSync(file, 'utf8')) as ChaosPart);
  const campaign = mergeParts(parts);
  process.stdout.write(`${summary(campaign).join('\n')}\n`);
  const commands = [...parts]
    .sort((a, b) => a.seed - b.seed)
    .map((p) =>
      reproduceCommand({
        runs: p.runs,
        seed: p.seed,
        nodes: p.nodes,
        maxUnavailable: p.maxUnavailable,
        policies: p.policies === true,
        plans: p.plans === true,
        fluo: p.fluo === true,
        gates: p.gates === true,
        all: p.all === true,
      }),
    );
  publishCampaign(campaign, commands.join('`, then `'));
  process.exit(totalOf(campaign) > 0 || campaign.runaways > 0 ? 1 : 0);
}

const runs = int('runs', values.runs, 1);
const seed = int('seed', values.seed, 0, 2 ** 32 - 1);
const nodes = int('nodes', values.nodes ?? (values.all ? '12' : '6'), 2, 64);
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
  policies: values.policies,
  plans: values.plans,
  fluo: values.fluo,
  gates: values.gates,
  all: values.all,
  log: (line) => process.stdout.write(`${line}\n`),
});
const { policies, plans, fluo, gates, all } = values;
const part = tally(
  result,
  { seed, runs, nodes, maxUnavailable, policies, plans, fluo, gates, all },
  Date.now() - started,
);
const lines = ['', ...summary(part)];
for (const r of result.runs.flatMap((r) => r.runaways)) lines.push(`  ${r}`);
lines.push('', `reproduce: ${result.reproduce}`);
for (const r of result.runs.filter((r) => r.violations.length > 0 || r.runaways.length > 0)) {
  lines.push(
    `  run ${r.index + 1}'s plan alone (the pods placed afresh): ${reproduceCommand({ runs: 1, seed: r.plan.seed, nodes, maxUnavailable, policies, plans, fluo, gates, all })}`,
    `  run ${r.index + 1} after the runs before it (the pods where they left them): ${reproduceCommand({ runs: r.index + 1, seed, nodes, maxUnavailable, policies, plans, fluo, gates, all })}`,
  );
}
if (result.logsKeptIn) lines.push(`logs (operators, agents, control plane): ${result.logsKeptIn}`);
process.stdout.write(`${lines.join('\n')}\n`);
if (values.part) {
  mkdirSync(values.part, { recursive: true });
  const file = join(values.part, `seed-${seed}.json`);
  writeFileSync(file, `${JSON.stringify(part, null, 2)}\n`);
  process.stdout.write(
    `part saved to ${file}; publish the campaign with: npm run chaos -- --merge ${values.part}/*.json\n`,
  );
} else {
  publishCampaign(part, result.reproduce);
}
process.exit(totalOf(part) > 0 || part.runaways > 0 ? 1 : 0);
