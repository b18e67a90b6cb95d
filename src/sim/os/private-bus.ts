/**
 * A real, private dbus-daemon: a minimal bus configuration in a temp dir with a unix socket there and a
 * policy that allows everything. The OS-integration tests run one per test file (test/os/bus.ts); the
 * simulation runs one per simulated host that needs a system bus (fluo-agent.ts). The daemon can be
 * stopped and restarted on the same socket to play a system bus restart.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const running = new Set<ChildProcess>();
const tempDirs = new Set<string>();

/** Last resort if the process ends before dispose() ran: leave no daemon and no temp dir behind. */
function emergencyCleanup(): void {
  for (const child of running) child.kill('SIGKILL');
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
}
process.on('exit', emergencyCleanup);
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(signal, () => {
    emergencyCleanup();
    process.kill(process.pid, signal); // then die of the signal as we would have
  });
}

function busConfig(socketPath: string): string {
  return `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=${socketPath}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
`;
}

export class PrivateBus {
  readonly dir: string;
  readonly socketPath: string;
  /** Stable across restarts (no guid), as an agent would be configured. */
  readonly address: string;
  #child: ChildProcess | undefined;
  #log = '';

  private constructor(dir: string) {
    this.dir = dir;
    this.socketPath = join(dir, 'bus.sock');
    this.address = `unix:path=${this.socketPath}`;
  }

  /** Creates the temp dir and config; starts the daemon unless `start` is false. */
  static async create({ start = true }: { start?: boolean } = {}): Promise<PrivateBus> {
    const bus = new PrivateBus(await mkdtemp(join(tmpdir(), 'nuo-dbus-')));
    tempDirs.add(bus.dir);
    await writeFile(join(bus.dir, 'bus.conf'), busConfig(bus.socketPath));
    if (start) {
      try {
        await bus.start();
      } catch (err) {
        await bus.dispose();
        throw err;
      }
    }
    return bus;
  }

  get running(): boolean {
    return this.#child !== undefined;
  }

  logs(): string {
    return this.#log;
  }

  /** Starts dbus-daemon and resolves once it printed its address (it is then accepting connections). */
  async start(): Promise<void> {
    if (this.#child) throw new Error('the private bus is already running');
    await rm(this.socketPath, { force: true });
    const child = spawn(
      'dbus-daemon',
      [`--config-file=${join(this.dir, 'bus.conf')}`, '--print-address', '--nofork'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    running.add(child);
    this.#child = child;
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      this.#log += chunk;
    });
    child.on('exit', (code, signal) => {
      this.#log += `dbus-daemon exited (${code ?? signal})\n`;
      running.delete(child);
      if (this.#child === child) this.#child = undefined;
    });
    await new Promise<void>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(
        () => fail(new Error('dbus-daemon did not print its address within 10 s')),
        10_000,
      );
      const fail = (err: Error) => {
        clearTimeout(timer);
        child.kill('SIGKILL');
        reject(new Error(`${err.message}\n${this.#log}`));
      };
      child.on('error', fail);
      child.on('exit', (code, signal) => fail(new Error(`dbus-daemon exited early (${code ?? signal})`)));
      child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
        out += chunk;
        if (out.includes('\n')) {
          clearTimeout(timer);
          this.#log += `address: ${out.trim()}\n`;
          resolve();
        }
      });
    });
  }

  /** Stops the daemon (SIGTERM, then SIGKILL after 5 s); every connection to it drops. */
  async stop(): Promise<void> {
    const child = this.#child;
    if (!child) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  }

  /** Stops the daemon and removes the temp dir. */
  async dispose(): Promise<void> {
    await this.stop();
    await rm(this.dir, { recursive: true, force: true });
    tempDirs.delete(this.dir);
  }
}
