/**
 * One control-plane process: started with its output in a log file, watched for an early exit, and
 * stopped with SIGTERM then SIGKILL. Every live process is recorded so that an interrupted test run
 * (SIGINT/SIGTERM, or an uncaught error) still kills it, and in a pid file so that a later run can reap
 * what a SIGKILLed one left behind.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { appendFile } from 'node:fs/promises';

export interface ComponentOptions {
  name: string;
  binary: string;
  args: string[];
  logFile: string;
  /** File in which the pid is appended, read by the reaper of abandoned clusters. */
  pidFile: string;
}

const live = new Set<ChildProcess>();
const cleanups = new Set<() => void>();
/** Set once this process is going away: its components' exits are expected, not news. */
let exiting = false;

function killAllNow(): void {
  exiting = true;
  for (const child of live) {
    try {
      child.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
  live.clear();
  for (const cleanup of cleanups) cleanup();
  cleanups.clear();
}

let hooksInstalled = false;
function installExitHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  process.on('exit', killAllNow);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      killAllNow();
      process.kill(process.pid, signal);
    });
  }
}

/**
 * Kills `child` along with the harness's components if this process exits or is signalled first (an
 * operator a benchmark started must not outlive it, retrying against a cluster that is gone).
 */
export function killWithHarness(child: ChildProcess): void {
  installExitHooks();
  live.add(child);
  child.once('exit', () => live.delete(child));
}

/**
 * Runs `cleanup` (synchronous) if this process exits or is signalled before the returned function is
 * called: for what killing a child does not end (a container outlives the `runc run` that started it).
 */
export function cleanUpWithHarness(cleanup: () => void): () => void {
  installExitHooks();
  cleanups.add(cleanup);
  return () => cleanups.delete(cleanup);
}

export class Component {
  readonly name: string;
  readonly logFile: string;
  readonly #child: ChildProcess;
  readonly #exited: Promise<number | null>;
  #exitCode: number | null | undefined;
  #stopping = false;

  constructor(options: ComponentOptions) {
    installExitHooks();
    this.name = options.name;
    this.logFile = options.logFile;
    const fd = openSync(options.logFile, 'a');
    try {
      this.#child = spawn(options.binary, options.args, { stdio: ['ignore', fd, fd] });
    } finally {
      closeSync(fd);
    }
    const child = this.#child;
    live.add(child);
    this.#exited = new Promise((resolve) => {
      child.on('error', (err) => {
        void appendFile(options.logFile, `\nnuo harness: cannot start ${options.binary}: ${err.message}\n`);
        this.#exitCode = -1;
        live.delete(child);
        resolve(-1);
      });
      child.on('exit', (code, signal) => {
        this.#exitCode = code ?? (signal ? 128 : null);
        live.delete(child);
        if (!this.#stopping && !exiting) {
          process.stderr.write(
            `nuo harness: ${this.name} exited unexpectedly (code ${code}, signal ${signal}); last log lines:\n${this.tail(30)}\n`,
          );
        }
        resolve(this.#exitCode);
      });
    });
    if (child.pid) void appendFile(options.pidFile, `${child.pid}\n`);
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  /** Undefined while running. */
  get exitCode(): number | null | undefined {
    return this.#exitCode;
  }

  get exited(): Promise<number | null> {
    return this.#exited;
  }

  tail(lines: number): string {
    try {
      return readFileSync(this.logFile, 'utf8').split('\n').slice(-lines).join('\n');
    } catch {
      return '(no log)';
    }
  }

  /**
   * SIGSTOP (`paused`) or SIGCONT: a component that hangs rather than dies. Its connections stay open and
   * its clients' requests wait, as with a frozen VM.
   */
  setPaused(paused: boolean): void {
    if (this.#exitCode !== undefined) return;
    this.#child.kill(paused ? 'SIGSTOP' : 'SIGCONT');
  }

  async stop(graceMs = 5000): Promise<void> {
    if (this.#exitCode !== undefined) return;
    this.#stopping = true;
    // A stopped process would hold SIGTERM pending until the grace ran out.
    this.#child.kill('SIGCONT');
    this.#child.kill('SIGTERM');
    const timer = setTimeout(() => this.#child.kill('SIGKILL'), graceMs);
    await this.#exited;
    clearTimeout(timer);
  }

  /** Simulates a crash: no chance to clean up. */
  async kill(): Promise<void> {
    if (this.#exitCode !== undefined) return;
    this.#stopping = true;
    this.#child.kill('SIGKILL');
    await this.#exited;
  }
}
