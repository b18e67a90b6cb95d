/** The control plane's component processes: each launched and probed until healthy, restarted, stopped. */
import { join } from 'node:path';
import type { ClusterBinaries } from '../../../tools/cluster/build.ts';
import { pollUntil } from '../../util/poll.ts';
import type { ComponentName } from './component-args.ts';
import { Component } from './process.ts';
import type { Setup, Workspace } from './setup.ts';

/** Thrown when a component exited during start-up (e.g. a loopback port taken between pick and bind). */
export class StartupExit extends Error {}

/** The component processes: each launched and waited healthy, stopped in reverse order of dependence. */
export class ControlPlane {
  readonly components = {} as Record<ComponentName, Component>;
  readonly #binaries: ClusterBinaries;
  readonly #workspace: Workspace;
  readonly #timeoutMs: number;
  #setup: Setup | undefined;
  /**
   * Aborted when any component exits: a health probe can be answered by another cluster's process that
   * holds the port this one failed to bind, so start-up waits past the probes with this signal too.
   */
  readonly #anyExit = new AbortController();

  constructor(binaries: ClusterBinaries, workspace: Workspace, timeoutMs: number) {
    this.#binaries = binaries;
    this.#workspace = workspace;
    this.#timeoutMs = timeoutMs;
  }

  async start(setup: Setup, log: (line: string) => void, since: number): Promise<void> {
    this.#setup = setup;
    await this.launch('etcd');
    log(`etcd healthy (${Date.now() - since} ms)`);
    await this.launch('kube-apiserver');
    log(`kube-apiserver ready at ${setup.server} (${Date.now() - since} ms)`);
    await Promise.all([
      this.launch('kube-controller-manager'),
      this.launch('kube-scheduler'),
      this.launch('kwok'),
    ]);
    log(`controller-manager, scheduler and kwok healthy (${Date.now() - since} ms)`);
  }

  async launch(name: ComponentName): Promise<void> {
    const setup = this.#setup;
    if (!setup) throw new Error(`cannot launch ${name}: the control plane was not set up`);
    const component = new Component({
      name,
      binary: this.#binaries.path[name],
      args: setup.args[name],
      logFile: join(this.#workspace.logs, `${name}.log`),
      pidFile: this.#workspace.pidFile,
    });
    this.components[name] = component;
    // An exit ends the wait at once (pollUntil would otherwise treat it as "not yet" until the deadline).
    const exited = new AbortController();
    void component.exited.then((code) => {
      const exit = new StartupExit(`${name} exited with ${code}`);
      exited.abort(exit);
      this.#anyExit.abort(exit);
    });
    await pollUntil(
      `${name} to become healthy (log: ${component.logFile})`,
      async () => ((await setup.health[name]().catch(() => false)) ? true : undefined),
      { timeoutMs: this.#timeoutMs, intervalMs: 100, signal: exited.signal },
    ).catch((err: Error) => {
      const message = `${err.message}\n--- ${name} log tail ---\n${component.tail(40)}`;
      throw component.exitCode !== undefined ? new StartupExit(message) : new Error(message);
    });
  }

  /** Aborted once any component has exited (for waits during start-up only: a restart exits one too). */
  get anyExit(): AbortSignal {
    return this.#anyExit.signal;
  }

  async restart(name: ComponentName): Promise<void> {
    await this.components[name].stop();
    await this.launch(name);
  }

  async stop(): Promise<void> {
    const order: ComponentName[] = [
      'kwok',
      'kube-scheduler',
      'kube-controller-manager',
      'kube-apiserver',
      'etcd',
    ];
    for (const name of order) await this.components[name]?.stop();
  }

  tails(lines: number): string {
    return Object.values(this.components)
      .map((c) => `--- ${c.name} ---\n${c.tail(lines)}`)
      .join('\n');
  }
}
