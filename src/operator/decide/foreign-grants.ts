/**
 * A grant only the operator writes, and only in the phases that carry one: any other `reboot-ok` is
 * removed before the node's next step, so no client's value outlives a pass (agents ignore it anyway).
 */
import { AgentProtocol } from '../../api/keys.ts';
import { Phase } from '../../api/phases.ts';
import type { Action } from './action.ts';
import { operatorKeys } from './agent-protocol.ts';
import { type NodeView, quote } from './node-view.ts';

/** Phases in which the node's `nuo.dev/reboot-ok` is the operator's: granted, and not yet withdrawn. */
const GRANT_PHASES: ReadonlySet<Phase | undefined> = new Set([
  Phase.rebootGranted,
  Phase.rebooting,
  Phase.failed,
]);

/** CLUO's and FLUO's grant stays through the health gate too: their agent waits for it to go (agent-protocol.ts). */
const PROTOCOL_GRANT_PHASES: ReadonlySet<Phase | undefined> = new Set([...GRANT_PHASES, Phase.afterReboot]);

/**
 * Grants to remove: any outside the grant phases, and in RebootGranted one that `ownGrant` says nuo did
 * not sign (another client's value over nuo's grant: the agent will not reboot on it, and a fresh grant
 * follows once it is gone).
 */
export function revokeForeignGrants(
  nodes: readonly NodeView[],
  ownGrant: (n: NodeView) => boolean = () => true,
): Action[] {
  // An unsigned grant (CLUO's, FLUO's) in a grant phase is taken as nuo's: nothing tells it apart.
  const foreign = (n: NodeView) =>
    n.protocol
      ? !PROTOCOL_GRANT_PHASES.has(n.state)
      : !GRANT_PHASES.has(n.state) || (n.state === Phase.rebootGranted && !ownGrant(n));
  return nodes
    .filter((n) => n.grantShown && foreign(n))
    .map((n) => {
      const key = operatorKeys(n.protocol ?? AgentProtocol.nuo).rebootOk;
      return {
        type: 'revoke',
        node: n.name,
        reason: `removed ${quote(key, n.annotations[key] ?? '')}: nuo gave no grant (phase ${n.state ?? 'none'})`,
      };
    });
}
