/**
 * A pool's rollout in waves, with its failure budget (spec.rollout). Pure: the record the ledger keeps,
 * the pool's nodes and slots, and the time in; the next record, the cap it puts on the pool's slots and
 * the hold it puts on the pool out.
 *
 * Level-triggered: the record lives in the slot ledger (one per pool) and changes only in the pass's
 * conditional ledger write, so a new leader continues the same wave. Each attempt is named by its node
 * and its attempt (slot.ts attemptId); it is counted from what the ledger recorded of its end (Slot.ended:
 * completed, or failed — aborted or released), in the pass that frees its slot, or when its node is
 * Failed while it holds the slot, and counted once, since the record keeps the names. A node deleted and
 * registered again changes nothing: the count never reads the node's own keys for the end.
 */
import { attemptId } from '../../api/attempt.ts';
import { Phase } from '../../api/phases.ts';
import { needsWork, outsideAttempt } from './need.ts';
import type { NodeView } from './node-view.ts';
import { AS_WRITTEN, type Observed } from './observed-clock.ts';
import { AttemptEnd, type Slot } from './slot.ts';
import type { Wait } from './wait.ts';

/** A pool's rollout settings, parsed (policy/resolve.ts). */
export interface RolloutSettings {
  /** Absent: one wave of the whole pool (only maxUnavailable caps it). */
  waves?: { initial: number; growth: number; pauseBetweenMs: number };
  /** Failed attempts in one rollout that halt the pool; absent: no failure budget. */
  maxFailedAttempts?: number;
}

/** What the ledger records of a pool's rollout in progress. */
export interface RolloutRecord {
  /** When the rollout started (RFC 3339). */
  since: string;
  /** The current wave, from 1. */
  wave: number;
  /** When the current wave began: the end of the one before (RFC 3339). */
  waveSince: string;
  /** Attempts completed in the current wave. */
  completed: number;
  /**
   * Completed attempts (`node@attempt`) whose slots are still held (a Plan's postCompleteDelay, or a write
   * still to come): counted already. Dropped with their slots, so the list stays short.
   */
  counted: string[];
  /** Failed attempts (`node@attempt`) of this rollout → when nuo saw them fail (RFC 3339). */
  failed: Record<string, string>;
  /**
   * The resume (`nuo.dev/resumed-at`, as written) this rollout has honoured: a different one is a new
   * resume. Compared by value, never with nuo's clock: the person's and the operator's clocks need not
   * agree.
   */
  resumed?: string;
}

/** Largest wave size computed: beyond any pool. */
const MAX_WAVE = 1_000_000;

/** Nodes wave `wave` (from 1) admits: initial × growth^(wave−1). */
export function waveSize(s: RolloutSettings, wave: number): number {
  if (!s.waves) return MAX_WAVE;
  let size = s.waves.initial;
  for (let i = 1; i < wave && size < MAX_WAVE; i++) size *= s.waves.growth;
  return Math.min(size, MAX_WAVE);
}

const attemptOf = (node: string, slot: Slot) => `${node}@${attemptId(slot)}`;

/**
 * How an attempt's slot shows its end: completed, failed, or neither yet. An end recorded counts once its
 * node is out of the attempt (or gone), as the slot is freed; a Failed node spends the failure budget
 * while it holds its slot. Nothing else is a failure: a node waiting in Pending after an earlier failure
 * has not failed again.
 */
function outcome(n: NodeView | undefined, slot: Slot): 'done' | 'failed' | undefined {
  if (n?.state === Phase.failed) return 'failed';
  if (n && (!outsideAttempt(n) || n.stateMalformed)) return undefined;
  if (slot.ended === AttemptEnd.completed) return 'done';
  return slot.ended === AttemptEnd.failed ? 'failed' : undefined;
}

/**
 * The pool's rollout after this look: none while no node needs work or holds a slot (a rollout ends
 * when nothing is left to do, and the next need starts a new one); else the record with every attempt
 * that ended counted, and the next wave begun once the current one has completed its size. A resume not
 * honoured yet forgives every failure recorded before this look: those attempts are counted already, so
 * a Failed node still in its slot does not spend the budget again.
 */
export function nextRollout(input: {
  previous: RolloutRecord | undefined;
  settings: RolloutSettings;
  nodes: readonly NodeView[];
  slots: Readonly<Record<string, Slot>>;
  now: Date;
  /** The last `nuo policy resume`. */
  resumedAt?: Date;
}): RolloutRecord | undefined {
  const { settings, nodes, slots, now } = input;
  const t = now.getTime();
  const byName = new Map(nodes.map((n) => [n.name, n]));
  const holding = Object.keys(slots).some((name) => byName.has(name));
  if (!holding && !nodes.some((n) => needsWork(n, t) !== undefined)) return undefined;
  const at = now.toISOString();
  const resume = input.resumedAt?.toISOString();
  // A rollout that starts after a resume has nothing of it to forgive.
  const r: RolloutRecord = input.previous
    ? structuredClone(input.previous)
    : {
        since: at,
        wave: 1,
        waveSince: at,
        completed: 0,
        counted: [],
        failed: {},
        ...(resume ? { resumed: resume } : {}),
      };
  if (resume !== undefined && resume !== r.resumed) {
    r.counted.push(...Object.keys(r.failed).filter((id) => !r.counted.includes(id)));
    r.failed = {};
    r.resumed = resume;
  }
  const held = new Set(Object.entries(slots).map(([name, slot]) => attemptOf(name, slot)));
  r.counted = r.counted.filter((id) => held.has(id));
  for (const [name, slot] of Object.entries(slots)) {
    const seen = outcome(byName.get(name), slot);
    const id = attemptOf(name, slot);
    if (r.counted.includes(id)) continue;
    if (seen === 'failed') r.failed[id] ??= at;
    else if (seen === 'done') {
      r.counted.push(id);
      r.completed++;
    }
  }
  if (r.completed >= waveSize(settings, r.wave)) {
    r.wave++;
    r.waveSince = at;
    r.completed = 0;
  }
  return r;
}

/** Why a pool's rollout admits nothing now: halted by its failure budget, or between two waves. */
export interface RolloutHold extends Wait {
  code: 'Halted' | 'WavePause';
}

/** Failed attempts that count against the budget now. */
export const failedAttempts = (r: RolloutRecord) => Object.keys(r.failed).length;

/**
 * The hold a rollout puts on its pool: halted once its failed attempts reach the failure budget (a person
 * resumes it: `nuo policy resume`), or waiting out the pause before a wave after the first.
 */
export function rolloutHold(
  r: RolloutRecord | undefined,
  s: RolloutSettings,
  policy: string,
  t: number,
  observed: Observed = AS_WRITTEN,
): RolloutHold | undefined {
  if (!r) return undefined;
  const failed = failedAttempts(r);
  if (s.maxFailedAttempts !== undefined && failed >= s.maxFailedAttempts) {
    return {
      code: 'Halted',
      reason: `halted: ${failed} failed attempt(s) in this rollout reached failureBudget.maxFailedAttempts ${s.maxFailedAttempts}; attempts in progress finish; run "nuo policy resume ${policy}" to go on`,
    };
  }
  // The pause counts from when the deciding leader first saw the wave begin: another may have begun it.
  const began = observed(`wave/${policy}`, `${r.since}|${r.wave}|${r.waveSince}`, Date.parse(r.waveSince));
  const until = began + (s.waves?.pauseBetweenMs ?? 0);
  if (r.wave > 1 && t < until) {
    return {
      code: 'WavePause',
      reason: `waiting: wave ${r.wave} starts at ${new Date(until).toISOString()} (rollout.waves.pauseBetween)`,
      until,
    };
  }
  return undefined;
}

/** A cap on a pool's slots, and how the reason of a node it keeps waiting names it. */
export interface SlotCap {
  slots: number;
  name: string;
}

/**
 * The wave's cap on the pool's slots: its size less the attempts already completed in it, so a wave
 * admits no more nodes than its size in all (those in progress hold slots under the cap).
 */
export function waveCap(r: RolloutRecord | undefined, s: RolloutSettings): SlotCap | undefined {
  if (!r || !s.waves) return undefined;
  const size = waveSize(s, r.wave);
  return { slots: Math.max(0, size - r.completed), name: `wave ${r.wave} of ${size} node(s)` };
}
