/**
 * Every snapshot decide() sees is built here, the same way for each of its three callers (a pass, a node
 * re-decided after a conflict, a handover): the cached nodes as views (computed once per
 * resourceVersion, the soak on this leader's clock), the drains and admissions in flight in this
 * process, and the check of nuo's own grants.
 */
import type { V1Node } from '@kubernetes/client-node';
import { type Action, type DecideConfig, type Decision, decide } from './decide.ts';
import type { Health } from './health-gate.ts';
import { inPool, type Ledger, type LedgerChange, type Slot } from './ledger.ts';
import { type NodeView, viewNode } from './node-view.ts';
import { SoakClock } from './soak-clock.ts';

/** Actions that change only the ledger: the pass's own conditional write. */
export type LedgerOnly = Extract<LedgerChange, { type: 'release' | 'promise' | 'unpromise' | 'claim' }>;
const LEDGER_ONLY: ReadonlySet<Action['type']> = new Set(['release', 'promise', 'unpromise', 'claim']);
export const isLedgerChange = (a: Action): a is LedgerOnly => LEDGER_ONLY.has(a.type);
/** What a node step does: every action but those that only change the ledger. */
export type NodeStep = Exclude<Action, LedgerOnly>;

export interface DeciderOptions {
  /** The pool whose budget this decides ('' the default pool: the operator's own settings). */
  pool: string;
  config: DecideConfig;
  nodes: { list(): V1Node[] };
  /** Nodes with a drain running in this process. */
  draining: () => ReadonlySet<string>;
  /** Whether a node's grant is one nuo signed for it. */
  ownGrant: (n: NodeView) => boolean;
}

export class Decider {
  readonly #o: DeciderOptions;
  /** Admissions decided here and not yet landed (Snapshot.admitting): marked before any await. */
  readonly admitting = new Set<string>();
  readonly #views = new Map<string, NodeView>();
  /** When this leader first saw each node at the health gate Ready (the soak counts from then). */
  readonly #soak = new SoakClock();

  constructor(options: DeciderOptions) {
    this.#o = options;
  }

  /** The view of a cached node, computed once per resourceVersion (a pass reads every node). */
  view(node: V1Node): NodeView {
    const name = node.metadata?.name ?? '';
    const rv = node.metadata?.resourceVersion ?? '';
    const cached = this.#views.get(name);
    if (cached?.resourceVersion === rv) return cached;
    const view = viewNode(node);
    this.#views.set(name, view);
    return view;
  }

  /** Every cached node as decide() sees it at `now`; views of deleted nodes are forgotten now and then. */
  nodes(now: Date): NodeView[] {
    const nodes = this.#o.nodes.list().map((n) => this.#soak.view(this.view(n), now.getTime()));
    if (this.#views.size > nodes.length * 2) this.#prune(nodes);
    return nodes;
  }

  get pool(): string {
    return this.#o.pool;
  }

  /** decide() on the whole ledger's part for this pool. */
  decide(nodes: NodeView[], ledger: Ledger, health: ReadonlyMap<string, Health>, now: Date): Decision {
    const snapshot = {
      nodes,
      ledger: inPool(ledger, this.#o.pool),
      draining: this.#o.draining(),
      admitting: this.admitting,
      ownGrant: this.#o.ownGrant,
      health,
    };
    return decide(snapshot, this.#o.config, now);
  }

  /**
   * The step one node holding `slot` would take now, on its own (admissions are never decided here:
   * they need the whole budget); undefined when it has nothing to do.
   */
  stepOf(view: NodeView, slot: Slot, health: ReadonlyMap<string, Health>, now: Date): NodeStep | undefined {
    const snapshot = {
      nodes: [this.#soak.view(view, now.getTime())],
      ledger: { slots: { [view.name]: slot } },
      draining: this.#o.draining(),
      admitting: new Set<string>(),
      ownGrant: this.#o.ownGrant,
      health,
    };
    const { actions } = decide(snapshot, this.#o.config, now);
    return actions.find(
      (a): a is NodeStep =>
        a.node === view.name && !isLedgerChange(a) && a.type !== 'admit' && a.type !== 'pending',
    );
  }

  /** A new leadership observes afresh: what was seen before it may have changed unseen since. */
  clear(): void {
    this.#soak.clear();
  }

  #prune(nodes: NodeView[]): void {
    const live = new Set(nodes.map((n) => n.name));
    this.#soak.prune(live);
    for (const name of this.#views.keys()) if (!live.has(name)) this.#views.delete(name);
  }
}
