/**
 * `nuo whatif run --suggest`: which settings of one UpdatePolicy to try (its budget, its per-zone cap,
 * its zone order), and how to apply the one chosen. Pure; the runs are the CLI's (whatif-suggest.ts) and
 * the choice suggest-rank.ts's.
 */
import { stringify } from 'yaml';
import { budgetSlots, parseMaxUnavailable } from '../operator/decide/budget.ts';
import { assignPools } from '../policy/pools.ts';
import { resolvePolicy } from '../policy/resolve.ts';
import type { UpdatePolicyObject } from './objects.ts';
import type { Snapshot } from './snapshot.ts';

export type ZoneOrder = 'Parallel' | 'OneAtATime';

/** The settings a suggestion varies: the rest of the policy stays as it is. */
export interface Settings {
  maxUnavailable: number | string;
  /** None: no per-zone cap. */
  maxUnavailablePerZone?: number | string;
  zoneOrder: ZoneOrder;
}

export interface Candidate {
  settings: Settings;
  /** The policy's own settings. */
  current: boolean;
  /** Nodes disrupted at once at most, in the pool and in its largest zone: the gentler, the fewer. */
  slots: number;
  zoneSlots: number;
}

/** What the candidates are drawn from: the policy's pool in the snapshot. */
export interface PoolFacts {
  policy: string;
  /** The pool's nodes, by name. */
  members: string[];
  nodes: number;
  /** Nodes of the pool per zone (by the policy's zone label; '' for nodes without it). */
  zones: Map<string, number>;
  current: Settings;
}

/** A suggestion that cannot be made as asked: the message says why and what to do. */
export class SuggestError extends Error {}

/**
 * The pool of `name` (or of the only policy when none is named) as the operator would assign it: the
 * nodes it alone selects.
 */
export function poolFacts(snapshot: Snapshot, name: string | undefined): PoolFacts {
  const names = snapshot.updatePolicies.map((p) => p.metadata.name);
  if (names.length === 0)
    throw new SuggestError('the snapshot holds no UpdatePolicy to vary: give one with --policies FILE');
  if (name === undefined && names.length > 1)
    throw new SuggestError(
      `the snapshot holds ${names.length} UpdatePolicies (${names.join(', ')}): name the one to vary with --suggest-policy NAME`,
    );
  const chosen = name ?? (names[0] as string);
  const object = snapshot.updatePolicies.find((p) => p.metadata.name === chosen);
  if (!object)
    throw new SuggestError(`no UpdatePolicy ${chosen} in the snapshot; it holds ${names.join(', ')}`);
  const resolved = snapshot.updatePolicies.map((p) => ({ name: p.metadata.name, r: resolvePolicy(p) }));
  const self = resolved.find((p) => p.name === chosen)?.r;
  if (!self?.ok)
    throw new SuggestError(
      `UpdatePolicy ${chosen} is not valid: ${self?.errors.map((e) => `${e.field}: ${e.message}`).join('; ')}`,
    );
  const selectors = resolved.flatMap((p) => (p.r.ok ? [{ name: p.name, selects: p.r.policy.selects }] : []));
  const nodes = snapshot.nodes.map((n) => ({ name: n.metadata.name, labels: n.metadata.labels ?? {} }));
  const { pools } = assignPools(nodes, selectors, () => undefined);
  const members = nodes.filter((n) => pools.get(n.name) === chosen);
  if (members.length === 0)
    throw new SuggestError(`UpdatePolicy ${chosen} holds no node of the snapshot: there is nothing to roll`);
  const zones = new Map<string, number>();
  for (const n of members) {
    const zone = n.labels[self.policy.zoneLabel] ?? '';
    zones.set(zone, (zones.get(zone) ?? 0) + 1);
  }
  const spec = object.spec ?? {};
  return {
    policy: chosen,
    members: members.map((n) => n.name),
    nodes: members.length,
    zones,
    current: {
      maxUnavailable: spec.maxUnavailable ?? 1,
      ...(spec.maxUnavailablePerZone !== undefined
        ? { maxUnavailablePerZone: spec.maxUnavailablePerZone }
        : {}),
      zoneOrder: spec.zoneOrder ?? 'Parallel',
    },
  };
}

/** Budgets tried: 1, 2, 3, then powers of two and the midpoints between them (4, 6, 8, 12, 16, 24, …), up to the pool. */
export function budgetSteps(poolNodes: number): number[] {
  const steps: number[] = [];
  for (let b = 1; b <= poolNodes; b = b < 4 ? b + 1 : b + 2 ** Math.floor(Math.log2(b) - 1)) steps.push(b);
  return steps;
}

const slotsOf = (v: number | string, of: number) => budgetSlots(parseMaxUnavailable(String(v)), of);

function candidate(s: Settings, facts: PoolFacts, current: boolean): Candidate {
  const largest = Math.max(...facts.zones.values());
  const slots = Math.min(facts.nodes, slotsOf(s.maxUnavailable, facts.nodes));
  const zoneCap = s.maxUnavailablePerZone === undefined ? slots : slotsOf(s.maxUnavailablePerZone, largest);
  return { settings: s, current, slots, zoneSlots: Math.min(slots, zoneCap, largest) };
}

const sameSettings = (a: Settings, b: Settings) =>
  String(a.maxUnavailable) === String(b.maxUnavailable) &&
  String(a.maxUnavailablePerZone) === String(b.maxUnavailablePerZone) &&
  a.zoneOrder === b.zoneOrder;

/**
 * At most `max` settings to try, the policy's own first: for each budget of budgetSteps, ascending, the
 * budget alone, then (in a pool of several zones) with a per-zone cap that spreads it evenly over the
 * zones, then finishing one zone before the next. Smaller budgets first: a larger one is only worth
 * its risk once the smaller ones are known.
 */
export function suggestCandidates(facts: PoolFacts, max: number): { candidates: Candidate[]; left: number } {
  const zones = facts.zones.size;
  const largest = Math.max(...facts.zones.values());
  const all: Settings[] = [facts.current];
  for (const b of budgetSteps(facts.nodes)) {
    all.push({ maxUnavailable: b, zoneOrder: 'Parallel' });
    if (zones < 2 || b < 2) continue;
    const perZone = Math.ceil(b / zones);
    if (perZone < b && perZone < largest)
      all.push({ maxUnavailable: b, maxUnavailablePerZone: perZone, zoneOrder: 'Parallel' });
    if (b <= largest) all.push({ maxUnavailable: b, zoneOrder: 'OneAtATime' });
  }
  const distinct = all.filter((s, i) => all.findIndex((t) => sameSettings(s, t)) === i);
  return {
    candidates: distinct.slice(0, max).map((s, i) => candidate(s, facts, i === 0)),
    left: Math.max(0, distinct.length - max),
  };
}

/** The policy with these settings in place of its own. */
export function withSettings(policy: UpdatePolicyObject, s: Settings): UpdatePolicyObject {
  const { maxUnavailablePerZone: _, ...spec } = policy.spec ?? {};
  return {
    ...policy,
    spec: {
      ...spec,
      maxUnavailable: s.maxUnavailable,
      ...(s.maxUnavailablePerZone !== undefined ? { maxUnavailablePerZone: s.maxUnavailablePerZone } : {}),
      zoneOrder: s.zoneOrder,
    },
  };
}

/** "maxUnavailable 2, per zone 1, OneAtATime". */
export function settingsText(s: Settings): string {
  const perZone = s.maxUnavailablePerZone === undefined ? '' : `, per zone ${s.maxUnavailablePerZone}`;
  return `maxUnavailable ${s.maxUnavailable}${perZone}, zoneOrder ${s.zoneOrder}`;
}

/**
 * How to apply settings to the policy in the cluster: a `kubectl patch` (a merge patch, whose null
 * removes a per-zone cap) and the spec fragment for a policy kept in files.
 */
export function settingsPatch(policy: string, s: Settings): { kubectl: string; spec: string } {
  const patch = {
    spec: {
      maxUnavailable: s.maxUnavailable,
      maxUnavailablePerZone: s.maxUnavailablePerZone ?? null,
      zoneOrder: s.zoneOrder,
    },
  };
  const fragment = {
    maxUnavailable: s.maxUnavailable,
    ...(s.maxUnavailablePerZone !== undefined ? { maxUnavailablePerZone: s.maxUnavailablePerZone } : {}),
    zoneOrder: s.zoneOrder,
  };
  return {
    kubectl: `kubectl patch updatepolicy ${policy} --type merge -p '${JSON.stringify(patch)}'`,
    spec: stringify({ spec: fragment }),
  };
}
