/** `nuo whatif snapshot`: what a rollout prediction starts from, read from a cluster or from files. */
import { parseArgs } from 'node:util';
import type { KubeConfig } from '@kubernetes/client-node';
import { readSnapshotFiles } from '../whatif/parse.ts';
import { clusterSources, readSnapshotFrom } from '../whatif/read-cluster.ts';
import { formatSnapshot, type Snapshot, SnapshotError, snapshotCounts } from '../whatif/snapshot.ts';
import { type Command, err, UsageError } from './command.ts';
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

export const whatifCommand: Command = {
  name: 'whatif',
  summary: 'snapshot a cluster (read-only) for predicting a rollout on a local twin of it',
  usage: [
    'Usage: nuo whatif snapshot [--from PATH] [-o yaml|json] [flags]',
    '',
    'Writes a snapshot to stdout: the Nodes, Pods and their owners (Deployments, ReplicaSets,',
    'StatefulSets, DaemonSets, Jobs), PodDisruptionBudgets, PriorityClasses, Namespaces, UpdatePolicies and',
    'Plans that decide how a rollout goes, cut down to what scheduling and eviction read: no environment',
    'values, commands or volume sources, and no Secret or ConfigMap (never read). From a cluster it only',
    'lists (get/list, in pages of 500). See docs/whatif.md.',
    '',
    'Flags:',
    '  --from PATH         read a snapshot file, or a directory of files as `kubectl get -A -o yaml` (or',
    '                      -o json) writes them, instead of the cluster; its objects are checked and cut',
    '                      down as a live read is',
    '  -o, --output FMT    yaml (default) or json: one `kind: List`',
    ...kubeFlagsUsage,
  ].join('\n'),
  async run(argv) {
    const { values, positionals } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: true,
      options: {
        from: { type: 'string' },
        output: { type: 'string', short: 'o', default: 'yaml' },
        ...kubeFlags,
      },
    });
    const [sub, ...rest] = positionals;
    if (sub !== 'snapshot')
      throw new UsageError(
        sub ? `unknown subcommand "${sub}": use snapshot` : 'missing subcommand: snapshot',
      );
    if (rest.length > 0) throw new UsageError(`unexpected arguments: ${rest.join(' ')}`);
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
