/**
 * Reboot by running a command in the host's mount namespace, by default `systemctl reboot` through
 * `nsenter -m/proc/1/ns/mnt --` (kured's default). Resolves when the command exits 0 (systemd queued the
 * reboot); rejects with the command's exit status and output otherwise.
 */
import {
  DEFAULT_HOST_PREFIX,
  describeResult,
  runCommand,
  validateArgv,
  validateTimeout,
} from '../detect/command.ts';
import type { Rebooter } from '../os.ts';

export const DEFAULT_REBOOT_COMMAND: readonly string[] = ['systemctl', 'reboot'];

export interface CommandRebooterOptions {
  /** Default ["systemctl", "reboot"]. */
  command?: string[];
  /** Default nsenter -m/proc/1/ns/mnt --; [] runs the command directly. */
  hostPrefix?: string[];
  /** Default 60 s. */
  timeoutMs?: number;
}

export class CommandRebooter implements Rebooter {
  readonly name = 'command';
  readonly command: readonly string[];
  readonly hostPrefix: readonly string[];
  readonly timeoutMs: number;

  constructor(options: CommandRebooterOptions = {}) {
    this.command = validateArgv('command rebooter: command', options.command ?? DEFAULT_REBOOT_COMMAND);
    this.hostPrefix = validateArgv(
      'command rebooter: hostPrefix',
      options.hostPrefix ?? DEFAULT_HOST_PREFIX,
      {
        allowEmpty: true,
      },
    );
    this.timeoutMs = validateTimeout('command rebooter: timeoutMs', options.timeoutMs ?? 60_000);
  }

  async reboot(): Promise<void> {
    const argv = [...this.hostPrefix, ...this.command];
    const result = await runCommand(argv, this.timeoutMs);
    if (result.kind === 'exited' && result.code === 0) return;
    throw new Error(`reboot command failed: ${describeResult(argv, result, this.timeoutMs)}`);
  }
}
