/**
 * An UpdatePolicy's status from a pass, as the Kubernetes API conventions shape it: conditions with a
 * machine reason and a human message, observedGeneration, and the pool's numbers. Pure; a condition's
 * lastTransitionTime moves only when its status does, so a pass that changes nothing builds the same
 * status and nothing is written.
 */
import { PHASES, Phase } from '../../api/phases.ts';
import type { Condition, RolloutStatus, UpdatePolicyStatus } from '../../api/update-policy.ts';
import { DRAIN_WAITING } from '../../drain/pdb-hold.ts';
import type { Decision } from '../decide/decide.ts';
import { failedAttempts, waveSize } from '../decide/waves.ts';
import { type AttemptSample, addSamples } from './attempt-durations.ts';
import type { PolicyEntry } from './policies.ts';
import type { Pool, PoolRollout } from './pool-plan.ts';

/** Longest list of holders written (the schema's bound). */
const MAX_HOLDERS = 5000;
/** Longest message of a condition kept readable in `kubectl describe`. */
const MAX_MESSAGE = 1024;

export interface StatusInput {
  entry: PolicyEntry;
  /** The policy's pool and its decision this pass (none for a policy that never resolved). */
  pool?: { pool: Pool; decision: Decision };
  /** Nodes this policy selects that another one selects too → those policies. */
  conflicts: [string, string[]][];
  /** A node of the pool completed its attempt in this pass. */
  completed: boolean;
  /** Attempts of the pool measured since its status was last written (attempt-durations.ts). */
  samples?: readonly AttemptSample[];
  now: Date;
}

type ConditionDraft = Omit<Condition, 'lastTransitionTime' | 'observedGeneration'>;

const clip = (s: string) => (s.length > MAX_MESSAGE ? `${s.slice(0, MAX_MESSAGE - 1)}…` : s);

function ready(entry: PolicyEntry, nodes: number): ConditionDraft {
  if (entry.current.ok) {
    return { type: 'Ready', status: 'True', reason: 'Valid', message: `valid; ${nodes} node(s) in its pool` };
  }
  const problems = entry.current.errors.map((e) => `${e.field}: ${e.message}`).join('; ');
  const kept = entry.lastValid ? ' (the last valid generation finishes the attempts in progress)' : '';
  return { type: 'Ready', status: 'False', reason: 'InvalidSpec', message: clip(`${problems}${kept}`) };
}

function blocked(pool: Pool | undefined): ConditionDraft {
  const hold = pool?.hold;
  if (!pool)
    return { type: 'Blocked', status: 'True', reason: 'InvalidSpec', message: 'the policy never was valid' };
  if (!hold)
    return { type: 'Blocked', status: 'False', reason: 'NotBlocked', message: 'new attempts may start' };
  const message = hold.detail ? `${hold.reason}: ${hold.detail}` : hold.reason;
  return { type: 'Blocked', status: 'True', reason: hold.code, message: clip(message) };
}

function progressing(pool: { pool: Pool; decision: Decision } | undefined): ConditionDraft {
  const admitted = new Set(pool?.decision.actions.filter((a) => a.type === 'admit').map((a) => a.node));
  const holders = (pool?.decision.budget.holders.length ?? 0) + admitted.size;
  const waiting =
    pool?.pool.nodes.filter((n) => n.state === Phase.pending && !admitted.has(n.name)).length ?? 0;
  if (holders + waiting === 0) {
    return {
      type: 'Progressing',
      status: 'False',
      reason: 'UpToDate',
      message: 'no node waits for a reboot',
    };
  }
  // A drain that waits (on PDBs, or on pods it waits for) is where a rollout stalls: the status names the
  // first such node and what it waits on.
  const stuck = pool?.pool.nodes.find(
    (n) => n.state === Phase.draining && n.stateReason?.startsWith(DRAIN_WAITING),
  );
  return {
    type: 'Progressing',
    status: 'True',
    reason: 'Updating',
    message: clip(
      `${holders} node(s) in an attempt, ${waiting} waiting${stuck ? `; ${stuck.name} is ${stuck.stateReason}` : ''}`,
    ),
  };
}

function halted(pool: Pool | undefined, entry: PolicyEntry): ConditionDraft {
  const max = pool?.rollout?.settings?.maxFailedAttempts;
  const record = pool?.rollout?.record;
  const failed = record ? failedAttempts(record) : 0;
  if (max !== undefined && failed >= max) {
    const hold = pool?.hold?.code === 'Halted' ? pool.hold.reason : `halted: ${failed} failed attempt(s)`;
    return { type: 'Halted', status: 'True', reason: 'FailureBudgetSpent', message: clip(hold) };
  }
  const resumed = entry.resumed
    ? `; resumed at ${entry.resumed.at.toISOString()}${entry.resumed.by ? ` by ${entry.resumed.by}` : ''}`
    : '';
  const budget = max === undefined ? 'no failure budget' : `${failed} of ${max} failed attempt(s) allowed`;
  return { type: 'Halted', status: 'False', reason: 'NotHalted', message: clip(`${budget}${resumed}`) };
}

/** The rollout in progress as the status shows it. */
function rolloutStatus(r: PoolRollout | undefined): RolloutStatus | undefined {
  const record = r?.record;
  if (!record || !r.settings) return undefined;
  const pause = r.settings.waves?.pauseBetweenMs ?? 0;
  return {
    started: record.since,
    wave: record.wave,
    waveSize: Math.min(waveSize(r.settings, record.wave), 2 ** 31 - 1),
    completedInWave: record.completed,
    failedAttempts: failedAttempts(record),
    ...(record.wave > 1 && pause > 0
      ? { nextWave: new Date(Date.parse(record.waveSince) + pause).toISOString() }
      : {}),
  };
}

function conflict(conflicts: [string, string[]][]): ConditionDraft {
  if (conflicts.length === 0) {
    return {
      type: 'NodesConflict',
      status: 'False',
      reason: 'NoOverlap',
      message: 'no node is selected twice',
    };
  }
  const listed = conflicts.map(([node, policies]) => `${node} (${policies.join(', ')})`).join('; ');
  return {
    type: 'NodesConflict',
    status: 'True',
    reason: 'SelectorOverlap',
    message: clip(`left alone until one policy selects them: ${listed}`),
  };
}

/** Conditions with their transition times: kept from `previous` while the status stays. */
function stamp(
  drafts: ConditionDraft[],
  previous: readonly Condition[],
  generation: number,
  now: Date,
): Condition[] {
  return drafts.map((d) => {
    const before = previous.find((c) => c.type === d.type);
    const since = before?.status === d.status ? before.lastTransitionTime : now.toISOString();
    return { ...d, observedGeneration: generation, lastTransitionTime: since };
  });
}

export function policyStatus(input: StatusInput): UpdatePolicyStatus {
  const { entry, pool, now } = input;
  const previous = entry.status ?? {};
  const nodes = pool?.pool.nodes ?? [];
  // Every phase, 0 included: the status is merge-patched, so a phase left out would keep its old count.
  const phases: Record<string, number> = Object.fromEntries(PHASES.map((p) => [p, 0]));
  for (const n of nodes) phases[n.state ?? Phase.idle] = (phases[n.state ?? Phase.idle] ?? 0) + 1;
  const budget = pool?.decision.budget;
  const conditions = stamp(
    [
      ready(entry, nodes.length),
      blocked(pool?.pool),
      progressing(pool),
      conflict(input.conflicts),
      halted(pool?.pool, entry),
    ],
    previous.conditions ?? [],
    entry.generation,
    now,
  );
  const lastCompletion = input.completed ? now.toISOString() : previous.lastCompletion;
  const hold = pool?.pool.hold;
  const rollout = rolloutStatus(pool?.pool.rollout);
  const durations = addSamples(previous.durations, input.samples ?? []);
  return {
    observedGeneration: entry.generation,
    conditions,
    nodes: nodes.length,
    phases,
    budget: budget?.slots ?? 0,
    disrupted: budget?.used ?? 0,
    holders: [...(budget?.holders ?? [])].sort().slice(0, MAX_HOLDERS),
    ...(hold?.code === 'OutsideWindow' && hold.until !== undefined
      ? { nextWindow: new Date(hold.until).toISOString() }
      : {}),
    ...(lastCompletion ? { lastCompletion } : {}),
    ...(rollout ? { rollout } : {}),
    ...(durations ? { durations } : {}),
    ...(entry.resumed
      ? {
          resumed: {
            at: entry.resumed.at.toISOString(),
            ...(entry.resumed.by ? { by: entry.resumed.by } : {}),
          },
        }
      : {}),
  };
}

/**
 * The merge patch that turns `previous` into `next`: a field `next` leaves out is written null, so the
 * API server removes it rather than keep its old value (a merge patch keeps what it does not name).
 */
export function statusPatch(
  previous: UpdatePolicyStatus | undefined,
  next: UpdatePolicyStatus,
): Record<string, unknown> {
  return removals(previous ?? {}, next) as Record<string, unknown>;
}

function removals(before: unknown, after: unknown): unknown {
  if (!isObject(after) || !isObject(before)) return after;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(before)) if (after[key] === undefined) out[key] = null;
  for (const [key, value] of Object.entries(after))
    if (value !== undefined) out[key] = removals(before[key], value);
  return out;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Whether writing `next` would change anything (the API server returns what it stored: compare as JSON). */
export function statusChanged(previous: UpdatePolicyStatus | undefined, next: UpdatePolicyStatus): boolean {
  return JSON.stringify(canonical(previous ?? {})) !== JSON.stringify(canonical(next));
}

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([, v]) => v !== undefined)
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([k, v]) => [k, canonical(v)]),
    );
  }
  return value;
}
