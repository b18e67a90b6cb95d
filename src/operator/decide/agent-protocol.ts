/**
 * A pool whose nodes run CLUO's or FLUO's update-agent, unmodified, or a FleetLock client such as Zincati: its nodes read through that protocol's
 * keys, and the keys nuo's writes use for the grant and the hooks. Every phase, gate and budget is nuo's
 * own; only what the agent reads and writes changes (docs/architecture.md, "Another project's agent").
 */
import {
  AgentProtocol,
  Annotations,
  FleetLockKeys,
  isCoreosProtocol,
  Labels,
  protocolKeys,
} from '../../api/keys.ts';
import type { NodeView } from './node-view.ts';

/**
 * The grant of CLUO's and FLUO's protocol: their agent reboots on this value alone (with its own
 * reboot-needed), so it cannot name the node, the boot or the attempt as nuo's signed grant does.
 */
export const PROTOCOL_GRANT = 'true';

/** The keys nuo's operator writes for a pool's protocol: the grant, and the labels that ask for hooks. */
export interface OperatorKeys {
  rebootOk: string;
  beforeReboot: string;
  afterReboot: string;
  /** Where the boot the grant was given on is recorded (a protocol whose grant cannot name it). */
  grantedBootId?: string;
}

export function operatorKeys(protocol: AgentProtocol): OperatorKeys {
  if (protocol === AgentProtocol.nuo)
    return {
      rebootOk: Annotations.rebootOk,
      beforeReboot: Labels.beforeReboot,
      afterReboot: Labels.afterReboot,
    };
  if (protocol === AgentProtocol.fleetlock)
    return {
      rebootOk: FleetLockKeys.granted,
      beforeReboot: Labels.beforeReboot,
      afterReboot: Labels.afterReboot,
      grantedBootId: Annotations.grantedBootId,
    };
  const k = protocolKeys(protocol);
  return {
    rebootOk: k.rebootOk,
    beforeReboot: k.beforeReboot,
    afterReboot: k.afterReboot,
    grantedBootId: Annotations.grantedBootId,
  };
}

/**
 * Whether CLUO's or FLUO's agent, back from the reboot nuo granted, runs another version than the one its
 * update engine staged: the update did not take, a reboot loop in the making (docs/decisions/0009). That
 * agent writes `reboot-needed` "false" at every start, so its need cannot say so; its `version` label
 * (os-release, written at its start) and the `new-version` it reported with the need can. Either one
 * missing: taken.
 */
export function updateNotTaken(n: NodeView): boolean {
  if (!isCoreosProtocol(n.protocol)) return false;
  const k = protocolKeys(n.protocol);
  const running = n.labels[k.version];
  const staged = n.annotations[k.newVersion];
  return running !== undefined && staged !== undefined && running !== staged;
}

/** nuo's agent keys, whose problems mean nothing on a node whose agent is another project's. */
const NUO_AGENT_KEYS = [Annotations.rebootNeeded, Annotations.rebootInProgress, Annotations.rebootRequested];

/**
 * The node as decide() reads it when its pool speaks `protocol`. For CLUO's and FLUO's: the need is the
 * agent's `reboot-needed` (why: its update engine's status and new version); the grant is their
 * `reboot-ok` = "true"; the reboot mark is their `reboot-in-progress`, which the agent sets back to
 * "false" when it starts after the boot (its report after the boot); the boot the grant was given on is
 * nuo's record of it; their `reboot-paused` pauses the node as nuo's does. A `nuo.dev/reboot-requested`
 * is not read: that agent reboots only for a need of its own update engine.
 */
export function speaking(n: NodeView, protocol: AgentProtocol): NodeView {
  if (protocol === AgentProtocol.nuo) return n;
  if (protocol === AgentProtocol.fleetlock) return speakingFleetLock(n);
  const k = protocolKeys(protocol);
  const a = n.annotations;
  const why = [a[k.status], a[k.newVersion] ? `new version ${a[k.newVersion]}` : undefined].filter(Boolean);
  const { rebootRequested: _ignored, rebootNeededReason: _nuo, ...rest } = n;
  return {
    ...rest,
    protocol,
    rebootNeeded: a[k.rebootNeeded] === 'true',
    ...(why.length > 0 ? { rebootNeededReason: why.join(', ') } : {}),
    paused: n.paused || a[k.rebootPaused] === 'true',
    grantShown: a[k.rebootOk] === PROTOCOL_GRANT,
    rebootInProgress: a[k.rebootInProgress] === 'true',
    bootIdBefore: a[Annotations.grantedBootId],
    hasBeforeRebootLabel: n.labels[k.beforeReboot] === 'true',
    hasAfterRebootLabel: n.labels[k.afterReboot] === 'true',
    problems: n.problems.filter((p) => !NUO_AGENT_KEYS.some((key) => p.startsWith(`${key}=`))),
  };
}

/**
 * Whether a FleetLock client's need stands: it asked pre-reboot and has not said steady-state since (the
 * handler removes the steady-state with each pre-reboot it records, so which keys stand says it, whatever
 * clocks wrote their times). The FleetLock handler and decide() read the need through this one function.
 */
export function fleetLockNeed(annotations: Record<string, string>): boolean {
  return (
    annotations[FleetLockKeys.preReboot] !== undefined && annotations[FleetLockKeys.steadyState] === undefined
  );
}

/**
 * A FleetLock client's node as decide() reads it: the need is a pre-reboot request not followed by a
 * steady-state; the grant is nuo's `fleetlock-granted`, which the handler answers pre-reboot 200 by; the
 * client marks no reboot, so a boot ID other than the granted one confirms it; back from it, the need
 * standing until the client's steady-state is its report to the health gate (shown as the reboot mark).
 */
function speakingFleetLock(n: NodeView): NodeView {
  const a = n.annotations;
  const { rebootRequested: _ignored, rebootNeededReason: _nuo, ...rest } = n;
  const need = fleetLockNeed(a);
  const bootIdBefore = a[Annotations.grantedBootId];
  const rebooted = bootIdBefore !== undefined && n.bootId !== '' && n.bootId !== bootIdBefore;
  return {
    ...rest,
    protocol: AgentProtocol.fleetlock,
    rebootNeeded: need,
    ...(need ? { rebootNeededReason: `FleetLock pre-reboot at ${a[FleetLockKeys.preReboot]}` } : {}),
    grantShown: a[FleetLockKeys.granted] === PROTOCOL_GRANT,
    rebootInProgress: need && rebooted,
    ...(bootIdBefore !== undefined ? { bootIdBefore } : {}),
    hasBeforeRebootLabel: n.labels[Labels.beforeReboot] === 'true',
    hasAfterRebootLabel: n.labels[Labels.afterReboot] === 'true',
    problems: n.problems.filter((p) => !NUO_AGENT_KEYS.some((key) => p.startsWith(`${key}=`))),
  };
}
