/**
 * One step of a node that holds a slot: its phase and what it sees decide the next action (or none).
 * One pure function per phase; the transitions that recur (a confirmed reboot, a timeout that fails
 * closed) are built once.
 */
import { Phase } from '../api/phases.ts';
import type { Action, DecideConfig } from './decide.ts';
import { type Health, healthDue, missingHooks } from './health-gate.ts';
import { ms, needsReboot } from './need.ts';
import type { NodeView } from './node-view.ts';

export interface StepContext {
  config: DecideConfig;
  now: Date;
  /** Nodes with a drain running in this process. */
  draining: ReadonlySet<string>;
  health: ReadonlyMap<string, Health>;
  /** Asks for the next look at `at` (ms), when a soak or a timeout ends. */
  wake: (at: number) => void;
}

/** Why a node drained or granted is cordoned and drained again: someone uncordoned it mid-attempt. */
export const UNCORDONED_DURING_DRAIN =
  "uncordoned by someone else during its drain: cordoned again (as nuo's), draining again";
const UNCORDONED_AFTER_GRANT =
  "uncordoned by someone else before its reboot: grant withdrawn, cordoned again (as nuo's), draining again";

const GRANT_REMOVED = 'its grant was removed by someone else before the reboot: draining again';

/** The reason a paused slot holder shows; written once. */
export const PAUSED_HOLDER = 'paused: holds its slot, no further action';

type PhaseStep = (n: NodeView, ctx: StepContext, age: number) => Action[];

/** Back with a new boot ID: on to the health gate, the grant withdrawn. */
const rebooted = (n: NodeView, reason: string): Action => ({
  type: 'transition',
  node: n.name,
  to: Phase.afterReboot,
  reason,
  clearGrant: true,
});

/** A timeout that fails closed: Failed, the slot kept. */
const failed = (n: NodeView, reason: string): Action => ({
  type: 'transition',
  node: n.name,
  to: Phase.failed,
  reason,
  failed: true,
});

/** A reason written only when it changed. */
const explain = (n: NodeView, reason: string): Action[] =>
  n.stateReason === reason ? [] : [{ type: 'explain', node: n.name, reason }];

const bootChanged = (n: NodeView) => Boolean(n.bootIdBefore) && n.bootId !== n.bootIdBefore;

/** Admitted in the ledger, but the node write did not happen (a crash between the two): redo it. */
const admittedNotWritten: PhaseStep = (n, { now }) => [
  {
    type: 'transition',
    node: n.name,
    to: Phase.beforeReboot,
    reason: `${needsReboot(n, now.getTime()) ?? 'holds a slot'} (its admission's node write redone)`,
  },
];

const beforeReboot: PhaseStep = (n, { config, wake }, age) => {
  const missing = missingHooks(n, config.beforeRebootAnnotations);
  if (missing.length === 0)
    return [
      { type: 'transition', node: n.name, to: Phase.draining, reason: 'before-reboot hooks done; draining' },
    ];
  if (age > config.drainTimeoutMs)
    return [
      { type: 'abort', node: n.name, reason: `before-reboot hooks not done in time: ${missing.join(', ')}` },
    ];
  wake(ms(n.stateSince) + config.drainTimeoutMs + 1);
  return explain(n, `waiting for before-reboot hooks: ${missing.join(', ')}`);
};

const draining: PhaseStep = (n, ctx) => (ctx.draining.has(n.name) ? [] : [{ type: 'drain', node: n.name }]);

const rebootGranted: PhaseStep = (n, { config, wake }, age) => {
  if (n.rebootInProgress && bootChanged(n)) return [rebooted(n, 'rebooted: boot ID changed')];
  if (n.rebootInProgress)
    return [{ type: 'transition', node: n.name, to: Phase.rebooting, reason: 'agent is rebooting the node' }];
  // The grant is gone (removed by someone else, or revoked as not nuo's): drain again (nothing left to
  // evict, unless pods came back) and grant anew, rather than wait for a reboot that cannot come.
  if (!n.grantShown) return [{ type: 'transition', node: n.name, to: Phase.draining, reason: GRANT_REMOVED }];
  // The agent reboots only a cordoned node; pods may have landed since the drain: drain it again.
  if (!n.unschedulable)
    return [
      {
        type: 'transition',
        node: n.name,
        to: Phase.draining,
        reason: UNCORDONED_AFTER_GRANT,
        clearGrant: true,
      },
    ];
  if (age > config.rebootTimeoutMs)
    return [
      failed(n, `the agent did not start the reboot within ${config.rebootTimeoutMs / 1000}s of the grant`),
    ];
  wake(ms(n.stateSince) + config.rebootTimeoutMs + 1);
  return [];
};

const rebooting: PhaseStep = (n, { config, wake }, age) => {
  if (bootChanged(n)) return [rebooted(n, 'rebooted: boot ID changed')];
  if (age > config.rebootTimeoutMs)
    return [
      failed(n, `no reboot: boot ID unchanged ${config.rebootTimeoutMs / 1000}s after the agent started it`),
    ];
  wake(ms(n.stateSince) + config.rebootTimeoutMs + 1);
  return [];
};

const afterReboot: PhaseStep = (n, ctx, age) => {
  const { config, now, wake } = ctx;
  if (!n.ready) {
    if (age > config.returnTimeoutMs)
      return [failed(n, `not Ready within ${config.returnTimeoutMs / 1000}s of the reboot`)];
    wake(ms(n.stateSince) + config.returnTimeoutMs + 1);
    return explain(n, 'waiting for the node to become Ready');
  }
  const waits: string[] = [];
  const missing = missingHooks(n, config.afterRebootAnnotations);
  if (missing.length > 0) waits.push(`after-reboot hooks: ${missing.join(', ')}`);
  const readyFor = now.getTime() - ms(n.readySince);
  wake(ms(n.readySince) + config.soakMs);
  if (!(readyFor >= config.soakMs))
    waits.push(`soak (Ready ${Math.max(0, Math.floor(readyFor / 1000))}s of ${config.soakMs / 1000}s)`);
  // DaemonSet pods are judged only once the soak is over (see healthDue): until then the soak waits.
  const health = ctx.health.get(n.name);
  const due = healthDue(n, config, now);
  if (!health?.daemonSetPodsReady && due)
    waits.push(`DaemonSet pods: ${health?.detail ?? 'not checked yet'}`);
  if (n.rebootInProgress) waits.push('the agent to report after boot');
  if (waits.length === 0) {
    const survived = n.rebootNeeded ? { needSurvived: true } : {};
    return [{ type: 'complete', node: n.name, reason: 'rebooted and healthy', ...survived }];
  }
  // Nothing is written while only the pods' first read is awaited: most nodes pass it, and their next
  // write is the completion. The soak countdown changes every second: only entering the wait is written.
  if (due && !health && waits.length === 1) return [];
  return explain(
    n,
    `health gate: waiting for ${waits.map((w) => w.replace(/ \(Ready \d+s of/, ' (of')).join('; ')}`,
  );
};

/** Recover open: a node that came back after all resumes at the health gate; else it fails closed. */
const failedPhase: PhaseStep = (n) =>
  bootChanged(n) && n.ready ? [rebooted(n, 'came back after the timeout: boot ID changed')] : [];

const STEPS: Record<Phase, PhaseStep> = {
  [Phase.idle]: admittedNotWritten,
  [Phase.pending]: admittedNotWritten,
  [Phase.beforeReboot]: beforeReboot,
  [Phase.draining]: draining,
  [Phase.upgrading]: (n, ctx) => [restorePhase(n, ctx)],
  [Phase.rebootGranted]: rebootGranted,
  [Phase.rebooting]: rebooting,
  [Phase.afterReboot]: afterReboot,
  [Phase.failed]: failedPhase,
};

/**
 * The next step of a slot holder whose `nuo.dev/state` was overwritten, from what its other keys prove:
 * the agent's reboot mark says Rebooting (same boot) or AfterReboot (new boot); a grant says
 * RebootGranted (the agent reboots only on one it verifies). Anything else could be BeforeReboot,
 * Draining or AfterReboot after the agent cleared its mark: the attempt ends, nuo's cordon undone, rather
 * than drain and grant a node that may have rebooted already. A need left is admitted again later.
 */
function restorePhase(n: NodeView, ctx: StepContext): Action {
  const why = `phase restored from the node's other keys (${n.problems[0] ?? 'nuo.dev/state overwritten'})`;
  const to = (phase: Phase, extra = {}): Action => ({
    type: 'transition',
    node: n.name,
    to: phase,
    reason: `${phase}: ${why}`,
    ...extra,
  });
  if (n.rebootInProgress)
    return bootChanged(n) ? to(Phase.afterReboot, { clearGrant: true }) : to(Phase.rebooting);
  if (n.grantShown) return to(Phase.rebootGranted);
  const end = needsReboot(n, ctx.now.getTime()) ? Phase.pending : Phase.idle;
  return { type: 'end', node: n.name, reason: `its phase was lost, so its attempt ended: ${why}`, to: end };
}

/** The next action of a node that holds a slot, in the phase it is in. */
export function stepHolder(n: NodeView, ctx: StepContext): Action[] {
  if (n.stateMalformed) return [restorePhase(n, ctx)];
  if (n.paused) return explain(n, PAUSED_HOLDER);
  const since = ms(n.stateSince);
  const age = Number.isNaN(since) ? 0 : ctx.now.getTime() - since;
  return STEPS[n.state ?? Phase.idle](n, ctx, age);
}
