/**
 * Runs a command in a VM as root over SSH: Debian's sshd in the guest, reached through qemu's port
 * forward on the host's loopback, with the key the harness minted for its VMs.
 */
import { spawn } from 'node:child_process';

export interface SshTarget {
  port: number;
  /** The private key's file. */
  key: string;
}

export interface ExecResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** ssh's own exit code when the connection fails or drops (sshd gone mid-reboot, not yet up). */
export const SSH_CONNECTION_LOST = 255;

/** The options ssh and scp share: the key, and no host key to check (every VM is new, from one image). */
function options(target: SshTarget, connectTimeoutS: number): string[] {
  return [
    '-i',
    target.key,
    '-o',
    'StrictHostKeyChecking=no',
    '-o',
    'UserKnownHostsFile=/dev/null',
    '-o',
    'LogLevel=ERROR',
    '-o',
    'BatchMode=yes',
    '-o',
    `ConnectTimeout=${connectTimeoutS}`,
    '-o',
    'ServerAliveInterval=5',
    '-o',
    'ServerAliveCountMax=3',
  ];
}

export function sshArgs(target: SshTarget, command: string, connectTimeoutS = 5): string[] {
  return [...options(target, connectTimeoutS), '-p', String(target.port), 'root@127.0.0.1', command];
}

/** scp's arguments to copy the host's `local` file to `remote` in the VM. */
export function scpArgs(target: SshTarget, local: string, remote: string): string[] {
  return [...options(target, 5), '-P', String(target.port), local, `root@127.0.0.1:${remote}`];
}

/** Runs `command` (a shell command line in the guest); never throws for a non-zero exit. */
export const sshExec = (target: SshTarget, command: string, timeoutMs = 60_000): Promise<ExecResult> =>
  spawnSsh('ssh', target, sshArgs(target, command), timeoutMs);

/** Copies the host's file `local` to `remote` in the guest; never throws for a non-zero exit. */
export const scpTo = (target: SshTarget, local: string, remote: string, timeoutMs = 120_000) =>
  spawnSsh('scp', target, scpArgs(target, local, remote), timeoutMs);

function spawnSsh(
  program: 'ssh' | 'scp',
  target: SshTarget,
  args: string[],
  timeoutMs: number,
): Promise<ExecResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(
        new Error(
          (e as NodeJS.ErrnoException).code === 'ENOENT'
            ? `${program} not found: install openssh-client (.ci/run does)`
            : `${program} to 127.0.0.1:${target.port}: ${e.message}`,
        ),
      );
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() });
    });
  });
}
