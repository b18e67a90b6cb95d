import { clusterCommand } from './cluster.ts';
import { type Command, UsageError } from './command.ts';
import { demoCommand } from './demo.ts';
import { drainCommand, uncordonCommand } from './drain.ts';
import { pauseCommand, rebootCommand, resumeCommand, statusCommand } from './nodes.ts';
import { operatorCommand } from './operator.ts';

const commands: Command[] = [
  demoCommand,
  statusCommand,
  rebootCommand,
  pauseCommand,
  resumeCommand,
  drainCommand,
  uncordonCommand,
  operatorCommand,
  clusterCommand,
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
    'Run "nuo <command> --help" for a command\'s flags.',
  ].join('\n');
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') {
    process.stdout.write(`${help()}\n`);
    return name === undefined ? 2 : 0;
  }
  const command = commands.find((c) => c.name === name);
  if (!command) {
    process.stderr.write(`nuo: unknown command "${name}"\n\n${help()}\n`);
    return 2;
  }
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
