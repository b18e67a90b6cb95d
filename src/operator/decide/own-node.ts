/**
 * The node the operator's own process runs on (decision 0060). Its drain evicts the leader's pod, so it
 * goes last in its pool, and the leader hands its Lease to a standby before that drain starts instead
 * of draining itself.
 * - Order: the node is moved to the end of its pool's admission order, after any zone order.
 * - Gate (gates.ts ownNodeLast): it is not admitted in a pass that admitted another node of its pool;
 *   when no other node can go, it goes (never starved).
 * - Handover: once per drain (the node's Draining phase, by its attempt and state-since), the leader steps down and
 *   releases its Lease instead of starting the drain; a standby drains it. A leader that leads again
 *   in the same drain (no standby took over) drains its own node.
 */
import { Annotations } from '../../api/keys.ts';
import type { NodeView } from './node-view.ts';

/** The admission order with the operator's own node, if it waits, moved to the end. */
export function ownNodeLast(ordered: readonly NodeView[], own: string | undefined): NodeView[] {
  if (own === undefined) return [...ordered];
  return [...ordered.filter((n) => n.name !== own), ...ordered.filter((n) => n.name === own)];
}

/** What the own node's drain is named by: its attempt and its Draining phase as written. */
type Drain = Pick<NodeView, 'name' | 'attempt' | 'annotations'>;

/**
 * The drain a handover is made for: the node's attempt and the state-since its Draining phase was written
 * with (an identity, compared for equality only).
 */
export function drainKey(n: Drain): string {
  return `${n.name}@${n.attempt ?? ''}@${n.annotations[Annotations.stateSince] ?? ''}`;
}

/**
 * Whether the leader hands over instead of draining `n`: it is the operator's own node and its leadership
 * was not handed over for this drain already (then nobody took it over, and the leader drains it).
 */
export function handsOver(n: Drain, own: string | undefined, handedOver: string | undefined): boolean {
  return own !== undefined && n.name === own && drainKey(n) !== handedOver;
}

/** The operator's own node and the one drain it handed its leadership over for. */
export class OwnNode {
  readonly name: string | undefined;
  readonly #handOver: (node: string) => void;
  #handedOver: string | undefined;

  /** `handOver`: steps down and releases the Lease now, campaigning again only after a pause. */
  constructor(name: string | undefined, handOver: (node: string) => void) {
    this.name = name;
    this.#handOver = handOver;
  }

  /** Whether starting `n`'s drain is the handover's business (it is this process's node, not handed over yet). */
  due(n: Drain): boolean {
    return handsOver(n, this.name, this.#handedOver);
  }

  /** Hands the leadership over instead of draining `n`, when due; true when it did. */
  yields(n: Drain): boolean {
    if (!this.due(n)) return false;
    this.#handedOver = drainKey(n);
    this.#handOver(n.name);
    return true;
  }
}
