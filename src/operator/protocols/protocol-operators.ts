/**
 * Looks, in the background, for CLUO's and FLUO's own update-operator while any policy's pool speaks
 * their protocol: two operators granting the same agents' reboots would each spend a budget the other
 * does not see. It runs when its leader-election Lease (in any namespace) is held and renewed, or a
 * Deployment of its name wants replicas; a look that fails counts as running (fail closed).
 */
import type { AppsV1Api, CoordinationV1Api, V1Deployment, V1Lease } from '@kubernetes/client-node';
import { type CoreosProtocol, isCoreosProtocol, PROTOCOL_OPERATOR } from '../../api/keys.ts';
import type { KubeLog } from '../../kube/backoff.ts';
import { sleep } from '../../kube/backoff.ts';
import { describeError } from '../../kube/errors.ts';
import type { PolicyEntry } from '../policies/policies.ts';
import type { OperatorSighting } from '../policies/pool-holds.ts';

const nameOf = (o: { metadata?: { namespace?: string; name?: string } }) =>
  `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;

/** A held Lease counts until its duration has passed since its last renewal (client-go's own rule). */
function leaseHeld(lease: V1Lease, now: number): boolean {
  const holder = lease.spec?.holderIdentity;
  const renewed = lease.spec?.renewTime ?? lease.spec?.acquireTime;
  if (!holder || !renewed) return false;
  return new Date(renewed).getTime() + (lease.spec?.leaseDurationSeconds ?? 0) * 1000 > now;
}

/** A foreign controller by its leader-election Lease's and its Deployment's names. */
export interface ForeignController {
  /** How a message names it, e.g. "the flatcar update-operator". */
  what: string;
  lease: string;
  deployment: string;
}

/** What the Leases and Deployments found by the controller's names say (pure). */
export function controllerSighting(
  c: ForeignController,
  leases: readonly V1Lease[],
  deployments: readonly V1Deployment[],
  now: number,
): OperatorSighting {
  const held = leases.find((l) => l.metadata?.name === c.lease && leaseHeld(l, now));
  if (held)
    return { standDown: `${c.what} runs: its Lease ${nameOf(held)} is held by ${held.spec?.holderIdentity}` };
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
  now: number,
): OperatorSighting => controllerSighting(protocolOperator(protocol), leases, deployments, now);

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
    if (wanted.size > 0 && !this.#round) this.#loop();
  }

  /** The latest sighting for a protocol; undefined before its first look. */
  sighting = (protocol: CoreosProtocol): OperatorSighting | undefined => this.#seen.get(protocol);

  /** Stops looking (leadership lost, or shutdown); a new leadership looks afresh. */
  stop(): void {
    this.#round?.abort();
    this.#round = undefined;
    this.#seen.clear();
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
    return lookForOperator(this.#o, protocol);
  }
}

/** One look for the protocol's own update-operator: its Lease and Deployment by name, in every namespace. */
export const lookForOperator = (
  api: { coordination: CoordinationV1Api; apps: AppsV1Api },
  protocol: CoreosProtocol,
): Promise<OperatorSighting> => lookForController(api, protocolOperator(protocol));

/** One look for a foreign controller: its Lease and Deployment by name, in every namespace. */
export async function lookForController(
  api: { coordination: CoordinationV1Api; apps: AppsV1Api },
  c: ForeignController,
): Promise<OperatorSighting> {
  try {
    const [leases, deployments] = await Promise.all([
      api.coordination.listLeaseForAllNamespaces({ fieldSelector: `metadata.name=${c.lease}` }),
      api.apps.listDeploymentForAllNamespaces({ fieldSelector: `metadata.name=${c.deployment}` }),
    ]);
    return controllerSighting(c, leases.items, deployments.items, Date.now());
  } catch (err) {
    return {
      standDown: `cannot tell whether ${c.what} runs (its Lease ${c.lease} and Deployment ${c.deployment} could not be listed: ${describeError(err)})`,
    };
  }
}
