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

export function sshArgs(target: SshTarget, command: string, connectTimeoutS = 5): string[] {
  return [
    '-i',
    target.key,
    '-p',
    String(target.port),
    // Every VM is new, from one image: there is no host key to know in advance.
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
    'root@127.0.0.1',
    command,
  ];
}

/** Runs `command` (a shell command line in the guest); never throws for a non-zero exit. */
export function sshExec(target: SshTarget, command: string, timeoutMs = 60_000): Promise<ExecResult> {
  return new Promise((resolve, reject) => {
    const child = spawn('ssh', sshArgs(target, command), { stdio: ['ignore', 'pipe', 'pipe'] });
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
            ? 'ssh not found: install openssh-client (.ci/run does)'
            : `ssh to 127.0.0.1:${target.port}: ${e.message}`,
        ),
      );
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() });
    });
  });
}
