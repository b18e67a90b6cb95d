/**
 * Looks, in the background, for system-upgrade-controller while nuo runs SUC's Plans in place: two
 * controllers running one Plan would each start its Jobs, drain its nodes and write its status. SUC runs
 * when its leader-election Lease (wrangler's, named as its controller, in its namespace) is held and
 * renewed, or a Deployment of its name (any namespace) wants replicas; a look that fails counts as
 * running, and so does not having looked yet (fail closed).
 */
import type { KubeLog } from '../../kube/backoff.ts';
import { sleep } from '../../kube/backoff.ts';
import type { OperatorSighting } from '../policies/pool-holds.ts';
import { LockKind, LockObserver } from './foreign-locks.ts';
import { type ForeignController, type LookApi, lookForController } from './protocol-operators.ts';

/** SUC's manifests name its Deployment, its controller (SYSTEM_UPGRADE_CONTROLLER_NAME) and so its Lease. */
export const SUC_CONTROLLER: ForeignController = {
  what: 'system-upgrade-controller',
  lock: 'system-upgrade-controller',
  lockKinds: [LockKind.lease],
  deployment: 'system-upgrade-controller',
};

const NOT_YET: OperatorSighting = { standDown: 'not known yet whether system-upgrade-controller runs' };

export interface SucControllerWatchOptions extends LookApi {
  intervalMs: number;
  /** A sighting that changed asks for a pass. */
  onChange: () => void;
  log: KubeLog;
}

export class SucControllerWatch {
  readonly #o: SucControllerWatchOptions;
  #seen: OperatorSighting = NOT_YET;
  #locks = new LockObserver();
  #round: AbortController | undefined;

  constructor(o: SucControllerWatchOptions) {
    this.#o = o;
  }

  /** Why nuo acts on no SUC Plan now; undefined: SUC's controller is gone. */
  standDown = (): string | undefined => this.#seen.standDown;

  /** Looks now and every interval until stopped. */
  start(): void {
    if (this.#round) return;
    const round = new AbortController();
    this.#round = round;
    void (async () => {
      while (!round.signal.aborted) {
        const seen = await lookForController(this.#o, SUC_CONTROLLER, this.#locks);
        if (round.signal.aborted) return;
        if (seen.standDown !== this.#seen.standDown) {
          this.#seen = seen;
          if (seen.standDown)
            this.#o.log('warn', "nuo acts on no upgrade.cattle.io Plan while SUC's controller runs", {
              why: seen.standDown,
            });
          else this.#o.log('info', "system-upgrade-controller is gone: nuo runs SUC's Plans");
          this.#o.onChange();
        }
        await sleep(this.#o.intervalMs, round.signal);
      }
    })();
  }

  stop(): void {
    this.#round?.abort();
    this.#round = undefined;
    this.#seen = NOT_YET;
    this.#locks = new LockObserver();
  }
}
