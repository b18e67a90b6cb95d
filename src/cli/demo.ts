import { parseArgs } from 'node:util';
import { deployDemoWorkload } from '../sim/workload.ts';
import { positiveInt, runLocalCluster } from './cluster.ts';
import type { Command } from './command.ts';

export const demoCommand: Command = {
  name: 'demo',
  summary: 'local cluster with simulated nodes and a sample workload (the reboot rollout is not built yet)',
  usage: [
    'Usage: nuo demo [--nodes N] [--zones Z]',
    '',
    'Starts the local cluster (12 nodes in 3 zones by default) and deploys Deployments with',
    'PodDisruptionBudgets placed by the real scheduler. The reboot coordinator that will roll a reboot',
    'through these nodes is not built yet: today the demo shows the testing ground it will run on.',
    '',
    'Flags:',
    '  --nodes N   nodes (default 12)',
    '  --zones Z   zones (default 3)',
  ].join('\n'),
  async run(argv) {
    const { values } = parseArgs({
      args: argv,
      strict: true,
      options: { nodes: { type: 'string' }, zones: { type: 'string' } },
    });
    const nodes = positiveInt('nodes', values.nodes, 12, 1);
    const zones = positiveInt('zones', values.zones, 3, 1);
    return runLocalCluster({ nodes, zones }, async (cluster) => {
      const summary = await deployDemoWorkload(cluster.kubeconfig, { replicasPerApp: nodes });
      process.stdout.write(`\n${summary}\n`);
    });
  },
};
