/**
 * What each step writes on its node, as one conditional patch: a pure function of the action, the node
 * as decided on, the configuration and the time. The controller only sends it. Keys that go together are
 * written together here and nowhere else (a phase with its reason and time; a grant with its phase; hook
 * annotations cleared with the label that asks for them, as CLUO did, so a stale "true" never lets a
 * later attempt skip its hooks).
 */
import { AgentProtocol, Annotations, Labels, SCALE_DOWN_PROTECTION } from '../../api/keys.ts';
import { Phase } from '../../api/phases.ts';
import type { Action } from '../decide/action.ts';
import { type OperatorKeys, operatorKeys } from '../decide/agent-protocol.ts';
import type { DecideConfig } from '../decide/decide-input.ts';
import { isCount, type NodeView } from '../decide/node-view.ts';
import type { PlanSlot } from '../decide/plan-work.ts';

export interface NodeWrite {
  annotations: Record<string, string | null>;
  labels?: Record<string, string | null>;
  /** How many reboot-pending taints the node carries after the write (0: none); absent: left as they are. */
  taint?: number;
  /** Cordoned in the same write, recorded as nuo's cordon (unless the node is unschedulable already). */
  cordon?: boolean;
}

/** Every step that writes its node: decide()'s, and the grant that ends a drain. */
export type WriteAction =
  | Exclude<
      Action,
      {
        type:
          | 'drain'
          | 'release'
          | 'promise'
          | 'unpromise'
          | 'claim'
          | 'job'
          | 'prepareJob'
          | 'deleteJob'
          | 'grantReboot';
      }
    >
  | { type: 'grant'; node: string; message: string; grant: string };

type HookConfig = Pick<DecideConfig, 'beforeRebootAnnotations' | 'afterRebootAnnotations'>;

/** The keys nuo writes for the protocol the node's agent speaks (its view says which). */
const keysOf = (n: NodeView): OperatorKeys => operatorKeys(n.protocol ?? AgentProtocol.nuo);

const phase = (to: Phase, reason: string, now: Date) => ({
  [Annotations.state]: to,
  [Annotations.stateReason]: reason,
  [Annotations.stateSince]: now.toISOString(),
});

const cleared = (keys: readonly string[]) => Object.fromEntries(keys.map((k) => [k, null]));

/**
 * nuo's counts on the node that do not read as a count, removed: read as 0 already, and left in place
 * they would make every pass rewrite the node (its own keys malformed) without ever fixing them.
 */
const malformedCounts = (n: NodeView) =>
  cleared(
    [Annotations.failures, Annotations.drainFailures, Annotations.ineffectiveReboots].filter((k) => {
      const raw = n.annotations[k];
      return raw !== undefined && !isCount(raw);
    }),
  );

/** A drain that succeeded ends the row of failed ones (onFailure Skip counts drains failed in a row). */
const drainSucceeded = (n: NodeView): Record<string, null> =>
  n.annotations[Annotations.drainFailures] === undefined ? {} : { [Annotations.drainFailures]: null };

/** The end of an attempt removes the Plan it named (a key written only for a Plan's attempt). */
const noPlan = (n: NodeView): Record<string, null> =>
  n.plan === undefined ? {} : { [Annotations.plan]: null };

/** The autoscalers' protection annotations the node's record names as nuo's (unknown names ignored). */
const ownProtection = (n: NodeView): string[] => {
  const named = (n.annotations[Annotations.scaleDownProtection] ?? '').split(',');
  return SCALE_DOWN_PROTECTION.filter((k) => named.includes(k));
};

/**
 * The autoscalers told to leave the node alone for the attempt (its drain empties it, and an empty node
 * is the first they remove): each protection annotation set unless someone else's is there, with the
 * record of those nuo set. A redone admission keeps the ones it set as its own.
 */
function protect(n: NodeView): Record<string, string> {
  const ours = ownProtection(n);
  const set = SCALE_DOWN_PROTECTION.filter((k) => ours.includes(k) || n.annotations[k] === undefined);
  if (set.length === 0) return {};
  return {
    ...Object.fromEntries(set.map((k) => [k, 'true'])),
    [Annotations.scaleDownProtection]: set.join(','),
  };
}

/** The end of an attempt removes the protection nuo set, and nothing else. */
const unprotect = (n: NodeView): Record<string, null> =>
  n.annotations[Annotations.scaleDownProtection] === undefined
    ? {}
    : cleared([...ownProtection(n), Annotations.scaleDownProtection]);

const allHooks = (c: HookConfig) => cleared([...c.beforeRebootAnnotations, ...c.afterRebootAnnotations]);
const noHookLabels = (k: OperatorKeys) => ({ [k.beforeReboot]: null, [k.afterReboot]: null });

/** The grant withdrawn: the protocol's `reboot-ok`, with the boot nuo recorded for a grant that cannot name it. */
const noGrant = (k: OperatorKeys) => ({
  [k.rebootOk]: null,
  ...(k.grantedBootId ? { [k.grantedBootId]: null } : {}),
});

/**
 * The write that starts a Plan's attempt, naming the Plan: Draining, cordoned (a Plan that drains or
 * reboots), or Upgrading, cordoned or not as the Plan says. Before-reboot hooks are a reboot's.
 */
function planStart(p: PlanSlot, now: Date): NodeWrite {
  const named = { [Annotations.plan]: p.ref };
  if (p.prepare === 'drain')
    return {
      annotations: { ...phase(Phase.draining, `admitted for Plan ${p.ref}; draining`, now), ...named },
      cordon: true,
    };
  return {
    annotations: { ...phase(Phase.upgrading, `admitted for Plan ${p.ref}; its Job starts`, now), ...named },
    ...(p.prepare === 'cordon' ? { cordon: true } : {}),
  };
}

/**
 * The write that starts an attempt, the node protected from the autoscalers in it: BeforeReboot with its
 * hooks asked for, or straight to Draining.
 */
function attemptStart(n: NodeView, c: HookConfig, now: Date, plan?: PlanSlot): NodeWrite {
  const write = unprotectedStart(keysOf(n), c, now, plan);
  return { ...write, annotations: { ...write.annotations, ...protect(n) } };
}

function unprotectedStart(k: OperatorKeys, c: HookConfig, now: Date, plan?: PlanSlot): NodeWrite {
  if (plan) return planStart(plan, now);
  const hooks = c.beforeRebootAnnotations;
  if (hooks.length === 0)
    return {
      annotations: phase(Phase.draining, 'admitted, no before-reboot hooks; draining', now),
      cordon: true,
    };
  return {
    // The reason decide() gives a node waiting here, so no second write follows to say it.
    annotations: {
      ...phase(Phase.beforeReboot, `waiting for before-reboot hooks: ${hooks.join(', ')}`, now),
      ...cleared(hooks),
    },
    labels: { [k.beforeReboot]: 'true' },
  };
}

/**
 * An attempt's start names the attempt (the ledger's number for it), and for a remediation records when
 * (for people; the pool's rate limit counts the ledger's record).
 */
function started(w: NodeWrite, a: { remediation?: true; attempt?: string }, now: Date): NodeWrite {
  return {
    ...w,
    annotations: {
      ...w.annotations,
      ...(a.attempt === undefined ? {} : { [Annotations.attempt]: a.attempt }),
      ...(a.remediation ? { [Annotations.remediatedAt]: now.toISOString() } : {}),
    },
  };
}

function transition(
  a: Extract<Action, { type: 'transition' }>,
  n: NodeView,
  c: HookConfig,
  now: Date,
): NodeWrite {
  const k = keysOf(n);
  if (a.to === Phase.beforeReboot) return started(attemptStart(n, c, now, a.plan), a, now);
  const annotations: Record<string, string | null> = phase(a.to, a.reason, now);
  const labels: Record<string, string | null> = {};
  if (a.clearGrant) Object.assign(annotations, noGrant(k));
  if (a.failed) annotations[Annotations.failures] = String(n.failures + 1);
  if (a.to === Phase.upgrading) Object.assign(annotations, drainSucceeded(n));
  if (a.to === Phase.draining) {
    labels[k.beforeReboot] = null;
    Object.assign(annotations, cleared(c.beforeRebootAnnotations));
  }
  if (a.to === Phase.afterReboot && c.afterRebootAnnotations.length > 0) {
    labels[k.afterReboot] = 'true';
    Object.assign(annotations, cleared(c.afterRebootAnnotations));
  }
  if (a.to === Phase.idle || a.to === Phase.pending) Object.assign(annotations, noPlan(n), unprotect(n));
  if (a.to === Phase.idle) {
    Object.assign(annotations, malformedCounts(n));
    annotations[Annotations.failures] = null;
    Object.assign(annotations, allHooks(c));
    Object.assign(labels, noHookLabels(k));
  }
  return {
    annotations,
    ...(Object.keys(labels).length ? { labels } : {}),
    ...(a.taint === undefined ? {} : { taint: a.taint }),
    ...(a.to === Phase.draining ? { cordon: true } : {}),
  };
}

/** What a completed reboot settles: a request it answered, and whether the need survived it. */
function rebootAnswered(a: Extract<WriteAction, { type: 'complete' }>, n: NodeView, now: Date) {
  return {
    // A request for a later time is still to be honoured; this reboot answered any other.
    ...(n.rebootRequested && n.rebootRequested > now ? {} : { [Annotations.rebootRequested]: null }),
    // A need the reboot did not clear counts towards a reboot loop (gates.ts); one it cleared ends it.
    [Annotations.ineffectiveReboots]: a.needSurvived ? String(n.ineffectiveReboots + 1) : null,
  };
}

export function patchFor(a: WriteAction, n: NodeView, c: HookConfig, now: Date): NodeWrite {
  const k = keysOf(n);
  const taint = (t: number | undefined) => (t === undefined ? {} : { taint: t });
  switch (a.type) {
    case 'pending':
      return {
        // A count nuo never wrote is read as 0 (no backoff): the write says so.
        annotations: {
          ...phase(Phase.pending, a.reason, now),
          ...malformedCounts(n),
        },
        ...taint(a.taint),
      };
    case 'explain':
      return { annotations: { [Annotations.stateReason]: a.reason }, ...taint(a.taint) };
    case 'taint':
      return { annotations: {}, taint: a.count };
    case 'revoke':
      return { annotations: noGrant(k) };
    case 'admit':
      return started(attemptStart(n, c, now, a.plan), a, now);
    case 'transition':
      return transition(a, n, c, now);
    case 'grant':
      return {
        annotations: {
          ...phase(Phase.rebootGranted, `${a.message}; reboot granted`, now),
          ...drainSucceeded(n),
          [k.rebootOk]: a.grant,
          ...(k.grantedBootId ? { [k.grantedBootId]: n.bootId } : {}),
        },
      };
    case 'abort':
      return {
        annotations: {
          ...phase(
            Phase.pending,
            a.skip
              ? `${a.reason}; skipped: its drain failed ${n.drainFailures + 1} time(s) in a row; remove the label ${Labels.skipped} to try again`
              : `${a.reason}; retrying after backoff`,
            now,
          ),
          [Annotations.failures]: String(n.failures + 1),
          ...(a.drainFailed ? { [Annotations.drainFailures]: String(n.drainFailures + 1) } : {}),
          ...(n.annotations[Annotations.release] === undefined ? {} : { [Annotations.release]: null }),
          ...noGrant(k),
          ...noPlan(n),
          ...unprotect(n),
          ...allHooks(c),
        },
        labels: { ...noHookLabels(k), ...(a.skip ? { [Labels.skipped]: 'true' } : {}) },
      };
    case 'end':
      return transition(
        { type: 'transition', node: a.node, to: a.to, reason: a.reason, clearGrant: true },
        n,
        c,
        now,
      );
    case 'complete':
      return {
        annotations: {
          ...phase(Phase.idle, a.reason, now),
          ...noGrant(k),
          [Annotations.failures]: null,
          ...(n.annotations[Annotations.release] === undefined ? {} : { [Annotations.release]: null }),
          ...(a.plan && !a.plan.rebooted ? {} : rebootAnswered(a, n, now)),
          ...noPlan(n),
          ...unprotect(n),
          ...allHooks(c),
        },
        // A Plan's own labels first: its hash label, which says it is applied, is nuo's alone.
        labels: a.plan
          ? { ...a.plan.labels, [a.plan.label]: a.plan.hash, ...noHookLabels(k) }
          : noHookLabels(k),
        // Done: pods are welcome here again, and preferred over nodes still waiting.
        ...(n.pendingTaints > 0 ? { taint: 0 } : {}),
      };
  }
}
