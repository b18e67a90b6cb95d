/**
 * Which pool holds each node. Every UpdatePolicy selects a pool; the rules:
 * - a node whose slot or promise is in a pool's budget stays in that pool until its attempt ends, even
 *   if its labels or the selectors change meanwhile: its disruption was counted there;
 * - otherwise a node matched by exactly one policy is in that policy's pool;
 * - a node matched by two or more is in none (nuo leaves it alone and every one of those policies says
 *   so) until a person makes the selectors disjoint: guessing could give it two budgets' worth of risk;
 * - a node matched by none is left alone and reported as such.
 */
import type { Selector } from '../kube/selector.ts';

export interface PoolSelector {
  name: string;
  selects: Selector;
}

export interface PoolAssignment {
  /** node → the pool that holds it. */
  pools: Map<string, string>;
  /** Nodes two or more policies select (outside an attempt) → those policies, sorted. */
  conflicts: Map<string, string[]>;
  /** Nodes no policy selects, outside an attempt. */
  unmatched: string[];
}

export function assignPools(
  nodes: readonly { name: string; labels?: Record<string, string> }[],
  policies: readonly PoolSelector[],
  /** node → the pool whose budget holds its slot or promise (the ledger's poolOf). */
  holding: (node: string) => string | undefined,
): PoolAssignment {
  const pools = new Map<string, string>();
  const conflicts = new Map<string, string[]>();
  const unmatched: string[] = [];
  for (const node of nodes) {
    const held = holding(node.name);
    if (held !== undefined) {
      pools.set(node.name, held);
      continue;
    }
    const matched = policies.filter((p) => p.selects(node.labels)).map((p) => p.name);
    if (matched.length === 1) pools.set(node.name, matched[0] as string);
    else if (matched.length === 0) unmatched.push(node.name);
    else conflicts.set(node.name, matched.sort());
  }
  return { pools, conflicts, unmatched };
}
