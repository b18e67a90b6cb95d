/**
 * The waves of a pool's rollout as the independent checker counts them (checker.ts), from what it sees
 * of the nodes alone: a rollout starts when a node of the pool needs work and ends when none is in an
 * attempt or waits; each attempt that ends with its node Idle is one completed. Pure.
 */
import type { V1Node } from '@kubernetes/client-node';
import { Annotations } from '../api/keys.ts';
import { isPhase, Phase } from '../api/phases.ts';
import { inAttemptPhase } from './checker-phases.ts';

/** A pool's waves: the first of `initial` nodes, each next `growth` times as many. */
export interface WaveBudget {
  initial: number;
  growth: number;
}

/**
 * How many of the pool's nodes may be in an attempt at once after `completed` attempts of its rollout
 * completed: the current wave's size less those of it already completed (a wave admits its size in all).
 */
export function waveLimit(w: WaveBudget, completed: number): number {
  let size = w.initial;
  let before = 0;
  while (completed >= before + size) {
    before += size;
    size *= w.growth;
  }
  return size - (completed - before);
}

/**
 * The most a wave may hold after `completed` attempts completed and `unsure` more ended as attemptEnd
 * says: the operator counts such an attempt completed only when its pass sees the node Idle before the
 * slot goes (a Failed one, also failed, and never once a resume forgave it), so either count may be its
 * own.
 */
export function waveLimitUnsure(w: WaveBudget, completed: number, unsure: number): number {
  let most = 0;
  for (let k = 0; k <= unsure; k++) most = Math.max(most, waveLimit(w, completed + k));
  return most;
}

/** An attempt of `node` just completed: it left an attempt's phase for Idle. */
export const completedAttempt = (node: V1Node, old: V1Node | undefined): boolean =>
  inAttemptPhase(old) && (node.metadata?.annotations?.[Annotations.state] ?? Phase.idle) === Phase.idle;

/** A third party just overwrote the phase of `node` in an attempt with a value that is no phase. */
export function garbledInAttempt(node: V1Node, old: V1Node | undefined): boolean {
  const state = node.metadata?.annotations?.[Annotations.state];
  return inAttemptPhase(old) && state !== undefined && !isPhase(state);
}

/**
 * How an update of a node counts in its waved pool's rollout: a completed attempt; an unsure one, which
 * the operator may or may not count completed (waveLimitUnsure); or nothing. Unsure: an attempt that
 * ended Idle after its node was Failed in it, or after its phase was overwritten with no phase (the
 * operator restores the phase from the node's other keys and ends the attempt; ended Idle, nothing is
 * left to do, and its pass counts it completed if it sees the node Idle before the slot goes).
 */
export function attemptEnd(
  node: V1Node,
  old: V1Node | undefined,
  was: { failed: boolean; garbled: boolean },
): 'completed' | 'unsure' | undefined {
  if (completedAttempt(node, old)) return was.failed ? 'unsure' : 'completed';
  const idle = (node.metadata?.annotations?.[Annotations.state] ?? Phase.idle) === Phase.idle;
  if (was.garbled && idle) return 'unsure';
  return undefined;
}

/** Nothing of the pool's rollout is left: no node in an attempt, waiting, or needing a reboot. */
export function rolloutOver(nodes: readonly V1Node[]): boolean {
  return nodes.every((n) => {
    const a = n.metadata?.annotations ?? {};
    return (
      !inAttemptPhase(n) && a[Annotations.state] !== Phase.pending && a[Annotations.rebootNeeded] !== 'true'
    );
  });
}

/** How a node's update counts in the waved budgets that select it (checker.ts names them). */
export interface WaveUpdate {
  node: V1Node;
  old: V1Node | undefined;
  /** The waved budgets selecting the node, each with whether its rollout is over now. */
  budgets: { name: string; over: boolean; nodes: readonly string[] }[];
}

/**
 * What the checker counts of each waved budget's rollout (by budget name), from the nodes' updates
 * alone: completed attempts, and unsure ones (attemptEnd; and one whose node was deleted in it, whose
 * end the operator may have recorded before the node write that did not land). The operator records an
 * attempt's end in the ledger before its node write and counts it from there, so a completed attempt
 * counts whatever becomes of its node: deleted and registered again, it is still one completed.
 */
export class WaveTally {
  readonly #completed = new Map<string, number>();
  readonly #unsure = new Map<string, number>();
  /** Nodes Failed in their attempt in progress. */
  readonly #failed = new Set<string>();
  /** Nodes whose phase a third party overwrote with no phase in their attempt, not yet restored. */
  readonly #garbled = new Set<string>();

  #add(counts: Map<string, number>, budget: string, by: number): void {
    counts.set(budget, (counts.get(budget) ?? 0) + by);
  }

  updated({ node, old, budgets }: WaveUpdate): void {
    const name = node.metadata?.name ?? '';
    const state = node.metadata?.annotations?.[Annotations.state];
    const ended = attemptEnd(node, old, { failed: this.#failed.has(name), garbled: this.#garbled.has(name) });
    if (state === Phase.failed) this.#failed.add(name);
    else if (!inAttemptPhase(node)) this.#failed.delete(name);
    if (garbledInAttempt(node, old)) this.#garbled.add(name);
    else if (state === undefined || isPhase(state)) this.#garbled.delete(name);
    for (const b of budgets) {
      if (b.over) {
        this.#completed.delete(b.name);
        this.#unsure.delete(b.name);
      } else if (ended === 'completed') this.#add(this.#completed, b.name, 1);
      else if (ended === 'unsure') this.#add(this.#unsure, b.name, 1);
    }
  }

  /**
   * A node was deleted (`inAttempt`: in an attempt's phase): the end of the attempt it was in (its phase
   * garbled too) is unsure in the rollouts of `budgets` (those selecting it); an attempt it completed
   * before stays completed. The node registered again is a new one: nothing of it is carried over.
   */
  deleted(name: string, budgets: readonly string[], inAttempt: boolean): void {
    const ended = inAttempt || this.#garbled.has(name);
    this.#failed.delete(name);
    this.#garbled.delete(name);
    if (ended) for (const b of budgets) this.#add(this.#unsure, b, 1);
  }

  /** The most of the budget's nodes its current wave allows in attempts at once. */
  limit(budget: string, w: WaveBudget): number {
    return waveLimitUnsure(w, this.#completed.get(budget) ?? 0, this.#unsure.get(budget) ?? 0);
  }
}
