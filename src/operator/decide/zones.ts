/**
 * A pool's per-zone budget: at most `max` nodes disrupted at once in any one zone (a count, or a
 * percentage of the pool's nodes in that zone, rounded down but at least 1), counting every node
 * disrupted there (nuo's attempts, NotReady, cordoned by anyone), as the pool's budget does. With
 * `OneAtATime`, nuo finishes one zone before it starts the next: zones go in name order, and a zone with
 * an attempt in progress is the only one that admits.
 * A node without the zone label is in the zone "" (its own group): never counted against a real zone.
 */
import { budgetSlots, type MaxUnavailable } from './budget.ts';
import type { NodeView } from './node-view.ts';
import type { Wait } from './wait.ts';

export interface ZonePolicy {
  label: string;
  max?: MaxUnavailable;
  order: 'Parallel' | 'OneAtATime';
}

export class ZoneBudget {
  readonly #policy: ZonePolicy;
  readonly #size = new Map<string, number>();
  readonly #used = new Map<string, number>();
  /** OneAtATime: the zone being updated, once known. */
  #active: string | undefined;

  /**
   * `pool`: every node of the pool; `disrupted`: those disrupted now (holders, admissions in flight,
   * NotReady or cordoned); `inAttempt`: those in nuo's attempts (they fix the zone being updated).
   */
  constructor(
    policy: ZonePolicy,
    pool: readonly NodeView[],
    disrupted: ReadonlySet<string>,
    inAttempt: ReadonlySet<string>,
  ) {
    this.#policy = policy;
    const attemptZones: string[] = [];
    for (const n of pool) {
      const zone = this.zoneOf(n);
      this.#size.set(zone, (this.#size.get(zone) ?? 0) + 1);
      if (disrupted.has(n.name)) this.#used.set(zone, (this.#used.get(zone) ?? 0) + 1);
      if (inAttempt.has(n.name)) attemptZones.push(zone);
    }
    this.#active = attemptZones.sort()[0];
  }

  zoneOf(n: NodeView): string {
    return n.labels[this.#policy.label] ?? '';
  }

  /** Admission order for OneAtATime: zones in name order, the usual order within each. */
  order(nodes: NodeView[]): NodeView[] {
    if (this.#policy.order !== 'OneAtATime') return nodes;
    return nodes
      .map((n, i) => ({ n, i, zone: this.zoneOf(n) }))
      .sort((a, b) => (a.zone < b.zone ? -1 : a.zone > b.zone ? 1 : a.i - b.i))
      .map(({ n }) => n);
  }

  /** Why `n` may not start in its zone now (`takesSlot`: its admission disrupts one more node there). */
  wait(n: NodeView, takesSlot: boolean): Wait | undefined {
    const zone = this.zoneOf(n);
    if (this.#policy.order === 'OneAtATime' && this.#active !== undefined && zone !== this.#active) {
      return { reason: `waiting: zone ${this.#active || '(none)'} is updated first (one zone at a time)` };
    }
    if (!this.#policy.max || !takesSlot) return undefined;
    const slots = budgetSlots(this.#policy.max, this.#size.get(zone) ?? 0);
    const used = this.#used.get(zone) ?? 0;
    if (used + 1 <= slots) return undefined;
    return { reason: `waiting for a free slot in zone ${zone || '(none)'} (${used} of ${slots} disrupted)` };
  }

  /** Records `n`'s admission. */
  take(n: NodeView, takesSlot: boolean): void {
    const zone = this.zoneOf(n);
    this.#active ??= this.#policy.order === 'OneAtATime' ? zone : undefined;
    if (takesSlot) this.#used.set(zone, (this.#used.get(zone) ?? 0) + 1);
  }
}
