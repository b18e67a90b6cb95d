/**
 * Looks, in the background, for CLUO's and FLUO's own update-operator while any policy's pool speaks
 * their protocol: two operators granting the same agents' reboots would each spend a budget the other
 * does not see. It runs when its leader-election lock (a Lease, ConfigMap or Endpoints, in any namespace;
 * judged as foreign-locks.ts says) is held and renewed, or a Deployment of its name wants replicas; a look
 * that fails counts as running (fail closed).
 */
import type { AppsV1Api, CoordinationV1Api, CoreV1Api, V1Deployment } from '@kubernetes/client-node';
import { type CoreosProtocol, isCoreosProtocol, PROTOCOL_OPERATOR } from '../../api/keys.ts';
import type { KubeLog } from '../../kube/backoff.ts';
import { sleep } from '../../kube/backoff.ts';
import { describeError } from '../../kube/errors.ts';
import type { PolicyEntry } from '../policies/policies.ts';
import type { OperatorSighting } from '../policies/pool-holds.ts';
import {
  annotatedLock,
  type FoundLock,
  holderOf,
  LockKind,
  LockObserver,
  leaseLock,
  lockName,
} from './foreign-locks.ts';

/** A foreign controller by its leader-election lock's name (of the kinds it may use) and its Deployment's. */
export interface ForeignController {
  /** How a message names it, e.g. "FLUO's update-operator". */
  what: string;
  lock: string;
  lockKinds: readonly LockKind[];
  deployment: string;
}

/** The APIs one look reads. */
export interface LookApi {
  coordination: CoordinationV1Api;
  core: CoreV1Api;
  apps: AppsV1Api;
}

/** What the locks and Deployments found by the controller's names say, `held` judging each lock (pure). */
export function controllerSighting(
  c: ForeignController,
  locks: readonly FoundLock[],
  deployments: readonly V1Deployment[],
  held: (lock: FoundLock) => boolean,
): OperatorSighting {
  const holding = locks.find((l) => l.name === c.lock && c.lockKinds.includes(l.kind) && held(l));
  if (holding)
    return { standDown: `${c.what} runs: its ${lockName(holding)} is held by ${holderOf(holding)}` };
  const deployed = deployments.find((d) => d.metadata?.name === c.deployment && (d.spec?.replicas ?? 1) > 0);
  if (deployed)
    return {
      standDown: `${c.what} is deployed: Deployment ${deployed.metadata?.namespace ?? ''}/${c.deployment} wants ${deployed.spec?.replicas ?? 1} replica(s)`,
    };
  return {};
}

const protocolOperator = (protocol: CoreosProtocol): ForeignController => ({
  ...PROTOCOL_OPERATOR[protocol],
  lockKinds: [LockKind.lease, LockKind.configMap, LockKind.endpoints],
});

/** What the locks and Deployments found by the protocol's names say (pure). */
export const sightingOf = (
  protocol: CoreosProtocol,
  locks: readonly FoundLock[],
  deployments: readonly V1Deployment[],
  held: (lock: FoundLock) => boolean,
): OperatorSighting => controllerSighting(protocolOperator(protocol), locks, deployments, held);

export interface ProtocolOperatorWatchOptions extends LookApi {
  intervalMs: number;
  /** A sighting that changed asks for a pass. */
  onChange: () => void;
  log: KubeLog;
}

export class ProtocolOperatorWatch {
  readonly #o: ProtocolOperatorWatchOptions;
  readonly #seen = new Map<CoreosProtocol, OperatorSighting>();
  readonly #locks = new Map<CoreosProtocol, LockObserver>();
  #round: AbortController | undefined;
  #wanted = new Set<CoreosProtocol>();

  constructor(o: ProtocolOperatorWatchOptions) {
    this.#o = o;
  }

  /** Looks for the protocols these policies' pools speak (their valid or last valid generation's). */
  sync(policies: readonly PolicyEntry[]): void {
    const wanted = new Set<CoreosProtocol>();
    for (const p of policies) {
      const r = p.current.ok ? p.current.policy : p.lastValid;
      if (isCoreosProtocol(r?.agentProtocol)) wanted.add(r.agentProtocol);
    }
    this.#wanted = wanted;
    for (const protocol of this.#seen.keys()) if (!wanted.has(protocol)) this.#seen.delete(protocol);
    for (const protocol of this.#locks.keys()) if (!wanted.has(protocol)) this.#locks.delete(protocol);
    if (wanted.size > 0 && !this.#round) this.#loop();
  }

  /** The latest sighting for a protocol; undefined before its first look. */
  sighting = (protocol: CoreosProtocol): OperatorSighting | undefined => this.#seen.get(protocol);

  /** Stops looking (leadership lost, or shutdown); a new leadership looks afresh. */
  stop(): void {
    this.#round?.abort();
    this.#round = undefined;
    this.#seen.clear();
    this.#locks.clear();
  }

  #loop(): void {
    const round = new AbortController();
    this.#round = round;
    void (async () => {
      while (!round.signal.aborted && this.#wanted.size > 0) {
        for (const protocol of this.#wanted) {
          const seen = await this.#look(protocol);
          if (round.signal.aborted) return;
          if (JSON.stringify(seen) === JSON.stringify(this.#seen.get(protocol))) continue;
          this.#seen.set(protocol, seen);
          this.#o.log(seen.standDown ? 'warn' : 'info', 'protocol operator', { protocol, ...seen });
          this.#o.onChange();
        }
        await sleep(this.#o.intervalMs, round.signal);
      }
      if (this.#round === round) this.#round = undefined;
    })();
  }

  #look(protocol: CoreosProtocol): Promise<OperatorSighting> {
    let locks = this.#locks.get(protocol);
    if (!locks) {
      locks = new LockObserver();
      this.#locks.set(protocol, locks);
    }
    return lookForOperator(this.#o, protocol, locks);
  }
}

/**
 * One look for the protocol's own update-operator: its lock and Deployment by name, in every namespace.
 * `locks` keeps what earlier looks saw; a fresh one (a CLI's single look) takes a held lock as held.
 */
export const lookForOperator = (
  api: LookApi,
  protocol: CoreosProtocol,
  locks: LockObserver = new LockObserver(),
): Promise<OperatorSighting> => lookForController(api, protocolOperator(protocol), locks);

/** Every lock of the controller's name, of the kinds it may use, in every namespace. */
async function listLocks(api: LookApi, c: ForeignController): Promise<FoundLock[]> {
  const byName = { fieldSelector: `metadata.name=${c.lock}` };
  const lists = await Promise.all(
    c.lockKinds.map(async (kind): Promise<FoundLock[]> => {
      switch (kind) {
        case LockKind.lease:
          return (await api.coordination.listLeaseForAllNamespaces(byName)).items.map(leaseLock);
        case LockKind.configMap:
          return (await api.core.listConfigMapForAllNamespaces(byName)).items.map((o) =>
            annotatedLock(kind, o),
          );
        case LockKind.endpoints:
          return (await api.core.listEndpointsForAllNamespaces(byName)).items.map((o) =>
            annotatedLock(kind, o),
          );
      }
    }),
  );
  return lists.flat();
}

/** One look for a foreign controller: its lock (judged by `locks`) and Deployment by name, in every namespace. */
export async function lookForController(
  api: LookApi,
  c: ForeignController,
  locks: LockObserver,
): Promise<OperatorSighting> {
  try {
    const [found, deployments] = await Promise.all([
      listLocks(api, c),
      api.apps.listDeploymentForAllNamespaces({ fieldSelector: `metadata.name=${c.deployment}` }),
    ]);
    return controllerSighting(c, found, deployments.items, locks.observe(found));
  } catch (err) {
    return {
      standDown: `cannot tell whether ${c.what} runs (its lock ${c.lock} (${c.lockKinds.join(', ')}) and Deployment ${c.deployment} could not be listed: ${describeError(err)})`,
    };
  }
}
