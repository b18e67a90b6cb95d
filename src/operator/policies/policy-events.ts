/**
 * The Events an UpdatePolicy's status change is worth (`kubectl describe updatepolicy`, `kubectl get
 * events`): its pool blocked, blocked for another reason or by another cause, and open again. Pure: the status before and
 * after a write in, the Event out; written only by the writer of that status, so each change is told once.
 */
import type { UpdatePolicyStatus } from '../../api/update-policy.ts';

export interface PolicyEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

/**
 * Holds a person planned (a window, a pause, taking turns with kured, the pause between two waves): Normal. Anything else holding a
 * pool is a Warning.
 */
const PLANNED: ReadonlySet<string> = new Set(['OutsideWindow', 'Paused', 'KuredLock', 'WavePause']);

const blocked = (s: UpdatePolicyStatus | undefined) =>
  s?.conditions?.find((c) => c.type === 'Blocked' && c.status === 'True');

/**
 * What a block's message says causes it: the message without its times (a window's opening or a wave's
 * start computed again is the same cause), so that a new holder, pod, check, wave or count is another.
 */
const cause = (message: string) =>
  message.replace(/\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)?/g, '#');

export function blockedEvent(
  previous: UpdatePolicyStatus | undefined,
  next: UpdatePolicyStatus,
): PolicyEvent | undefined {
  const was = blocked(previous);
  const is = blocked(next);
  if (is && (is.reason !== was?.reason || cause(is.message) !== cause(was.message))) {
    return { type: PLANNED.has(is.reason) ? 'Normal' : 'Warning', reason: is.reason, message: is.message };
  }
  if (!is && was) return { type: 'Normal', reason: 'Unblocked', message: 'new attempts may start' };
  return undefined;
}

const progressing = (s: UpdatePolicyStatus | undefined) =>
  s?.conditions?.find((c) => c.type === 'Progressing')?.reason;

/** The pool's rollout has just finished: it was updating, and now no node of it waits. */
export function rolloutFinished(previous: UpdatePolicyStatus | undefined, next: UpdatePolicyStatus): boolean {
  return progressing(previous) === 'Updating' && progressing(next) === 'UpToDate';
}

const isHalted = (s: UpdatePolicyStatus | undefined) =>
  s?.conditions?.some((c) => c.type === 'Halted' && c.status === 'True') ?? false;

/** The pool's rollout has just halted: its failure budget is spent (the Halted condition's message says how). */
export function rolloutHalted(
  previous: UpdatePolicyStatus | undefined,
  next: UpdatePolicyStatus,
): string | undefined {
  if (isHalted(previous) || !isHalted(next)) return undefined;
  return next.conditions?.find((c) => c.type === 'Halted')?.message ?? 'halted';
}

/** Since when the pool has been blocked, and why, when it is. */
export function blockedSince(s: UpdatePolicyStatus): { since: Date; message: string } | undefined {
  const c = blocked(s);
  return c ? { since: new Date(c.lastTransitionTime), message: c.message } : undefined;
}
