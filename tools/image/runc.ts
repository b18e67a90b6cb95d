/**
 * Runs the image under runc (Debian's package), the OCI runtime Kubernetes nodes use through containerd:
 * `umoci unpack` makes the root filesystem and a base config.json once; each container gets a bundle of
 * its own holding only its config.json (tools/image/container.ts), over that read-only root.
 */
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ContainerOptions, containerSpec, type RuntimeSpec } from './container.ts';

export interface Unpacked {
  rootfs: string;
  /** The config.json umoci wrote from the image's configuration. */
  base: RuntimeSpec;
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface Container {
  id: string;
  process: ChildProcess;
  /** What the container wrote so far, stdout and stderr interleaved. */
  output(): string;
  /** The container's first process, as the host sees it. */
  pid(): number;
  stop(): Promise<void>;
}

export class Runc {
  /** runc's state directory, private to this instance. */
  readonly root = mkdtempSync(join(tmpdir(), 'nuo-runc-'));
  readonly #bundles = mkdtempSync(join(tmpdir(), 'nuo-bundles-'));
  readonly #live = new Set<string>();

  /** Unpacks `layout:tag` into `dir` (root: umoci keeps the image's owners). */
  static unpack(layout: string, tag: string, dir: string): Unpacked {
    rmSync(dir, { recursive: true, force: true });
    try {
      execFileSync('umoci', ['unpack', '--image', `${layout}:${tag}`, dir], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    } catch (err) {
      const e = err as { stderr?: Buffer; message: string };
      throw new Error(`umoci unpack ${layout}:${tag} failed: ${e.stderr?.toString().trim() || e.message}`);
    }
    return { rootfs: join(dir, 'rootfs'), base: JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) };
  }

  #bundle(unpacked: Unpacked, o: Omit<ContainerOptions, 'rootfs'>): { id: string; bundle: string } {
    const id = `nuo-${randomBytes(4).toString('hex')}`;
    const bundle = join(this.#bundles, id);
    mkdirSync(bundle);
    const spec = containerSpec(unpacked.base, { ...o, rootfs: unpacked.rootfs });
    writeFileSync(join(bundle, 'config.json'), JSON.stringify(spec, null, 2));
    return { id, bundle };
  }

  /** Kills and deletes every container start() left running, at once (for an exiting process). */
  deleteAll(): void {
    for (const id of this.#live) this.#delete(id);
  }

  #runc(...args: string[]): string[] {
    return ['--root', this.root, ...args];
  }

  /** Runs a command to its end in a new container (deleted afterwards). */
  run(unpacked: Unpacked, o: Omit<ContainerOptions, 'rootfs'>, timeoutMs = 60_000): Promise<RunResult> {
    const { id, bundle } = this.#bundle(unpacked, o);
    return new Promise((resolve) => {
      execFile(
        'runc',
        this.#runc('run', '--bundle', bundle, id),
        { timeout: timeoutMs, encoding: 'utf8' },
        (err, stdout, stderr) => {
          this.#delete(id);
          const code = err ? (typeof err.code === 'number' ? err.code : null) : 0;
          const why = err && code === null ? `${err.message}\n` : '';
          resolve({ code, stdout, stderr: `${why}${stderr}` });
        },
      );
    });
  }

  /** Starts a long-running container; stop() ends it with SIGTERM (SIGKILL after 10 s) and deletes it. */
  start(unpacked: Unpacked, o: Omit<ContainerOptions, 'rootfs'>): Container {
    const { id, bundle } = this.#bundle(unpacked, o);
    const child = spawn('runc', this.#runc('run', '--bundle', bundle, id), {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.#live.add(id);
    let output = '';
    child.stdout?.on('data', (d) => {
      output += d;
    });
    child.stderr?.on('data', (d) => {
      output += d;
    });
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    return {
      id,
      process: child,
      output: () => output,
      pid: () => {
        const state = JSON.parse(execFileSync('runc', this.#runc('state', id), { encoding: 'utf8' })) as {
          pid: number;
          status: string;
        };
        if (state.status !== 'running') throw new Error(`container ${id} is ${state.status}`);
        return state.pid;
      },
      stop: async () => {
        if (child.exitCode === null && child.signalCode === null) {
          this.#kill(id, 'TERM');
          const killer = setTimeout(() => this.#kill(id, 'KILL'), 10_000);
          await exited;
          clearTimeout(killer);
        }
        this.#delete(id);
      },
    };
  }

  #kill(id: string, signal: string) {
    try {
      execFileSync('runc', this.#runc('kill', id, signal), { stdio: 'ignore' });
    } catch {
      // Already stopped.
    }
  }

  #delete(id: string) {
    this.#live.delete(id);
    try {
      execFileSync('runc', this.#runc('delete', '--force', id), { stdio: 'ignore' });
    } catch {
      // Never created, or already deleted.
    }
    rmSync(join(this.#bundles, id), { recursive: true, force: true });
  }

  close() {
    rmSync(this.#bundles, { recursive: true, force: true });
    rmSync(this.root, { recursive: true, force: true });
  }
}
