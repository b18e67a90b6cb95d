/**
 * A Plan's status from a pass, with SUC's conditions (LatestResolved, Validated, Complete) shaped as the
 * Kubernetes API conventions say, and SUC's fields: the latest version and hash, the nodes applying it
 * now, how many selected nodes carry the hash, and the nodes whose last Job failed, with its error. Pure;
 * a condition's lastTransitionTime moves only when its status does. SUC's own Plans, run in place, read
 * as SUC writes them (asSuc).
 */
import { planLabel, sucPlanLabel } from '../../api/keys.ts';
import { Phase } from '../../api/phases.ts';
import { PlanConditions, type PlanFailure, type PlanStatus } from '../../api/plan.ts';
import { SUC_PLANS } from '../../api/plan-groups.ts';
import type { Condition } from '../../api/update-policy.ts';
import type { Ledger } from '../decide/ledger-view.ts';
import type { NodeView } from '../decide/node-view.ts';
import type { JobView } from '../decide/plan-work.ts';
import {
  appliedBy,
  DISABLED,
  optedOut,
  type PassPlan,
  planFailurePrefix,
  startingNodes,
} from './plan-pass.ts';
import type { PlanEntry } from './plan-resolve.ts';

const MAX_MESSAGE = 1024;
const MAX_NODES = 5000;
const clip = (s: string) => (s.length > MAX_MESSAGE ? `${s.slice(0, MAX_MESSAGE - 1)}…` : s);

type Draft = Omit<Condition, 'lastTransitionTime' | 'observedGeneration'>;

export interface PlanStatusInput {
  entry: PlanEntry;
  plan: PassPlan;
  nodes: readonly NodeView[];
  /** Nodes in some UpdatePolicy's pool: the others nuo leaves alone. */
  managed: (node: string) => boolean;
  ledger: Ledger;
  jobs: ReadonlyMap<string, readonly JobView[]>;
  now: Date;
}

/** SUC's message while its window is closed (its ErrOutsideWindow), so tooling matching it still does. */
const OUTSIDE_WINDOW = 'current time is not within configured window';

/**
 * LatestResolved turns True only with both the version and the hash known, as they are written in the same
 * status: SUC's tooling reads latestVersion as soon as the condition is True.
 */
function resolved(e: PlanEntry): Draft {
  const type = PlanConditions.latestResolved;
  if (e.resolveError) {
    const kept =
      e.version && e.hash
        ? `; version ${e.version} from before stays in use`
        : '; no node is started until it resolves';
    return { type, status: 'False', reason: 'ResolveError', message: clip(`${e.resolveError}${kept}`) };
  }
  if (e.version === undefined || e.hash === undefined) {
    const what =
      e.plan.spec.version === undefined ? 'the channel is not read yet' : 'the secrets are not read yet';
    return { type, status: 'False', reason: 'Resolving', message: what };
  }
  if (e.plan.spec.version !== undefined)
    return { type, status: 'True', reason: 'Version', message: `version ${e.version} from spec.version` };
  return {
    type,
    status: 'True',
    reason: 'Channel',
    message: clip(`version ${e.version} from ${e.plan.spec.channel}`),
  };
}

function validated(e: PlanEntry): Draft {
  const type = PlanConditions.validated;
  if (e.errors.length === 0) return { type, status: 'True', reason: 'Valid', message: 'the spec is valid' };
  const problems = e.errors.map((x) => `${x.field}: ${x.message}`).join('; ');
  return { type, status: 'False', reason: 'InvalidSpec', message: clip(`${problems}; no node is started`) };
}

function complete(
  p: PassPlan,
  counts: {
    selected: number;
    done: number;
    bySuc: number;
    applying: number;
    unmanaged: number;
    optedOut: number;
  },
  failed: PlanFailure[],
): Draft {
  const type = PlanConditions.complete;
  if (p.standDown !== undefined)
    return {
      type,
      status: 'False',
      reason: 'ControllerRunning',
      message: clip(
        `nuo acts on no upgrade.cattle.io Plan while system-upgrade-controller runs (${p.standDown}): scale it to zero to hand this Plan to nuo`,
      ),
    };
  if (!p.ready)
    return { type, status: 'False', reason: 'NotReady', message: 'not validated or not resolved' };
  const out = counts.optedOut
    ? `; ${counts.optedOut} node(s) opted out (label ${sucPlanLabel(p.name)} or ${planLabel(p.name)} = ${DISABLED}): not touched`
    : '';
  const suc = counts.bySuc
    ? ` (${counts.bySuc} applied by system-upgrade-controller: label ${sucPlanLabel(p.name)} = SUC's hash ${p.sucHash})`
    : '';
  const alone = counts.unmanaged
    ? `; ${counts.unmanaged} selected node(s) are in no UpdatePolicy's pool: nuo leaves them alone`
    : '';
  // Complete only once no slot is held for the Plan: a postCompleteDelay still running keeps it False.
  if (counts.done === counts.selected && counts.applying === 0)
    return {
      type,
      status: 'True',
      reason: 'Complete',
      message: clip(`applied on all ${counts.selected} selected node(s)${suc} at version ${p.version}${out}`),
    };
  const none = p.concurrency === 0 ? '; concurrency 0: the Plan starts on no node' : '';
  const progress = `${counts.done} of ${counts.selected} selected node(s) applied${suc}, ${counts.applying} applying${none}`;
  if (p.hold && counts.applying === 0) {
    const opens = p.hold.until === undefined ? '' : `; opens ${new Date(p.hold.until).toISOString()}`;
    return {
      type,
      status: 'False',
      reason: 'Waiting',
      message: clip(`${OUTSIDE_WINDOW}${opens}; ${progress}${alone}${out}`),
    };
  }
  const last = failed[failed.length - 1];
  if (last)
    return {
      type,
      status: 'False',
      reason: 'JobFailed',
      message: clip(
        `${progress}; ${failed.length} failed, last on ${last.node}: ${last.error}${alone}${out}`,
      ),
    };
  return { type, status: 'False', reason: 'Applying', message: clip(`${progress}${alone}${out}`) };
}

/**
 * Each selected node not yet applied whose last Job (or drain) of the Plan failed, with its error: a failure
 * stays after its Job is gone (deleted for the retry, or past its TTL) until the node applies the Plan or
 * a later Job fails otherwise. Oldest first; `at` is when this status first showed the error.
 */
function failures(input: PlanStatusInput, selected: readonly NodeView[], before: readonly PlanFailure[]) {
  const { entry, plan: p, now } = input;
  const pending = new Set(selected.filter((n) => !appliedBy(n.labels, p)).map((n) => n.name));
  const last = new Map(before.filter((f) => pending.has(f.node)).map((f) => [f.node, f]));
  // A failed drain of the Plan's attempt: the node's reason names the Plan (attempt-writes.ts).
  const drainFailed = `${planFailurePrefix(entry.ref)}drain `;
  for (const n of selected) {
    if (!pending.has(n.name) || n.state !== Phase.pending || !n.stateReason?.startsWith(drainFailed))
      continue;
    const error = n.stateReason.slice(planFailurePrefix(entry.ref).length);
    if (last.get(n.name)?.error !== error) last.set(n.name, { node: n.name, error, at: now.toISOString() });
  }
  for (const [node, jobs] of input.jobs) {
    if (!pending.has(node)) continue;
    for (const j of jobs) {
      // At most one Job of the Plan's hash per node (its name is deterministic).
      if (j.plan !== entry.ref || j.hash !== p.hash || j.state !== 'failed') continue;
      const error = j.message ?? 'failed';
      const known = last.get(node);
      if (known?.error === error && known.attempt === j.attempt) continue;
      last.set(node, {
        node,
        error,
        at: now.toISOString(),
        hash: j.hash,
        generation: entry.generation,
        ...(j.attempt ? { attempt: j.attempt } : {}),
      });
    }
  }
  return [...last.values()]
    .sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : a.node < b.node ? -1 : 1))
    .slice(-MAX_NODES);
}

/** nuo's reasons SUC names otherwise (its handle_upgrade.go). */
const SUC_REASONS: Readonly<Record<string, string>> = {
  Valid: 'PlanIsValid',
  InvalidSpec: 'Error',
  ResolveError: 'Error',
  Applying: 'SyncJob',
};

/**
 * A condition of SUC's own Plan as SUC writes it: its reasons, and no message on a True Validated or
 * LatestResolved, so that `kubectl get plans`' MESSAGE column (SUC's CRD: the first condition with a
 * message) shows the Complete condition's, nuo's progress or why the Plan waits.
 */
export function asSuc(d: Draft): Draft {
  const reason = SUC_REASONS[d.reason] ?? d.reason;
  const quiet =
    d.status === 'True' && (d.type === PlanConditions.validated || d.type === PlanConditions.latestResolved);
  return { ...d, reason, ...(quiet ? { message: '' } : {}) };
}

export function planStatus(input: PlanStatusInput): PlanStatus {
  const { entry, plan: p, now } = input;
  const previous = entry.plan.status ?? {};
  const chosen = input.nodes.filter((n) => p.ready && p.selects(n.labels));
  const selected = chosen.filter((n) => !optedOut(n.labels, p.name));
  const optedOutCount = chosen.length - selected.length;
  const by = selected.map((n) => appliedBy(n.labels, p));
  const done = by.filter((a) => a !== undefined).length;
  const bySuc = by.filter((a) => a === 'suc').length;
  const unmanaged = selected.filter((n) => !input.managed(n.name)).length;
  // SUC's: the nodes the Plan is started on, their prepare included (plan-prepare.ts).
  const applying = [...(startingNodes([p], input.ledger, input.jobs).get(entry.ref) ?? [])].sort();
  const failed = failures(input, selected, previous.failed ?? []);
  const ours = [
    resolved(entry),
    validated(entry),
    complete(
      p,
      {
        selected: selected.length,
        done,
        bySuc,
        applying: applying.length,
        unmanaged,
        optedOut: optedOutCount,
      },
      failed,
    ),
  ];
  const drafts = entry.group === SUC_PLANS ? ours.map(asSuc) : ours;
  return {
    observedGeneration: entry.generation,
    conditions: drafts.map((d) => {
      const before = previous.conditions?.find((c) => c.type === d.type);
      const since = before?.status === d.status ? before.lastTransitionTime : now.toISOString();
      return { ...d, observedGeneration: entry.generation, lastTransitionTime: since };
    }),
    ...(entry.version === undefined ? {} : { latestVersion: entry.version }),
    ...(entry.hash === undefined ? {} : { latestHash: entry.hash }),
    ...(entry.sucHash === undefined ? {} : { sucLatestHash: entry.sucHash }),
    applying: applying.slice(0, MAX_NODES),
    complete: done,
    failed,
  };
}
