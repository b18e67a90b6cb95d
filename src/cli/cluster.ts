import { parseArgs } from 'node:util';
import { positiveInt } from './args.ts';
import { type Command, UsageError } from './command.ts';
import { type ClusterHarness, loadHarness } from './harness.ts';

/** Resolves on Ctrl-C (SIGINT) or SIGTERM. */
export function interrupted(): Promise<void> {
  return new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
}

/** Starts a local cluster, prints how to reach it, and keeps it up until Ctrl-C. */
async function runLocalCluster(harness: ClusterHarness, nodes: number, zones: number): Promise<number> {
  const started = Date.now();
  const cluster = await harness.startCluster({
    nodes,
    zones,
    log: (line) => process.stderr.write(`  ${line}\n`),
  });
  try {
    process.stdout.write(
      [
        '',
        `Local cluster up in ${((Date.now() - started) / 1000).toFixed(1)} s: Kubernetes ${cluster.binaries.versions.kubernetes}, ${nodes} KWOK nodes.`,
        `  export KUBECONFIG=${cluster.kubeconfigPath}`,
        `  ${cluster.binaries.path.kubectl} get nodes -L topology.kubernetes.io/zone`,
        `Component logs: ${cluster.dir}/logs`,
        'Press Ctrl-C to stop it; everything is removed on exit.',
        '',
      ].join('\n'),
    );
    await interrupted();
  } finally {
    process.stderr.write('stopping the local cluster…\n');
    await cluster.stop();
  }
  return 0;
}

export const clusterCommand: Command = {
  name: 'cluster',
  summary: 'start a local Kubernetes control plane with KWOK nodes (for trying nuo out)',
  usage: [
    'Usage: nuo cluster up [--nodes N] [--zones Z]',
    '',
    'Builds (first time only, into ~/.cache/nuo) and starts etcd, kube-apiserver,',
    'kube-controller-manager, kube-scheduler and KWOK on 127.0.0.1, creates N nodes spread over Z zones,',
    'prints a KUBECONFIG and runs until Ctrl-C.',
    '',
    'Flags:',
    '  --nodes N   nodes to create (default 3)',
    '  --zones Z   zones to spread them over (default 1)',
    '',
    'Runs from a source checkout only (npm install && npm run cluster): the build leaves out the harness.',
  ].join('\n'),
  async run(argv) {
    const { positionals, values } = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: { nodes: { type: 'string' }, zones: { type: 'string' } },
    });
    if (positionals.length !== 1 || positionals[0] !== 'up') {
      throw new UsageError(`expected the subcommand "up", got "${positionals.join(' ')}"`);
    }
    const nodes = positiveInt('nodes', values.nodes, 3);
    const zones = positiveInt('zones', values.zones, 1, 1);
    const harness = await loadHarness<ClusterHarness>('cluster/cluster.ts', 'cluster', 'cluster');
    if (!harness) return 2;
    return runLocalCluster(harness, nodes, zones);
  },
};
