/** Disruption-budget arithmetic: pure, table-tested. */

export type MaxUnavailable = { kind: 'count'; value: number } | { kind: 'percent'; value: number };

export function parseMaxUnavailable(text: string): MaxUnavailable {
  const percent = text.match(/^(\d+)%$/);
  if (percent) {
    const value = Number(percent[1]);
    if (value < 1 || value > 100) throw new Error(`a percentage must be between 1% and 100%, got "${text}"`);
    return { kind: 'percent', value };
  }
  if (/^\d+$/.test(text) && Number(text) >= 1) return { kind: 'count', value: Number(text) };
  throw new Error(`must be a positive count ("2") or a percentage ("10%"), got "${text}"`);
}

/**
 * Slots for `eligible` nodes. A percentage rounds down — never more disruption than asked — but is
 * at least 1 so that a small pool still progresses (5% of 10 nodes = 1). A pool of 0 has no slots.
 */
export function budgetSlots(max: MaxUnavailable, eligible: number): number {
  if (eligible <= 0) return 0;
  if (max.kind === 'count') return max.value;
  return Math.max(1, Math.floor((eligible * max.value) / 100));
}
