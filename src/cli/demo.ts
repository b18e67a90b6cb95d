import { parseArgs } from 'node:util';
import { durationFlag, positiveInt } from './args.ts';
import { type Command, UsageError } from './command.ts';
import { type DemoHarness, loadHarness } from './harness.ts';

const MAX_VMS = 5;

export const demoCommand: Command = {
  name: 'demo',
  summary: 'roll a reboot through a local cluster of simulated nodes, under the budget, with live progress',
  usage: [
    'Usage: nuo demo [flags]',
    '',
    'Starts a local control plane (etcd, kube-apiserver, controller-manager, scheduler, KWOK) with',
    'simulated nodes running Deployments under PodDisruptionBudgets and a DaemonSet, marks every node as',
    'needing a reboot, and runs `nuo operator` and one agent per node until every node has rebooted,',
    'under an UpdatePolicy with a budget, a cap per zone and a maintenance window open now.',
    'Prints nodes by phase while it runs and a summary at the end (exit 1 if any safety check failed).',
    '',
    'Flags:',
    '  --nodes N             nodes (default 12)',
    '  --zones Z             zones (default 3)',
    '  --max-unavailable K   nodes disrupted at once (default 3)',
    '  --max-unavailable-per-zone Z',
    '                        nodes disrupted at once in any one zone (default 1)',
    '  --reboot-time D       how long a simulated reboot takes (default 5s)',
    '  --soak D              Ready time required after a reboot (default 2s)',
    '  --plan                add an upgrade Plan with `reboot: true`: each node is drained, runs',
    "                        the Plan's Job, then reboots through nuo, all in one slot of the budget",
    '  --vms N               also boot N real VM nodes (KVM, or emulation without it; at most 5),',
    '                        install nuo on them from its chart as a user would (its operator then',
    "                        leads the rollout) and reboot them for real; needs root, Debian's qemu",
    '                        and mmdebstrap; the first run builds their image (~15 minutes on 2 cores)',
    '  --keep                keep the cluster up after the rollout until Ctrl-C',
    '',
    'Runs from a source checkout only (npm install && npm run demo): the build leaves out the harness.',
  ].join('\n'),
  async run(argv) {
    const { values, positionals } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: true,
      options: {
        nodes: { type: 'string' },
        zones: { type: 'string' },
        'max-unavailable': { type: 'string' },
        'max-unavailable-per-zone': { type: 'string' },
        'reboot-time': { type: 'string' },
        soak: { type: 'string' },
        plan: { type: 'boolean', default: false },
        keep: { type: 'boolean', default: false },
        vms: { type: 'string' },
      },
    });
    if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
    const nodes = positiveInt('nodes', values.nodes, 12, 1);
    const zones = positiveInt('zones', values.zones, 3, 1);
    const maxUnavailable = positiveInt('max-unavailable', values['max-unavailable'], 3, 1);
    const maxUnavailablePerZone = positiveInt(
      'max-unavailable-per-zone',
      values['max-unavailable-per-zone'],
      1,
      1,
    );
    const rebootMs = durationFlag('reboot-time', values['reboot-time'], '5s');
    const soakMs = durationFlag('soak', values.soak, '2s');
    const vms = positiveInt('vms', values.vms, 0, 0);
    if (vms > MAX_VMS) throw new UsageError(`--vms: at most ${MAX_VMS} (each VM takes 1.5 GiB), got ${vms}`);
    if (vms > 0 && values.plan) {
      throw new UsageError("--plan and --vms: the demo Plan's Jobs run only on KWOK's nodes; choose one");
    }
    const harness = await loadHarness<DemoHarness>('demo.ts', 'demo', 'demo');
    if (!harness) return 2;
    return harness.runDemo({
      nodes,
      zones,
      maxUnavailable,
      maxUnavailablePerZone,
      rebootMs,
      soakMs,
      plan: values.plan,
      keep: values.keep,
      vms,
      out: (text) => process.stdout.write(text),
      tty: process.stdout.isTTY === true,
    });
  },
};
