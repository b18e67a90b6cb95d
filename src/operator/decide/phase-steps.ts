/**
 * One step of a node that holds a slot: its phase and what it sees decide the next action (or none).
 * One pure function per phase; the transitions that recur (a confirmed reboot, a timeout that fails
 * closed) are built once.
 */
import { attemptId } from '../../api/attempt.ts';
import { AgentProtocol, Annotations } from '../../api/keys.ts';
import { Phase } from '../../api/phases.ts';
import type { Action } from './action.ts';
import { updateNotTaken } from './agent-protocol.ts';
import { needWithdrawnAfterGrant } from './boot-witness.ts';
import { checksWait, FRESH_CHECKS, healthDue, missingHooks } from './health-gate.ts';
import { ms, needsWork, remediationOnly } from './need.ts';
import type { NodeView } from './node-view.ts';
import { planFinished, rebootedBy, upgrading } from './plan-steps.ts';
import { planDoneLabel } from './plan-work.ts';
import { PolicyNeedKind } from './policy-reading.ts';
import { bootChanged, endAttempt, explain, mayBeRebooting, type StepContext } from './step-context.ts';

/** Why a node drained or granted is cordoned and drained again: someone uncordoned it mid-attempt. */
export const UNCORDONED_DURING_DRAIN =
  "uncordoned by someone else during its drain: cordoned again (as nuo's), draining again";
const UNCORDONED_AFTER_GRANT =
  "uncordoned by someone else before its reboot: grant withdrawn, cordoned again (as nuo's), draining again";

const GRANT_REMOVED = 'its grant was removed by someone else before the reboot: draining again';

/** The reason a paused slot holder shows; written once. */
export const PAUSED_HOLDER = 'paused: holds its slot, no further action';

type PhaseStep = (n: NodeView, ctx: StepContext, age: number) => Action[];

/**
 * Back with a new boot ID: on to the health gate, nuo's grant withdrawn. CLUO's and FLUO's grant stays
 * until the attempt ends: their agent waits for it to go before it reports a need again.
 */
const rebooted = (n: NodeView, reason: string): Action => ({
  type: 'transition',
  node: n.name,
  to: Phase.afterReboot,
  reason,
  ...(n.protocol ? {} : { clearGrant: true }),
});

/**
 * CLUO's or FLUO's agent that restarts before its reboot writes "false" into both its need and its mark,
 * then waits for the grant to go before it asks again: a grant it will not act on, so the attempt ends —
 * once the kubelet has confirmed that the node still runs the granted boot (boot-witness.ts), or the
 * reboot timeout has passed without a new boot ID. Until then it may be the agent's report on a boot the
 * kubelet has not posted yet (safety rule 11).
 */
const NEED_WITHDRAWN =
  'the agent withdrew its need before rebooting (it restarted, or its update engine no longer needs a reboot): grant withdrawn, attempt ended';
const WITHDRAWAL_UNCONFIRMED =
  "the agent withdrew its need after the grant: waiting for the node's kubelet to post its boot (a new boot ID is a reboot, and the health gate follows)";

/**
 * Past the reboot timeout with the withdrawal still unconfirmed, the node may be booting behind a late
 * kubelet as well as not rebooted at all: it fails closed, as a grant the agent never acted on does
 * (Failed, its slot and cordon kept); a new boot ID then takes it on to the health gate.
 */
function needWithdrawn(n: NodeView, ctx: StepContext, age: number): Action[] | undefined {
  if (!needWithdrawnAfterGrant(n)) return undefined;
  if (n.bootConfirmed) return [endAttempt(n, ctx, NEED_WITHDRAWN)];
  if (age > ctx.config.rebootTimeoutMs)
    return [
      failed(
        n,
        `the agent withdrew its need after the grant and the kubelet posted no status on the granted boot within ${ctx.config.rebootTimeoutMs / 1000}s: it may be booting; a new boot ID takes it on to the health gate`,
      ),
    ];
  ctx.wake(ms(n.stateSince) + ctx.config.rebootTimeoutMs + 1);
  return explain(n, WITHDRAWAL_UNCONFIRMED);
}

/** A timeout that fails closed: Failed, the slot kept. */
const failed = (n: NodeView, reason: string): Action => ({
  type: 'transition',
  node: n.name,
  to: Phase.failed,
  reason,
  failed: true,
});

/** Admitted in the ledger, but the node write did not happen (a crash between the two): redo it. */
const admittedNotWritten: PhaseStep = (n, { now, slotOf }) => {
  const plan = slotOf(n.name)?.plan;
  return [
    {
      type: 'transition',
      node: n.name,
      to: Phase.beforeReboot,
      reason: `${needsWork(n, now.getTime()) ?? 'holds a slot'} (its admission's node write redone)`,
      ...(plan ? { plan } : {}),
      ...(!plan && remediationOnly(n, now.getTime()) ? { remediation: true as const } : {}),
    },
  ];
};

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

const draining: PhaseStep = (n, ctx) => {
  const plan = ctx.slotOf(n.name)?.plan;
  if (plan && !ctx.config.plans?.completion(plan.ref)) return planFinished(n, ctx, plan.ref);
  return ctx.draining.has(n.name) ? [] : [{ type: 'drain', node: n.name }];
};

const rebootGranted: PhaseStep = (n, ctx, age) => {
  const { config, wake } = ctx;
  // nuo's agent marks its reboot and keeps the mark after it (0005); CLUO's and FLUO's clear theirs at
  // their start after the boot, which nuo may not have seen first.
  if ((n.rebootInProgress || n.protocol) && bootChanged(n)) return [rebooted(n, 'rebooted: boot ID changed')];
  const withdrawn = needWithdrawn(n, ctx, age);
  if (withdrawn) return withdrawn;
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

const rebooting: PhaseStep = (n, ctx, age) => {
  const { config, wake } = ctx;
  if (bootChanged(n)) return [rebooted(n, 'rebooted: boot ID changed')];
  const withdrawn = needWithdrawn(n, ctx, age);
  if (withdrawn) return withdrawn;
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
  // A reading counts from when this leader saw the node back (readySince, its own clock), never from the
  // phase's stateSince: another leader's clock wrote that, and one running ahead held the node for its skew.
  const checks = due ? checksWait(config.healthChecks, ms(n.readySince)) : undefined;
  if (checks) waits.push(checks);
  if (n.rebootInProgress) waits.push('the agent to report after boot');
  if (waits.length === 0) return completion(n, ctx);
  // Nothing is written while only the first reads are awaited (the pods', the health checks' after the
  // return): most nodes pass them, and their next write is the completion. The soak countdown changes
  // every second: only entering the wait is written.
  const reads = (due && !health ? 1 : 0) + (checks === FRESH_CHECKS ? 1 : 0);
  if (reads > 0 && waits.length === reads) return [];
  return explain(
    n,
    `health gate: waiting for ${waits.map((w) => w.replace(/ \(Ready \d+s of/, ' (of')).join('; ')}`,
  );
};

/** The write that ends a healthy node's attempt: a reboot's, or a Plan's with the labels it applies. */
function completion(n: NodeView, ctx: StepContext): Action[] {
  const slot = ctx.slotOf(n.name);
  const p = slot?.plan;
  if (!p) {
    // A remediation's condition still in its status after the boot: the reboot did not help either; nor
    // did a refresh whose boot the agent still reports as too old (a boot time that does not advance).
    const survived =
      n.rebootNeeded ||
      updateNotTaken(n) ||
      n.policyAsks?.faulty ||
      n.policyAsks?.need?.kind === PolicyNeedKind.refresh
        ? { needSurvived: true }
        : {};
    return [{ type: 'complete', node: n.name, reason: 'rebooted and healthy', ...survived }];
  }
  const done = ctx.config.plans?.completion(p.ref);
  if (!done) return planFinished(n, ctx, p.ref);
  const job = ctx.config.plans?.jobs(n.name).find((j) => j.attempt === attemptId(slot));
  const rebooted = p.reboot || (job !== undefined && rebootedBy(job, n));
  return [
    {
      type: 'complete',
      node: n.name,
      reason: `Plan ${p.ref} applied (version ${p.version}) and healthy`,
      plan: { label: planDoneLabel(p.ref), hash: p.hash, labels: done.labels, rebooted },
      ...(rebooted && n.rebootNeeded && p.reboot ? { needSurvived: true } : {}),
    },
  ];
}

/**
 * Recover open: a node that came back after all resumes at the health gate; else it fails closed. A Plan's
 * attempt that nuo did not reboot failed only at the health gate (not Ready in time after its Job): Ready
 * again, it resumes there.
 */
const failedPhase: PhaseStep = (n, ctx, age) => {
  if (bootChanged(n) && n.ready) return [rebooted(n, 'came back after the timeout: boot ID changed')];
  // A withdrawal the kubelet confirmed only after the reboot timeout: the agent restarted, no reboot.
  if (needWithdrawnAfterGrant(n) && n.bootConfirmed) return [endAttempt(n, ctx, NEED_WITHDRAWN)];
  const plan = ctx.slotOf(n.name)?.plan;
  if (plan && !plan.reboot && !n.bootIdBefore && n.ready)
    return [rebooted(n, `Plan ${plan.ref}: the node is Ready again after the timeout; health gate`)];
  return released(n, ctx, age) ?? [];
};

/**
 * A person's release of the node's Failed attempt (`nuo release`, naming this Failed phase), or the
 * policy's failedSlotTTL passed: the attempt ends (grant withdrawn, nuo's cordon undone, the slot freed),
 * unless the node may be rebooting now. The agent marks reboot-in-progress in a conditional write before
 * it reboots, so a withdrawal and that mark cannot both land: the one that does decides. A FleetLock client
 * reboots only on a fresh 200 to its pre-reboot, which the withdrawn lock no longer gives, so its lock is
 * released too; CLUO's and FLUO's agent reboots on the grant it last saw, whose withdrawal it may not see.
 */
function released(n: NodeView, { config, wake }: StepContext, age: number): Action[] | undefined {
  const named = n.release?.failedSince === n.annotations[Annotations.stateSince];
  const ttl = config.failedSlotTtlMs;
  if (ttl !== undefined && age < ttl) wake(ms(n.stateSince) + ttl + 1);
  const why =
    n.release && named
      ? `released by a person${n.release.by ? ` (${n.release.by})` : ''}: ${n.release.reason}`
      : ttl !== undefined && age >= ttl
        ? `released: Failed for longer than reboot.failedSlotTTL (${ttl / 1000}s)`
        : undefined;
  if (!why) return undefined;
  if (n.protocol && n.protocol !== AgentProtocol.fleetlock)
    return explain(
      n,
      `${why}; refused: ${n.protocol}'s agent could still reboot on the grant; if the machine is gone for good, delete its Node object`,
    );
  if (mayBeRebooting(n))
    return explain(
      n,
      `${why}; refused while its agent marks reboot-in-progress (it may be rebooting now); if the machine is gone for good, delete its Node object`,
    );
  return [{ type: 'abort', node: n.name, reason: why }];
}

const STEPS: Record<Phase, PhaseStep> = {
  [Phase.idle]: admittedNotWritten,
  [Phase.pending]: admittedNotWritten,
  [Phase.beforeReboot]: beforeReboot,
  [Phase.draining]: draining,
  [Phase.upgrading]: upgrading,
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
  // A Plan's Job still running: its attempt goes on (the Job decides when it ends, not a lost phase).
  const slot = ctx.slotOf(n.name);
  if (
    slot?.plan &&
    ctx.config.plans?.jobs(n.name).some((j) => j.attempt === attemptId(slot) && j.state === 'active')
  )
    return to(Phase.upgrading);
  return endAttempt(n, ctx, `its phase was lost, so its attempt ended: ${why}`);
}

/** The next action of a node that holds a slot, in the phase it is in. */
export function stepHolder(n: NodeView, ctx: StepContext): Action[] {
  if (n.stateMalformed) return [restorePhase(n, ctx)];
  if (n.paused) return explain(n, PAUSED_HOLDER);
  const since = ms(n.stateSince);
  const age = Number.isNaN(since) ? 0 : ctx.now.getTime() - since;
  return STEPS[n.state ?? Phase.idle](n, ctx, age);
}
