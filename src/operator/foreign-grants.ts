/**
 * A grant only the operator writes, and only in the phases that carry one: any other `reboot-ok` is
 * removed before the node's next step, so no client's value outlives a pass (agents ignore it anyway).
 */
import { Annotations } from '../api/keys.ts';
import { Phase } from '../api/phases.ts';
import type { Action } from './decide.ts';
import { type NodeView, quote } from './node-view.ts';

/** Phases in which the node's `nuo.dev/reboot-ok` is the operator's: granted, and not yet withdrawn. */
const GRANT_PHASES: ReadonlySet<Phase | undefined> = new Set([
  Phase.rebootGranted,
  Phase.rebooting,
  Phase.failed,
]);

/**
 * Grants to remove: any outside the grant phases, and in RebootGranted one that `ownGrant` says nuo did
 * not sign (another client's value over nuo's grant: the agent will not reboot on it, and a fresh grant
 * follows once it is gone).
 */
export function revokeForeignGrants(
  nodes: readonly NodeView[],
  ownGrant: (n: NodeView) => boolean = () => true,
): Action[] {
  return nodes
    .filter(
      (n) =>
        n.grantShown && (!GRANT_PHASES.has(n.state) || (n.state === Phase.rebootGranted && !ownGrant(n))),
    )
    .map((n) => ({
      type: 'revoke',
      node: n.name,
      reason: `removed ${quote(Annotations.rebootOk, n.annotations[Annotations.rebootOk] ?? '')}: nuo gave no grant (phase ${n.state ?? 'none'})`,
    }));
}
