/** `nuo whatif snapshot`: what a rollout prediction starts from, read from a cluster or from files. */
import { parseArgs } from 'node:util';
import type { KubeConfig } from '@kubernetes/client-node';
import { readSnapshotFiles } from '../whatif/parse.ts';
import { clusterSources, readSnapshotFrom } from '../whatif/read-cluster.ts';
import { formatSnapshot, type Snapshot, SnapshotError, snapshotCounts } from '../whatif/snapshot.ts';
import { buildTwin } from '../whatif/twin.ts';
import { durationFlag } from './args.ts';
import { interrupted } from './cluster.ts';
import { type Command, err, out, UsageError } from './command.ts';
import { loadHarness, type WhatifHarness } from './harness.ts';
import { explainApiError, kubeconfigFrom, kubeFlags, kubeFlagsUsage } from './kube.ts';

const FORMATS = ['yaml', 'json'] as const;
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
  summary: 'snapshot a cluster (read-only), or make a snapshot again on a local twin, to predict a rollout',
  usage: [
    'Usage: nuo whatif snapshot [--from PATH] [-o yaml|json] [flags]',
    '       nuo whatif twin --from PATH [--timeout D]',
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
    'Runs from a source checkout only (npm install): the build leaves out the harness.',
  ].join('\n'),
  async run(argv) {
    const { values, positionals } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: true,
      options: {
        from: { type: 'string' },
        output: { type: 'string', short: 'o', default: 'yaml' },
        timeout: { type: 'string' },
        ...kubeFlags,
      },
    });
    const [sub, ...rest] = positionals;
    if (sub !== 'snapshot' && sub !== 'twin')
      throw new UsageError(
        sub ? `unknown subcommand "${sub}": use snapshot or twin` : 'missing subcommand: snapshot or twin',
      );
    if (rest.length > 0) throw new UsageError(`unexpected arguments: ${rest.join(' ')}`);
    if (sub === 'twin') {
      if (values.from === undefined)
        throw new UsageError('twin needs --from PATH: the snapshot to make again');
      return runTwin(values.from, durationFlag('timeout', values.timeout, '5m'));
    }
    const format = values.output as Format;
    if (!FORMATS.includes(format))
      throw new UsageError(`--output must be yaml or json, got "${values.output}"`);
    if (values.from !== undefined && (values.kubeconfig !== undefined || values.context !== undefined))
      throw new UsageError(
        '--from reads files: --kubeconfig and --context name a cluster, so give one or the other',
      );
    let kc: KubeConfig | undefined;
    try {
      const { snapshot, notes, source } = await readSnapshot(values.from, () => {
        kc = kubeconfigFrom(values);
        return kc;
      });
      const taken = new Date().toISOString();
      const header = [`nuo whatif snapshot of ${source}, ${taken}`, snapshotCounts(snapshot)];
      process.stdout.write(formatSnapshot(snapshot, format, header));
      for (const note of notes) err(`note: ${note}`);
      err(`snapshot of ${source}: ${snapshotCounts(snapshot)}`);
      return 0;
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
  },
};
