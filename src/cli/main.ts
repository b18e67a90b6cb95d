import { buildInfo, formatVersion } from '../util/build-info.ts';
import { type Command, UsageError } from './command.ts';

/**
 * Commands load their module only when run: `nuo agent` must not pay for @kubernetes/client-node
 * (~130 MiB RSS), which the operator and the people-facing commands use.
 */
interface Entry {
  name: string;
  summary: string;
  load: () => Promise<Command>;
}

const commands: Entry[] = [
  {
    name: 'demo',
    summary:
      'roll a reboot through a local cluster of simulated nodes, with live progress (source checkout only)',
    load: async () => (await import('./demo.ts')).demoCommand,
  },
  {
    name: 'status',
    summary: 'phase of every node, who holds the budget and why others wait',
    load: async () => (await import('./nodes.ts')).statusCommand,
  },
  {
    name: 'policy',
    summary:
      'explain which UpdatePolicy holds a node and every condition that keeps it waiting now; resume a halted one',
    load: async () => (await import('./policy.ts')).policyCommand,
  },
  {
    name: 'plan',
    summary: "a Plan's version, conditions and nodes: applied, applying, or why each waits",
    load: async () => (await import('./plan.ts')).planCommand,
  },
  {
    name: 'whatif',
    summary: 'predict a rollout: snapshot a cluster (read-only), stand its twin up locally, roll it',
    load: async () => (await import('./whatif.ts')).whatifCommand,
  },
  {
    name: 'reboot',
    summary: 'reboot a node once through the normal budgeted rollout',
    load: async () => (await import('./nodes.ts')).rebootCommand,
  },
  {
    name: 'pause',
    summary: 'leave a node alone (an attempt in flight keeps its slot)',
    load: async () => (await import('./nodes.ts')).pauseCommand,
  },
  {
    name: 'resume',
    summary: 'let nuo manage a paused node again',
    load: async () => (await import('./nodes.ts')).resumeCommand,
  },
  {
    name: 'release',
    summary: "end a Failed node's attempt and free its slot (a reason required)",
    load: async () => (await import('./release.ts')).releaseCommand,
  },
  {
    name: 'drain',
    summary: 'cordon a node and evict its pods through the Eviction API (like kubectl drain, bounded)',
    load: async () => (await import('./drain.ts')).drainCommand,
  },
  {
    name: 'uncordon',
    summary: "undo nuo's cordon of a node (never an admin's)",
    load: async () => (await import('./drain.ts')).uncordonCommand,
  },
  {
    name: 'operator',
    summary: 'run the operator (leader-elected; decides, drains, grants reboots)',
    load: async () => (await import('./operator.ts')).operatorCommand,
  },
  {
    name: 'agent',
    summary: 'run the node agent (detects reboot needs, reboots when granted)',
    load: async () => (await import('./agent.ts')).agentCommand,
  },
  {
    name: 'cluster',
    summary: 'start a local Kubernetes control plane with KWOK nodes to try nuo on (source checkout only)',
    load: async () => (await import('./cluster.ts')).clusterCommand,
  },
];

function help(): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  return [
    'nuo — Kubernetes node update operator',
    '',
    'Usage: nuo <command> [flags]',
    '',
    'Commands:',
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'Run "nuo <command> --help" for a command\'s flags, "nuo --version" for the version and revision.',
    '"Source checkout only": the build (dist/) leaves out the simulation harness these commands drive.',
  ].join('\n');
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') {
    process.stdout.write(`${help()}\n`);
    return name === undefined ? 2 : 0;
  }
  if (name === '--version') {
    process.stdout.write(`${formatVersion(buildInfo())}\n`);
    return 0;
  }
  const entry = commands.find((c) => c.name === name);
  if (!entry) {
    process.stderr.write(`nuo: unknown command "${name}"\n\n${help()}\n`);
    return 2;
  }
  const command = await entry.load();
  if (rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(`${command.usage}\n`);
    return 0;
  }
  try {
    return await command.run(rest);
  } catch (err) {
    if (err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`nuo ${name}: ${(err as Error).message}\n\n${command.usage}\n`);
      return 2;
    }
    process.stderr.write(`nuo ${name}: ${(err as Error).stack ?? err}\n`);
    return 1;
  }
}
