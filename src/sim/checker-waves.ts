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
