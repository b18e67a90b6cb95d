/**
 * A command that says whether a reboot is needed (kured's reboot-sentinel-command), run in the host's mount
 * namespace: `nsenter -m/proc/1/ns/mnt -- <command>` from a DaemonSet pod with hostPID, or directly (an
 * empty prefix) when the agent runs on the host or in tests. Exit codes map to a verdict as configured;
 * the default follows `needs-restarting -r`: 1 = reboot needed, 0 = not needed.
 *
 * Safety rule 6: anything else — the command missing, not executable, timing out, killed by a signal, an
 * exit code in neither list, or the host-namespace prefix itself failing — is "unknown" with the reason,
 * never "needed". nsenter reports its own failures with exit code 1, the very code that means "needed", so
 * when a prefix is configured the detector first runs `<prefix> true` and answers "unknown" if that fails.
 *
 * This module also holds the process runner the command rebooter uses.
 */
import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { type Detection, type Detector, Need } from '../os.ts';

export const DEFAULT_HOST_PREFIX: readonly string[] = ['nsenter', '-m/proc/1/ns/mnt', '--'];
const OUTPUT_LIMIT = 4096;
const REASON_OUTPUT_LIMIT = 300;

export type CommandResult =
  | { kind: 'exited'; code: number; output: string }
  | { kind: 'signalled'; signal: string; output: string }
  | { kind: 'timed-out'; output: string }
  | { kind: 'not-started'; error: string };

/** Validates an argv: a non-empty array of strings whose first element (the program) is not empty. */
export function validateArgv(what: string, argv: unknown, { allowEmpty = false } = {}): string[] {
  if (!Array.isArray(argv) || argv.some((a) => typeof a !== 'string')) {
    throw new Error(`${what} must be an array of strings, got ${JSON.stringify(argv)}`);
  }
  if (argv.length === 0) {
    if (allowEmpty) return [];
    throw new Error(`${what} must not be empty`);
  }
  if (argv[0] === '' || argv[0].trim() !== argv[0]) {
    throw new Error(`${what}: invalid program name ${JSON.stringify(argv[0])}`);
  }
  return [...argv];
}

export function validateTimeout(what: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) {
    throw new Error(
      `${what} must be a positive integer number of milliseconds, got ${JSON.stringify(value)}`,
    );
  }
  return value;
}

/** argv as a readable command line. */
function formatArgv(argv: readonly string[]): string {
  return argv.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : JSON.stringify(a))).join(' ');
}

function signalName(signal: NodeJS.Signals | number | null): string {
  if (typeof signal === 'string') return signal;
  const name = Object.entries(constants.signals).find(([, n]) => n === signal)?.[0];
  return name ?? `signal ${signal}`;
}

/**
 * Runs argv to completion or until timeoutMs, then kills its whole process group with SIGKILL. Never
 * rejects. Keeps the last 4 KiB of stdout and stderr.
 */
export function runCommand(argv: readonly string[], timeoutMs: number): Promise<CommandResult> {
  return new Promise((resolve) => {
    const [program, ...args] = argv;
    if (program === undefined) {
      resolve({ kind: 'not-started', error: 'empty command' });
      return;
    }
    let output = '';
    let settled = false;
    let timedOut = false;
    let exitGrace: NodeJS.Timeout | undefined;
    let timer: NodeJS.Timeout | undefined;
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(program, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    } catch (err) {
      resolve({ kind: 'not-started', error: err instanceof Error ? err.message : String(err) });
      return;
    }
    const finish = (result: CommandResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(exitGrace);
      child.stdout?.destroy();
      child.stderr?.destroy();
      resolve(result);
    };
    const append = (chunk: string) => {
      output = (output + chunk).slice(-OUTPUT_LIMIT);
    };
    child.stdout?.setEncoding('utf8').on('data', append);
    child.stderr?.setEncoding('utf8').on('data', append);
    timer = setTimeout(() => {
      timedOut = true;
      try {
        // detached: the child leads its own process group, so this reaches whatever it started too.
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    }, timeoutMs);
    const exited = (code: number | null, signal: NodeJS.Signals | null) => {
      if (timedOut) finish({ kind: 'timed-out', output });
      else if (code !== null) finish({ kind: 'exited', code, output });
      else finish({ kind: 'signalled', signal: signalName(signal), output });
    };
    child.on('error', (err) => finish({ kind: 'not-started', error: err.message }));
    child.on('close', exited);
    // Something the command left running may hold its output open; do not wait for that forever.
    child.on('exit', (code, signal) => {
      exitGrace = setTimeout(() => exited(code, signal), 200);
    });
  });
}

function outputSuffix(output: string): string {
  const text = output.trim().replace(/\s*\n\s*/g, ' | ');
  if (text === '') return '';
  return `: ${text.length > REASON_OUTPUT_LIMIT ? `…${text.slice(-REASON_OUTPUT_LIMIT)}` : text}`;
}

/** A one-line description of a result, e.g. "`needs-restarting -r` exited 3: …". */
export function describeResult(command: readonly string[], result: CommandResult, timeoutMs: number): string {
  const cmd = `\`${formatArgv(command)}\``;
  switch (result.kind) {
    case 'not-started':
      return `${cmd} could not be started: ${result.error}`;
    case 'timed-out':
      return `${cmd} did not finish within ${timeoutMs} ms and was killed${outputSuffix(result.output)}`;
    case 'signalled':
      return `${cmd} was killed by ${result.signal}${outputSuffix(result.output)}`;
    case 'exited': {
      const hint =
        result.code === 127 ? ' (command not found)' : result.code === 126 ? ' (command not executable)' : '';
      return `${cmd} exited ${result.code}${hint}${outputSuffix(result.output)}`;
    }
  }
}

function validateExitCodes(what: string, codes: unknown): number[] {
  if (!Array.isArray(codes) || codes.length === 0) {
    throw new Error(
      `command detector: ${what} must be a non-empty array of exit codes, got ${JSON.stringify(codes)}`,
    );
  }
  for (const code of codes) {
    if (typeof code !== 'number' || !Number.isInteger(code) || code < 0 || code > 255) {
      throw new Error(
        `command detector: ${what} must hold integers from 0 to 255, got ${JSON.stringify(code)}`,
      );
    }
  }
  return [...codes];
}

export interface CommandDetectorOptions {
  /** The command and its arguments, e.g. ["needs-restarting", "-r"]. */
  command: string[];
  /** Prepended to run in the host's mount namespace. Default nsenter -m/proc/1/ns/mnt --; [] runs directly. */
  hostPrefix?: string[];
  /** Exit codes meaning "reboot needed". Default [1]. */
  neededExitCodes?: number[];
  /** Exit codes meaning "no reboot needed". Default [0]. */
  notNeededExitCodes?: number[];
  /** Default 30 s. */
  timeoutMs?: number;
  /** Default "command". */
  name?: string;
}

export class CommandDetector implements Detector {
  readonly name: string;
  readonly command: readonly string[];
  readonly hostPrefix: readonly string[];
  readonly neededExitCodes: readonly number[];
  readonly notNeededExitCodes: readonly number[];
  readonly timeoutMs: number;

  constructor(options: CommandDetectorOptions) {
    if (options === null || typeof options !== 'object')
      throw new Error('command detector: options are required');
    this.command = validateArgv('command detector: command', options.command);
    this.hostPrefix = validateArgv(
      'command detector: hostPrefix',
      options.hostPrefix ?? DEFAULT_HOST_PREFIX,
      {
        allowEmpty: true,
      },
    );
    this.neededExitCodes = validateExitCodes('neededExitCodes', options.neededExitCodes ?? [1]);
    this.notNeededExitCodes = validateExitCodes('notNeededExitCodes', options.notNeededExitCodes ?? [0]);
    const both = this.neededExitCodes.filter((c) => this.notNeededExitCodes.includes(c));
    if (both.length > 0) {
      throw new Error(
        `command detector: exit code(s) ${both.join(', ')} listed as both needed and not needed`,
      );
    }
    const cannotRun = this.neededExitCodes.filter((c) => c === 126 || c === 127);
    if (cannotRun.length > 0) {
      throw new Error(
        `command detector: neededExitCodes must not include ${cannotRun.join(', ')}: 126/127 mean the command could not be run, which must never count as "reboot needed"`,
      );
    }
    this.timeoutMs = validateTimeout('command detector: timeoutMs', options.timeoutMs ?? 30_000);
    this.name = options.name ?? 'command';
  }

  async check(): Promise<Detection> {
    if (this.hostPrefix.length > 0) {
      const probeArgv = [...this.hostPrefix, 'true'];
      const probe = await runCommand(probeArgv, this.timeoutMs);
      if (probe.kind !== 'exited' || probe.code !== 0) {
        return {
          need: Need.unknown,
          reason: `cannot run commands in the host's namespace: ${describeResult(probeArgv, probe, this.timeoutMs)}`,
        };
      }
    }
    const argv = [...this.hostPrefix, ...this.command];
    const result = await runCommand(argv, this.timeoutMs);
    const described = describeResult(this.command, result, this.timeoutMs);
    if (result.kind !== 'exited') return { need: Need.unknown, reason: described };
    if (this.neededExitCodes.includes(result.code)) return { need: Need.needed, reason: described };
    if (this.notNeededExitCodes.includes(result.code)) return { need: Need.notNeeded, reason: described };
    return {
      need: Need.unknown,
      reason: `${described} — an exit code in neither list (needed: ${this.neededExitCodes.join(', ')}; not needed: ${this.notNeededExitCodes.join(', ')})`,
    };
  }
}
