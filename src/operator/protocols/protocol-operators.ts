/**
 * Looks, in the background, for CLUO's and FLUO's own update-operator while any policy's pool speaks
 * their protocol: two operators granting the same agents' reboots would each spend a budget the other
 * does not see. It runs when its leader-election Lease (in any namespace) is held and renewed, or a
 * Deployment of its name wants replicas; a look that fails counts as running (fail closed). A Lease is
 * judged as client-go's leader election judges one (leaderelection.go, observedTime): held until its
 * leaseDuration has passed, on this process's monotonic clock, since this process last saw its record
 * change; never by its renewTime, which the holder's clock wrote (safety rule 10).
 */
import type { AppsV1Api, CoordinationV1Api, V1Deployment, V1Lease } from '@kubernetes/client-node';
import { type CoreosProtocol, isCoreosProtocol, PROTOCOL_OPERATOR } from '../../api/keys.ts';
import type { KubeLog } from '../../kube/backoff.ts';
import { sleep } from '../../kube/backoff.ts';
import { describeError } from '../../kube/errors.ts';
import { type LeaseObservation, leaseRecord } from '../../kube/lease-decision.ts';
import type { PolicyEntry } from '../policies/policies.ts';
import type { OperatorSighting } from '../policies/pool-holds.ts';

const nameOf = (o: { metadata?: { namespace?: string; name?: string } }) =>
  `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;

/**
 * Whether a Lease is held: it names a holder, and its leaseDuration has not passed since `observed`,
 * when this process last saw its record change (client-go's isLeaseValid). Pure; `now` and `observed.at`
 * are on the observer's monotonic clock.
 */
export function leaseHeld(lease: V1Lease, observed: LeaseObservation, now: number): boolean {
  if (!lease.spec?.holderIdentity) return false;
  return observed.at + (lease.spec.leaseDurationSeconds ?? 0) * 1000 > now;
}

/** A Lease's record as client-go compares it, and its resourceVersion: any write to it is a change. */
const leaseFingerprint = (lease: V1Lease) =>
  JSON.stringify([leaseRecord(lease), lease.metadata?.resourceVersion ?? '']);

/**
 * When this process last saw each Lease's record change, on its monotonic clock: a first sight counts as
 * a change (a new candidate in client-go waits a whole leaseDuration too).
 */
export class LeaseObserver {
  readonly #seen = new Map<string, LeaseObservation>();
  readonly #clock: () => number;

  constructor(clock: () => number = () => performance.now()) {
    this.#clock = clock;
  }

  /** Takes in a fresh list of Leases (others are forgotten) and returns whether a Lease is held now. */
  observe(leases: readonly V1Lease[]): (lease: V1Lease) => boolean {
    const now = this.#clock();
    const live = new Set<string>();
    for (const lease of leases) {
      const key = `${lease.metadata?.uid ?? ''}/${nameOf(lease)}`;
      live.add(key);
      const fingerprint = leaseFingerprint(lease);
      const previous = this.#seen.get(key);
      if (previous?.fingerprint !== fingerprint) this.#seen.set(key, { fingerprint, at: now });
    }
    for (const key of this.#seen.keys()) if (!live.has(key)) this.#seen.delete(key);
    return (lease) => {
      const seen = this.#seen.get(`${lease.metadata?.uid ?? ''}/${nameOf(lease)}`);
      return seen !== undefined && leaseHeld(lease, seen, now);
    };
  }
}

/** A foreign controller by its leader-election Lease's and its Deployment's names. */
export interface ForeignController {
  /** How a message names it, e.g. "the flatcar update-operator". */
  what: string;
  lease: string;
  deployment: string;
}

/** What the Leases and Deployments found by the controller's names say, `held` judging each Lease (pure). */
export function controllerSighting(
  c: ForeignController,
  leases: readonly V1Lease[],
  deployments: readonly V1Deployment[],
  held: (lease: V1Lease) => boolean,
): OperatorSighting {
  const holding = leases.find((l) => l.metadata?.name === c.lease && held(l));
  if (holding)
    return {
      standDown: `${c.what} runs: its Lease ${nameOf(holding)} is held by ${holding.spec?.holderIdentity}`,
    };
  const deployed = deployments.find((d) => d.metadata?.name === c.deployment && (d.spec?.replicas ?? 1) > 0);
  if (deployed)
    return {
      standDown: `${c.what} is deployed: Deployment ${nameOf(deployed)} wants ${deployed.spec?.replicas ?? 1} replica(s)`,
    };
  return {};
}

const protocolOperator = (protocol: CoreosProtocol): ForeignController => ({
  what: `the ${protocol} update-operator`,
  ...PROTOCOL_OPERATOR[protocol],
});

/** What the Leases and Deployments found by the protocol's names say (pure). */
export const sightingOf = (
  protocol: CoreosProtocol,
  leases: readonly V1Lease[],
  deployments: readonly V1Deployment[],
  held: (lease: V1Lease) => boolean,
): OperatorSighting => controllerSighting(protocolOperator(protocol), leases, deployments, held);

export interface ProtocolOperatorWatchOptions {
  coordination: CoordinationV1Api;
  apps: AppsV1Api;
  intervalMs: number;
  /** A sighting that changed asks for a pass. */
  onChange: () => void;
  log: KubeLog;
}

export class ProtocolOperatorWatch {
  readonly #o: ProtocolOperatorWatchOptions;
  readonly #seen = new Map<CoreosProtocol, OperatorSighting>();
  readonly #leases = new Map<CoreosProtocol, LeaseObserver>();
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
    for (const protocol of this.#leases.keys()) if (!wanted.has(protocol)) this.#leases.delete(protocol);
    if (wanted.size > 0 && !this.#round) this.#loop();
  }

  /** The latest sighting for a protocol; undefined before its first look. */
  sighting = (protocol: CoreosProtocol): OperatorSighting | undefined => this.#seen.get(protocol);

  /** Stops looking (leadership lost, or shutdown); a new leadership looks afresh. */
  stop(): void {
    this.#round?.abort();
    this.#round = undefined;
    this.#seen.clear();
    this.#leases.clear();
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
    let leases = this.#leases.get(protocol);
    if (!leases) {
      leases = new LeaseObserver();
      this.#leases.set(protocol, leases);
    }
    return lookForOperator(this.#o, protocol, leases);
  }
}

/**
 * One look for the protocol's own update-operator: its Lease and Deployment by name, in every namespace.
 * `leases` keeps what earlier looks saw; a fresh one (a CLI's single look) takes a held Lease as held.
 */
export const lookForOperator = (
  api: { coordination: CoordinationV1Api; apps: AppsV1Api },
  protocol: CoreosProtocol,
  leases: LeaseObserver = new LeaseObserver(),
): Promise<OperatorSighting> => lookForController(api, protocolOperator(protocol), leases);

/** One look for a foreign controller: its Lease (judged by `leases`) and Deployment by name, in every namespace. */
export async function lookForController(
  api: { coordination: CoordinationV1Api; apps: AppsV1Api },
  c: ForeignController,
  leases: LeaseObserver,
): Promise<OperatorSighting> {
  try {
    const [found, deployments] = await Promise.all([
      api.coordination.listLeaseForAllNamespaces({ fieldSelector: `metadata.name=${c.lease}` }),
      api.apps.listDeploymentForAllNamespaces({ fieldSelector: `metadata.name=${c.deployment}` }),
    ]);
    return controllerSighting(c, found.items, deployments.items, leases.observe(found.items));
  } catch (err) {
    return {
      standDown: `cannot tell whether ${c.what} runs (its Lease ${c.lease} and Deployment ${c.deployment} could not be listed: ${describeError(err)})`,
    };
  }
}
