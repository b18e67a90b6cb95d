/** One `nuo` subcommand. `run` returns the process exit code; it throws only for unexpected failures. */
export interface Command {
  name: string;
  summary: string;
  usage: string;
  run(argv: string[]): Promise<number>;
}

/** A user mistake (bad flag, unknown node): printed without a stack trace, exit code 2. */
export class UsageError extends Error {}

/** A line of a command's output. */
export const out = (line: string) => process.stdout.write(`${line}\n`);
/** A line of a command's errors. */
export const err = (line: string) => process.stderr.write(`${line}\n`);
