/**
 * What nuo answers a FleetLock request, and the one write it makes on the node first (docs/decisions/0051).
 * The lock is a slot of nuo's ledger: a pre-reboot records the need and is answered 200 only once nuo's
 * attempt has drained the node and granted the reboot on its current boot; a steady-state reports the node
 * back, and is answered 200 once the attempt has ended (after the health gate) or when no slot is held.
 */
import { Phase as P, type Phase, SLOT_PHASES } from '../api/phases.ts';
import { type FleetLockError, FleetLockOp, type FleetLockRequest } from './request.ts';

/** A node whose derived FleetLock ID is the request's, as the operator reads it. */
export interface FleetLockNode {
  name: string;
  /** The pool the node is in, if its pool's agents speak FleetLock; undefined otherwise. */
  pool?: string;
  phase: Phase;
  stateReason?: string;
  /** nuo's attempt granted the reboot and the node still runs the boot it was granted on. */
  grantedThisBoot: boolean;
  /** A pre-reboot request is recorded and not withdrawn by a later steady-state. */
  needRecorded: boolean;
}

/** Which key the handler writes before it answers: the need (pre-reboot) or the node's report (steady-state). */
export const FleetLockWrite = { need: 'need', steadyState: 'steady-state' } as const;
export type FleetLockWrite = (typeof FleetLockWrite)[keyof typeof FleetLockWrite];

export type FleetLockAnswer =
  | { status: 200; node: string; record?: FleetLockWrite }
  | (FleetLockError & { node?: string; record?: FleetLockWrite });

/** The answer to `req` given the nodes whose ID matches it (normally one). */
export function answer(req: FleetLockRequest, matches: readonly FleetLockNode[]): FleetLockAnswer {
  if (matches.length === 0)
    return {
      status: 404,
      kind: 'unknown_id',
      value: `no node's machine ID derives client_params.id ${req.id}: is the client on a node of this cluster?`,
    };
  if (matches.length > 1)
    return {
      status: 409,
      kind: 'ambiguous_id',
      value: `nodes ${matches.map((m) => m.name).join(', ')} share one machine ID: give each a machine ID of its own`,
    };
  const n = matches[0] as FleetLockNode;
  if (n.pool === undefined)
    return {
      status: 409,
      kind: 'not_fleetlock_pool',
      node: n.name,
      value: `node ${n.name} is in no pool whose UpdatePolicy sets agentProtocol: fleetlock`,
    };
  if (n.pool !== req.group)
    return {
      status: 409,
      kind: 'unknown_group',
      node: n.name,
      value: `node ${n.name} is in pool ${n.pool}, not ${req.group}: set the client's group to ${n.pool}`,
    };
  return req.op === FleetLockOp.preReboot ? preReboot(n) : steadyState(n);
}

function preReboot(n: FleetLockNode): FleetLockAnswer {
  if (n.grantedThisBoot) return { status: 200, node: n.name };
  const waiting = {
    status: 409,
    kind: 'lock_not_granted',
    node: n.name,
    value: `node ${n.name} waits for its turn (${n.phase}${n.stateReason ? `: ${n.stateReason}` : ''}); ask again`,
  };
  return n.needRecorded ? waiting : { ...waiting, record: FleetLockWrite.need };
}

function steadyState(n: FleetLockNode): FleetLockAnswer {
  const holds = SLOT_PHASES.has(n.phase);
  if (!holds && !n.needRecorded) return { status: 200, node: n.name };
  if (!holds) return { status: 200, node: n.name, record: FleetLockWrite.steadyState };
  return {
    status: 409,
    kind: 'lock_held',
    node: n.name,
    ...(n.needRecorded ? { record: FleetLockWrite.steadyState } : {}),
    value: `node ${n.name} holds a slot until its attempt ends (${n.phase}${n.phase === P.afterReboot ? ': health gate' : ''}); ask again`,
  };
}
