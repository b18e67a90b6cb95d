/**
 * `nuo whatif`: a snapshot of a cluster (read from it or from files), its twin on a local cluster, and a
 * rollout of the twin predicting the real one's (whatif-run.ts).
 */
import { parseArgs } from 'node:util';
import type { KubeConfig } from '@kubernetes/client-node';
import { parseRfc3339 } from '../util/rfc3339.ts';
import { readSnapshotFiles } from '../whatif/parse.ts';
import { clusterSources, readSnapshotFrom } from '../whatif/read-cluster.ts';
import { formatSnapshot, type Snapshot, SnapshotError, snapshotCounts } from '../whatif/snapshot.ts';
import { MAX_SPEED } from '../whatif/timing.ts';
import { buildTwin } from '../whatif/twin.ts';
import { durationFlag } from './args.ts';
import { interrupted } from './cluster.ts';
import { type Command, err, out, UsageError } from './command.ts';
import { loadHarness, type WhatifHarness, type WhatifRunHarness } from './harness.ts';
import { explainApiError, kubeconfigFrom, kubeFlags, kubeFlagsUsage } from './kube.ts';
import { RUN_FORMATS, type RunFlags, type RunFormat, runPrediction } from './whatif-run.ts';
import { DEFAULT_SUGGEST_MAX, runSuggest, suggestFlags } from './whatif-suggest.ts';

const FORMATS = ['yaml', 'json'] as const;
const SUBCOMMANDS = ['snapshot', 'twin', 'run'] as const;
type Format = (typeof FORMATS)[number];

/** Reads the snapshot: from files when `from` is given, else from the kubeconfig's cluster. */
async function readSnapshot(
  from: string | undefined,
  kc: () => KubeConfig,
): Promise<{ snapshot: Snapshot; notes: string[]; source: string }> {
  if (from !== undefined) return { ...readSnapshotFiles(from), source: from };
  const config = kc();
  const read = await readSnapshotFrom(clusterSources(config));
  return { ...read, source: `context ${config.getCurrentContext()} (${config.getCurrentCluster()?.server})` };
}

/** Reads the snapshot, or says why it cannot and returns the exit code. */
async function readOrExplain(values: {
  from?: string;
  kubeconfig?: string;
  context?: string;
}): Promise<{ snapshot: Snapshot; notes: string[]; source: string } | number> {
  let kc: KubeConfig | undefined;
  try {
    return await readSnapshot(values.from, () => {
      kc = kubeconfigFrom(values);
      return kc;
    });
  } catch (e) {
    if (e instanceof UsageError) throw e;
    if (e instanceof SnapshotError) {
      err(`nuo whatif: ${e.message}`);
      return 1;
    }
    if (!kc) throw e;
    err(explainApiError(e, kc));
    return 1;
  }
}

/** The longest rollout a run may wait for: its operator's token (a TokenRequest) lasts an hour. */
const MAX_RUN_MS = 50 * 60_000;

/** `nuo whatif run`'s flags, checked before anything is read. */
function runFlags(values: {
  output?: string;
  timeout?: string;
  policies?: string;
  'reboot-time'?: string;
  'return-time'?: string;
  speed?: string;
  start?: string;
  'stand-timeout'?: string;
  svg?: string;
}): RunFlags {
  const format = (values.output ?? 'table') as RunFormat;
  if (!RUN_FORMATS.includes(format))
    throw new UsageError(`--output must be table or json, got "${values.output}"`);
  const speed = Number(values.speed ?? '1');
  if (!(Number.isFinite(speed) && speed >= 1 && speed <= MAX_SPEED))
    throw new UsageError(`--speed must be a number from 1 to ${MAX_SPEED}, got "${values.speed}"`);
  const timeoutMs = durationFlag('timeout', values.timeout, '30m');
  if (timeoutMs / speed > MAX_RUN_MS)
    throw new UsageError(
      `--timeout divided by --speed must be at most 50m (the twin's operator token lasts an hour), got ${values.timeout} at --speed ${speed}`,
    );
  const startMs = values.start === undefined ? undefined : parseRfc3339(values.start);
  if (values.start !== undefined && startMs === undefined)
    throw new UsageError(`--start must be an RFC 3339 time (2026-11-30T01:00:00Z), got "${values.start}"`);
  return {
    format,
    timeoutMs,
    speed,
    ...(startMs === undefined ? {} : { startMs }),
    ...(values['reboot-time'] !== undefined
      ? { rebootMs: durationFlag('reboot-time', values['reboot-time'], '1m') }
      : {}),
    ...(values['return-time'] !== undefined
      ? { returnMs: durationFlag('return-time', values['return-time'], '0s') }
      : {}),
    standTimeoutMs: durationFlag('stand-timeout', values['stand-timeout'], '5m'),
    ...(values.svg !== undefined ? { svg: values.svg } : {}),
    ...(values.policies !== undefined ? { policies: values.policies } : {}),
  };
}

/** `nuo whatif twin`: the snapshot's twin on a local cluster, until Ctrl-C. */
async function runTwin(from: string, timeoutMs: number): Promise<number> {
  const harness = await loadHarness<WhatifHarness>(
    'whatif-twin.ts',
    'whatif twin',
    'nuo -- whatif twin --from PATH',
  );
  if (!harness) return 2;
  let read: { snapshot: Snapshot; notes: string[] };
  try {
    read = readSnapshotFiles(from);
  } catch (e) {
    if (!(e instanceof SnapshotError)) throw e;
    err(`nuo whatif: ${e.message}`);
    return 1;
  }
  for (const note of read.notes) err(`note: ${note}`);
  const twin = buildTwin(read.snapshot);
  const log = (line: string) => err(`  ${line}`);
  let started: Awaited<ReturnType<WhatifHarness['startTwin']>>;
  const since = performance.now();
  try {
    started = await harness.startTwin(read.snapshot, twin, { timeoutMs, log });
  } catch (e) {
    err(`nuo whatif twin: ${(e as Error).message}`);
    return 1;
  }
  const { cluster, result } = started;
  try {
    out(
      `Twin of ${from} up in ${((performance.now() - since) / 1000).toFixed(1)} s: ${snapshotCounts(read.snapshot)}; ${result.unready.length} pods made unready as in the snapshot.`,
    );
    if (twin.notes.length > 0) out(['Left out or changed:', ...twin.notes.map((n) => `  ${n}`)].join('\n'));
    if (result.differences.length > 0)
      out(['Differs from the snapshot:', ...result.differences.map((d) => `  ${d}`)].join('\n'));
    out(
      [
        `  export KUBECONFIG=${cluster.kubeconfigPath}`,
        `  ${cluster.binaries.path.kubectl} get nodes -L topology.kubernetes.io/zone`,
        `Component logs: ${cluster.dir}/logs`,
        'Press Ctrl-C to stop it; everything is removed on exit.',
      ].join('\n'),
    );
    await interrupted();
  } finally {
    err('stopping the twin…');
    await cluster.stop();
  }
  return 0;
}

export const whatifCommand: Command = {
  name: 'whatif',
  summary: 'predict a rollout: snapshot a cluster (read-only), stand its twin up locally, roll it',
  usage: [
    'Usage: nuo whatif snapshot [--from PATH] [-o yaml|json] [flags]',
    '       nuo whatif twin --from PATH [--timeout D]',
    '       nuo whatif run [--from PATH] [--policies FILE] [--reboot-time D] [--return-time D] [--speed N]',
    '                      [--start T] [--timeout D] [-o table|json] [--svg FILE]',
    '                      [--suggest [--suggest-max N] [--suggest-policy NAME] [--window D]]',
    '',
    'Writes a snapshot to stdout: the Nodes, Pods and their owners (Deployments, ReplicaSets,',
    'StatefulSets, DaemonSets, Jobs), PodDisruptionBudgets, PriorityClasses, Namespaces, UpdatePolicies and',
    'Plans that decide how a rollout goes, cut down to what scheduling and eviction read: no environment',
    'values, commands or volume sources, and no Secret or ConfigMap (never read). From a cluster it only',
    'lists (in pages of 500). See docs/whatif.md.',
    '',
    'Flags:',
    '  --from PATH         read a snapshot file, or a directory of files as `kubectl get -A -o yaml` (or',
    '                      -o json) writes them, instead of the cluster; its objects are checked and cut',
    '                      down as a live read is',
    '  -o, --output FMT    yaml (default) or json: one `kind: List`',
    ...kubeFlagsUsage,
    '',
    'twin: starts a local control plane with KWOK nodes, makes the snapshot at PATH again on it (nodes,',
    'workloads placed by its scheduler, unready replicas, PDBs, policies, Plans), waits until it stands',
    'as the snapshot did, prints what it left out and a KUBECONFIG, and runs until Ctrl-C.',
    '  --timeout D         how long the twin may take to stand (default 5m)',
    '',
    'run: takes a snapshot (of the cluster, or --from PATH), stands its twin up, rolls it with the real',
    "operator and simulated hosts running nuo's agent under the snapshot's UpdatePolicies, and reports",
    "the predicted total and per-pool time, each node's timeline, drains that waited on a PDB and why,",
    'nodes that did not finish and why, pods evicted again. Exits 3 when the rollout could not finish.',
    "  --policies FILE     roll under the UpdatePolicies in FILE instead of the snapshot's",
    '  --reboot-time D     how long a host is down for its reboot, until it boots again (default: the',
    "                      median nuo measured in the host's pool, in its UpdatePolicy's status, else 1m)",
    '  --return-time D     from the new boot until the node is Ready (default: as measured, else 0s)',
    '  --speed N           roll the twin N times faster than real time (1 to 100, default 1): every',
    "                      policy duration and the hosts' times divided by N, every reported time",
    '                      multiplied back; windows are read on a clock running N times as fast',
    '  --start T           the time (RFC 3339) the rollout starts at, on the clock windows and',
    '                      scheduled budgets are read on (default: now, when the operator starts)',
    '  --timeout D         how long the rollout may run (default 30m; divided by --speed, at most 50m);',
    '                      nodes unfinished then are reported with why',
    '  --stand-timeout D   how long the twin may take to stand (default 5m)',
    '  -o, --output FMT    table (default) or json',
    '  --svg FILE          also write the timeline as an SVG picture',
    '  --suggest           try settings of one UpdatePolicy (budget, per-zone cap, zone order), each on a',
    '                      fresh twin, and suggest the fastest that finished its pool with no drain',
    '                      waiting on a PDB and inside --window, as a patch; exits 3 when none did',
    `  --suggest-max N     at most N settings tried (default ${DEFAULT_SUGGEST_MAX}), smaller budgets first`,
    '  --suggest-policy NAME  the UpdatePolicy varied (when the snapshot holds several)',
    '  --window D          with --suggest: the maintenance window the pool must finish in',
    'Runs from a source checkout only (npm install): the build leaves out the harness.',
  ].join('\n'),
  async run(argv) {
    const { values, positionals } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: true,
      options: {
        from: { type: 'string' },
        output: { type: 'string', short: 'o' },
        timeout: { type: 'string' },
        policies: { type: 'string' },
        'reboot-time': { type: 'string' },
        'return-time': { type: 'string' },
        speed: { type: 'string' },
        start: { type: 'string' },
        'stand-timeout': { type: 'string' },
        svg: { type: 'string' },
        suggest: { type: 'boolean' },
        'suggest-max': { type: 'string' },
        'suggest-policy': { type: 'string' },
        window: { type: 'string' },
        ...kubeFlags,
      },
    });
    const [sub, ...rest] = positionals;
    if (!SUBCOMMANDS.includes(sub as (typeof SUBCOMMANDS)[number]))
      throw new UsageError(
        sub
          ? `unknown subcommand "${sub}": use snapshot, twin or run`
          : 'missing subcommand: snapshot, twin or run',
      );
    if (rest.length > 0) throw new UsageError(`unexpected arguments: ${rest.join(' ')}`);
    if (sub === 'twin') {
      if (values.from === undefined)
        throw new UsageError('twin needs --from PATH: the snapshot to make again');
      return runTwin(values.from, durationFlag('timeout', values.timeout, '5m'));
    }
    if (values.from !== undefined && (values.kubeconfig !== undefined || values.context !== undefined))
      throw new UsageError(
        '--from reads files: --kubeconfig and --context name a cluster, so give one or the other',
      );
    const flags = sub === 'run' ? runFlags(values) : undefined;
    const suggest = suggestFlags(values);
    if (suggest && !flags) throw new UsageError('--suggest goes with run');
    const format = (values.output ?? 'yaml') as Format;
    if (!flags && !FORMATS.includes(format))
      throw new UsageError(`--output must be yaml or json, got "${values.output}"`);
    // The harness first: a build without it says so before reading a large cluster.
    const harness = flags
      ? await loadHarness<WhatifRunHarness>('whatif-run.ts', 'whatif run', 'nuo -- whatif run')
      : undefined;
    if (flags && !harness) return 2;
    const read = await readOrExplain(values);
    if (typeof read === 'number') return read;
    if (flags && harness && suggest) return runSuggest(harness, read, flags, suggest);
    if (flags && harness) return runPrediction(harness, read, flags);
    const taken = new Date().toISOString();
    const header = [`nuo whatif snapshot of ${read.source}, ${taken}`, snapshotCounts(read.snapshot)];
    process.stdout.write(formatSnapshot(read.snapshot, format, header));
    for (const note of read.notes) err(`note: ${note}`);
    err(`snapshot of ${read.source}: ${snapshotCounts(read.snapshot)}`);
    return 0;
  },
};
