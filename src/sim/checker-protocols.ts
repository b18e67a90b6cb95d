/**
 * How the independent checker judges a reboot of a node whose agent is CLUO's or FLUO's, or a FleetLock
 * client (checker.ts): that grant cannot be signed, so a reboot is nuo's only if the protocol's grant
 * (`reboot-ok`; for FleetLock `nuo.dev/fleetlock-granted`, the only key nuo's FleetLock server answers
 * pre-reboot 200 by) reads "true" while nuo's own keys show it granted the reboot (a grant phase, or
 * Failed with the grant left standing) for the boot the node rebooted from.
 */
import type { V1Node } from '@kubernetes/client-node';
import {
  AgentProtocol,
  Annotations,
  FleetLockKeys,
  type ForeignProtocol,
  protocolKeys,
} from '../api/keys.ts';
import { Phase } from '../api/phases.ts';

/**
 * Phases in which nuo's grant stands. Failed too: nuo keeps the grant, its cordon and the slot of a node
 * whose agent did not start the reboot in time, so a late reboot from the granted boot is still its grant
 * (as nuo's signed grant for that boot stays valid).
 */
const GRANTED_PHASES: ReadonlySet<string> = new Set([Phase.rebootGranted, Phase.rebooting, Phase.failed]);

/** Why a reboot from `bootId` was not nuo's grant in the node's protocol, or undefined when it was. */
export function protocolGrantMissing(
  n: V1Node | undefined,
  protocol: ForeignProtocol,
  bootId: string,
): string | undefined {
  const a = n?.metadata?.annotations ?? {};
  const ok = protocol === AgentProtocol.fleetlock ? FleetLockKeys.granted : protocolKeys(protocol).rebootOk;
  if (a[ok] !== 'true') return `no ${ok}="true"`;
  const state = a[Annotations.state];
  if (!GRANTED_PHASES.has(state ?? '')) return `${ok}="true" outside nuo's grant (phase ${state ?? 'none'})`;
  const granted = a[Annotations.grantedBootId];
  if (granted !== bootId) return `nuo granted boot ${granted ?? '(none)'}, the node rebooted from ${bootId}`;
  return undefined;
}

/**
 * The key of the agent's reboot mark in the node's protocol. A FleetLock client marks nothing: the grant it
 * was answered 200 by stands for the mark.
 */
export const rebootMarkOf = (protocol: AgentProtocol): string =>
  protocol === AgentProtocol.nuo
    ? Annotations.rebootInProgress
    : protocol === AgentProtocol.fleetlock
      ? FleetLockKeys.granted
      : protocolKeys(protocol).rebootInProgress;
