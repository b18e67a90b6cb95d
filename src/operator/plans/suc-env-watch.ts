/**
 * Reads SUC's `default-controller-env` ConfigMap in SUC's namespace now and every interval while nuo runs
 * SUC's Plans in place; its Jobs are built with what it sets (suc-controller-env.ts), none before a first
 * read succeeds (a missing ConfigMap reads as empty: the operator's settings, which default to SUC's own).
 * A read that fails keeps what was last read.
 */
import type { CoreV1Api } from '@kubernetes/client-node';
import { type KubeLog, sleep } from '../../kube/backoff.ts';
import { describeError, statusCode } from '../../kube/errors.ts';
import type { JobSettings } from '../../plan/job.ts';
import { SUC_CONTROLLER_ENV, sucJobSettings } from './suc-controller-env.ts';

export interface SucEnvWatchOptions {
  core: CoreV1Api;
  namespace: string;
  /** The operator's settings, which SUC's environment overrides. */
  base: JobSettings;
  intervalMs: number;
  log: KubeLog;
}

export class SucEnvWatch {
  readonly #o: SucEnvWatchOptions;
  #settings: JobSettings | undefined;
  /** Why the last read failed, while none has succeeded. */
  #error: string | undefined;
  #seen: string | undefined;
  #round: AbortController | undefined;

  constructor(o: SucEnvWatchOptions) {
    this.#o = o;
  }

  /** The settings of SUC's Plans' Jobs as last read, or why there are none yet. */
  settings = (): JobSettings | Error =>
    this.#settings ??
    new Error(
      `SUC's ConfigMap ${this.#o.namespace}/${SUC_CONTROLLER_ENV} is not read yet${this.#error ? ` (${this.#error})` : ''}: SUC's Plans' Jobs wait for its settings`,
    );

  start(): void {
    if (this.#round) return;
    const round = new AbortController();
    this.#round = round;
    void (async () => {
      while (!round.signal.aborted) {
        await this.#read();
        await sleep(this.#o.intervalMs, round.signal);
      }
    })();
  }

  stop(): void {
    this.#round?.abort();
    this.#round = undefined;
  }

  async #read(): Promise<void> {
    const { core, namespace, base, log } = this.#o;
    const where = `${namespace}/${SUC_CONTROLLER_ENV}`;
    let env: Record<string, string>;
    try {
      env = (await core.readNamespacedConfigMap({ name: SUC_CONTROLLER_ENV, namespace })).data ?? {};
    } catch (err) {
      if (statusCode(err) !== 404) {
        this.#error = describeError(err);
        log('warn', `reading SUC's ConfigMap ${where} failed: the settings last read stay`, {
          error: this.#error,
        });
        return;
      }
      env = {};
    }
    const seen = JSON.stringify(env);
    if (seen === this.#seen) return;
    this.#seen = seen;
    const { settings, problems } = sucJobSettings(base, env);
    this.#settings = settings;
    log(problems.length > 0 ? 'warn' : 'info', `SUC's Plans' Jobs: settings from ${where}`, {
      settings,
      ...(problems.length > 0 ? { problems } : {}),
    });
  }
}
