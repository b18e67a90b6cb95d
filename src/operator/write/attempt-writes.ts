/**
 * What each node action does to the cluster: the node's conditional write (node-writes.ts builds it),
 * and the drain, Event, metric and log that go with it; the grant or abort that records a drain's
 * outcome; and the handover of an ended attempt's slot to the node promised it.
 */
import type { CoreV1Api, V1Node } from '@kubernetes/client-node';
import { attemptId } from '../../api/attempt.ts';
import { Annotations } from '../../api/keys.ts';
import { Phase } from '../../api/phases.ts';
import type { NotifyOn } from '../../api/update-policy.ts';
import { DrainOutcome, type DrainResult } from '../../drain/evict.ts';
import { DRAIN_WAITING } from '../../drain/pdb-hold.ts';
import type { KubeLog } from '../../kube/backoff.ts';
import type { Notifier } from '../../notify/notifier.ts';
import { PROTOCOL_GRANT } from '../decide/agent-protocol.ts';
import type { Health } from '../decide/health-gate.ts';
import type { NodeView } from '../decide/node-view.ts';
import type { OwnNode } from '../decide/own-node.ts';
import { UNCORDONED_DURING_DRAIN } from '../decide/phase-steps.ts';
import { AttemptEnd } from '../decide/slot.ts';
import type { Decider, NodeStep } from '../decider.ts';
import type { OperatorMetrics } from '../metrics.ts';
import { CONFLICT_RETRIES, type NodeSteps } from '../node-steps.ts';
import type { PlanJobWriter } from '../plans/plan-jobs.ts';
import { planFailurePrefix } from '../plans/plan-pass.ts';
import type { DoNotDisruptReads } from '../read/do-not-disrupt.ts';
import type { LedgerCache } from '../read/ledger.ts';
import type { DrainRunner } from './drain-runner.ts';
import type { EventRecorder } from './events.ts';
import type { GrantSigner } from './grant-key.ts';
import type { LifecycleWriter } from './lifecycle-writer.ts';
import { Conflict, type NodeCache, type NodeWriter } from './node-writer.ts';
import { type NodeWrite, patchFor, type WriteAction } from './node-writes.ts';

export interface AttemptWritesOptions {
  core: CoreV1Api;
  writer: NodeWriter;
  nodes: NodeCache;
  decider: Decider;
  drains: DrainRunner;
  /** This process's own node: its drain is handed over to a standby rather than started. */
  own: OwnNode;
  grants: GrantSigner;
  ledger: LedgerCache;
  events: EventRecorder;
  notifier: Notifier;
  /** Publishes the node's lifecycle conditions ahead of a step that starts its maintenance. */
  lifecycle: LifecycleWriter;
  /** Creates and deletes the Plans' Jobs. */
  jobs: PlanJobWriter;
  /** The do-not-disrupt reads: a node whose drain a pod held is read afresh before its next admission. */
  optOuts: Pick<DoNotDisruptReads, 'forget'>;
  steps: () => NodeSteps;
  /** The health the last pass decided on (a handover decides on it too). */
  health: () => ReadonlyMap<string, Health>;
  acting: () => boolean;
  log: KubeLog;
  metrics?: OperatorMetrics;
}

export class AttemptWrites {
  readonly #o: AttemptWritesOptions;

  constructor(options: AttemptWritesOptions) {
    this.#o = options;
  }

  /**
   * One node's part of an action (its slot was already taken in the ledger, for an admission). Returns
   * true when the node's attempt ended and its slot is to be freed.
   */
  apply = async (action: NodeStep, view: NodeView, now: Date, core: CoreV1Api): Promise<boolean> => {
    const { writer, log } = this.#o;
    switch (action.type) {
      case 'drain': {
        // This process's own node: the leadership is handed over, a standby drains it.
        if (this.#o.own.yields(view)) return false;
        // A drain this process did not start (a new leader's, a drain again): the node says so first.
        await this.#o.lifecycle.announce(view, Phase.draining, this.#o.ledger.last?.slots[view.name], core);
        this.#o.drains.start(view.name, view.stateSince ? { since: view.stateSince } : {});
        return false;
      }
      case 'admit':
        await this.#enterAttempt(view, action, now, core);
        return false;
      case 'abort':
        await this.#abort(view, action.reason, core);
        return true;
      case 'complete':
        await this.#o.ledger.recordEnd(view.name, AttemptEnd.completed);
        await writer.endAttempt(view, core, (fresh) => this.#write(action, fresh, now));
        this.#o.metrics?.completions.inc();
        this.#o.events.normal(
          view.name,
          action.plan ? 'PlanApplied' : 'Rebooted',
          `${action.reason}; slot freed`,
        );
        this.#notify(view.name, 'Completed', `${action.reason}; slot freed`, view.plan);
        // endedAt: the instant written as the node's state-since, from which a retry's backoff counts.
        log('info', 'completed', {
          node: view.name,
          endedAt: now.toISOString(),
          ...(action.needSurvived ? { needSurvived: true } : {}),
        });
        this.#handOver(view.name);
        return true;
      case 'job': {
        const slot = (await this.#o.ledger.read()).ledger.slots[view.name];
        // The node says it is in maintenance before its Job can start.
        if (view.state) await this.#o.lifecycle.announce(view, view.state, slot, core);
        await this.#o.jobs.create(view, slot);
        return false;
      }
      case 'prepareJob':
        await this.#o.jobs.prepare(view, action.plan);
        return false;
      case 'deleteJob':
        await this.#o.jobs.delete(action.job, action.reason);
        log('info', 'Job deleted', { node: view.name, job: action.job.name, reason: action.reason });
        return false;
      case 'grantReboot':
        await this.#grant(view, action.reason);
        return false;
      case 'end':
        this.#o.drains.abort(view.name);
        await this.#o.ledger.recordEnd(view.name, AttemptEnd.ended);
        await writer.endAttempt(view, core, (fresh) => this.#write(action, fresh, now));
        log('warn', 'attempt without a slot ended; cordon undone', {
          node: view.name,
          reason: action.reason,
        });
        return false;
      case 'transition':
        await this.#transition(action, view, now, core);
        return false;
      case 'revoke':
        await writer.patch(view, this.#write(action, view, now), core);
        this.#o.metrics?.grantsRevoked.inc();
        this.#o.events.warning(view.name, 'ForeignGrant', action.reason);
        log('warn', 'removed a reboot grant nuo did not give', { node: view.name, reason: action.reason });
        return false;
      default:
        await writer.patch(view, this.#write(action, view, now), core);
        return false;
    }
  };

  /**
   * A drain that waits says so on its node while it runs (`nuo status`, the policy's explain) and in an
   * Event: the pods it waits for and until when, and (`blocked`, a Warning) what holds each PDB that keeps
   * refusing and what would unblock it. Best effort: the drain's end writes the node again either way.
   */
  drainWaiting = async (name: string, holds: string[], blocked: boolean): Promise<void> => {
    const node = this.#o.nodes.get(name);
    if (!node || !this.#o.acting()) return;
    const view = this.#o.decider.view(node);
    if (view.state !== Phase.draining) return;
    const reason = `${DRAIN_WAITING}${holds.join('; ')}`;
    await this.#o.writer.patch(
      view,
      this.#write({ type: 'explain', node: name, reason }, view, new Date()),
      this.#o.core,
    );
    if (blocked) this.#o.events.warning(name, 'DrainWaiting', reason);
    else this.#o.events.normal(name, 'DrainWaiting', reason);
    this.#o.log('info', 'drain waiting', { node: name, holds });
  };

  /**
   * Grants the reboot of a drained node, or ends the attempt of a drain that failed, on the node as it
   * is now. Another writer (the agent, the node-lifecycle controller) may change the node between the
   * read and the conditional write: that 409 is read again and retried here rather than sending the node
   * through a second drain. The first try writes on the cached node (the write is conditional, so a
   * stale cache costs a 409 and a read, and a fresh one saves a round trip per grant).
   */
  recordDrain = async (name: string, result: DrainResult, refused: number): Promise<void> => {
    for (let attempt = 1; ; attempt++) {
      let node = attempt === 1 ? this.#o.nodes.get(name) : undefined;
      if (!node) {
        node = await this.#o.core.readNode({ name });
        this.#o.nodes.upsertFromWrite(node);
      }
      const fresh = this.#o.decider.view(node);
      if (fresh.state !== Phase.draining) return;
      // Paused while draining: "leave this node alone" — keep it cordoned in its slot, grant nothing.
      // After resume, reconcile drains again (nothing left to evict) and grants then.
      if (fresh.paused) {
        this.#o.log('info', 'drained, but paused: no grant until resumed', { node: name });
        return;
      }
      // Its pool stood down meanwhile (CLUO's or FLUO's own operator runs): no grant from nuo now.
      if (this.#o.decider.standsDown(name)) {
        this.#o.log('warn', 'drained, but nuo stands down from its pool: no grant', { node: name });
        return;
      }
      try {
        await this.#drained(fresh, result, refused);
        return;
      } catch (err) {
        if (!(err instanceof Conflict) || attempt >= CONFLICT_RETRIES || !this.#o.acting()) throw err;
      }
    }
  };

  async #drained(fresh: NodeView, result: DrainResult, refused: number): Promise<void> {
    const { name } = fresh;
    if (result.outcome === DrainOutcome.held) {
      await this.#held(fresh, result.message);
    } else if (result.outcome !== DrainOutcome.drained) {
      // Under onFailure Skip, the drain that fails for the afterAttempts-th time in a row skips the node.
      const onFailure = this.#o.decider.drainOf(name)?.onFailure;
      const skip = onFailure?.action === 'Skip' && fresh.drainFailures + 1 >= onFailure.afterAttempts;
      // A Plan's attempt names its Plan, so the Plan's status can show the failed drain (plan-status.ts).
      const plan = (await this.#o.ledger.read()).ledger.slots[name]?.plan;
      const prefix = plan ? planFailurePrefix(plan.ref) : '';
      await this.#abort(fresh, `${prefix}drain ${result.message}`, this.#o.core, { drainFailed: true, skip });
      this.#o.steps().freed();
    } else if (!fresh.unschedulable) {
      // Someone uncordoned it during the drain: pods may have landed since the drain's list.
      const reason = UNCORDONED_DURING_DRAIN;
      const again = { type: 'transition', node: name, to: Phase.draining, reason } as const;
      await this.#o.writer.patch(fresh, this.#write(again, fresh, new Date()), this.#o.core);
      this.#o.events.warning(name, 'UncordonedMidAttempt', reason);
      this.#o.log('warn', 'uncordoned during its drain: cordoned and drained again', { node: name });
    } else if (!fresh.bootId) {
      // Without a boot ID a grant cannot name the boot it is for, nor a reboot be confirmed.
      await this.#abort(fresh, 'the node reports no boot ID (status.nodeInfo.bootID)');
      this.#o.steps().freed();
    } else if ((await this.#o.ledger.read()).ledger.slots[name]?.plan) {
      // A Plan's attempt: drained, its Job runs next (a reboot, if the Plan asks for one, after the Job).
      const plan = fresh.annotations[Annotations.plan] ?? 'its Plan';
      const reason = `drained (${result.message}); ${plan}'s Job starts`;
      const next = { type: 'transition', node: name, to: Phase.upgrading, reason } as const;
      await this.#o.writer.patch(fresh, this.#write(next, fresh, new Date()), this.#o.core);
      this.#o.log('info', 'drained for a Plan', { node: name, drain: result.message, refused });
    } else {
      await this.#grant(fresh, result.message, { refused });
    }
  }

  /**
   * A pod asked not to be disrupted after the node was admitted: nothing was evicted, so the attempt ends
   * with nuo's cordon undone and no failure counted, and the node waits for a fresh read of its pods.
   */
  async #held(fresh: NodeView, message: string): Promise<void> {
    const reason = `drain ${message}: nothing evicted, attempt ended`;
    const end = { type: 'end', node: fresh.name, to: Phase.pending, reason } as const;
    this.#o.optOuts.forget(fresh.name);
    await this.#o.ledger.recordEnd(fresh.name, AttemptEnd.ended);
    await this.#o.writer.endAttempt(fresh, this.#o.core, (n) => this.#write(end, n, new Date()));
    this.#o.steps().freed();
    this.#o.events.normal(fresh.name, 'DrainHeld', reason);
    this.#o.log('info', 'drain held by a pod; attempt ended; slot released', { node: fresh.name, reason });
  }

  /**
   * Signs the node's grant for the attempt holding its slot and writes it: RebootGranted. A node whose
   * agent is CLUO's or FLUO's gets their protocol's grant, which cannot be signed.
   */
  async #grant(drained: NodeView, message: string, log: Record<string, unknown> = {}): Promise<void> {
    const { ledger } = await this.#o.ledger.read();
    const { core, lifecycle } = this.#o;
    await lifecycle.ahead(drained.name, async () => {
      // The node says it is in maintenance before the agent can take it down.
      const slot = ledger.slots[drained.name];
      const announced = await lifecycle.announce(drained, Phase.rebootGranted, slot, core);
      const fresh = announced ? this.#o.decider.view(announced) : drained;
      const grant = {
        type: 'grant',
        node: fresh.name,
        message,
        grant: fresh.protocol ? PROTOCOL_GRANT : await this.#o.grants.grant(fresh, ledger),
      } as const;
      await this.#o.writer.patch(fresh, this.#write(grant, fresh, new Date()), core);
    });
    this.#o.events.normal(drained.name, 'RebootGranted', message);
    this.#o.log('info', 'reboot granted', { node: drained.name, reason: message, ...log });
  }

  async #transition(
    action: Extract<NodeStep, { type: 'transition' }>,
    view: NodeView,
    now: Date,
    core: CoreV1Api,
  ) {
    if (action.to === Phase.beforeReboot) {
      await this.#enterAttempt(view, action, now, core);
      return;
    }
    const written = await this.#o.writer.patch(view, this.#write(action, view, now), core);
    if (action.to === Phase.draining) await this.#drain(written, core);
    if (action.failed) {
      this.#o.metrics?.failures.inc();
      this.#o.events.warning(view.name, 'RebootFailed', action.reason);
      this.#notify(view.name, 'Failed', action.reason, view.plan);
      this.#o.log('error', 'node failed; its slot stays held', { node: view.name, reason: action.reason });
    } else {
      this.#o.log('info', 'phase', { node: view.name, to: action.to, reason: action.reason });
    }
  }

  /** Starts the drain of a node just written Draining, once the node says so (DrainInProgress). */
  async #drain(written: V1Node, core: CoreV1Api): Promise<void> {
    const view = this.#o.decider.view(written);
    // This process's own node: the next pass's drain step hands the leadership over, once what goes
    // with this write (Events, notifications) is sent.
    if (this.#o.own.due(view)) return;
    // The ledger as last read (no request): the slot names a Plan's attempt, if it is one.
    await this.#o.lifecycle.announce(view, Phase.draining, this.#o.ledger.last?.slots[view.name], core);
    this.#o.drains.start(view.name, {
      cordoned: true,
      ...(view.stateSince ? { since: view.stateSince } : {}),
    });
  }

  /** Tells the receivers of the node's pool (its policy's `notifications`), in the background. */
  #notify(node: string, kind: NotifyOn, message: string, plan: string | undefined): void {
    const policy = this.#o.decider.policyOf(node);
    if (policy && policy.notifications.length > 0) {
      this.#o.notifier.notify(policy.notifications, {
        kind,
        policy: policy.name,
        node,
        ...(plan ? { plan } : {}),
        message,
        at: new Date(),
      });
    }
  }

  /** The node's write for a step (node-writes.ts). */
  #write(action: WriteAction, view: NodeView, now: Date): NodeWrite {
    // The hooks of the node's own pool: an attempt's start asks for them, its end clears them.
    return patchFor(action, view, this.#o.decider.configOf(view.name), now);
  }

  /**
   * The node write that starts an admitted attempt: an admission's, or the same write redone for a node
   * the ledger gave a slot while its own write did not land (a 409 after a handover, a crash). Either way
   * this is where the node is admitted, so it is logged, counted and reported here, once per attempt:
   * the write is conditional, so only one of the two lands.
   */
  async #enterAttempt(
    view: NodeView,
    action: Extract<WriteAction, { type: 'admit' | 'transition' }>,
    now: Date,
    core: CoreV1Api,
  ) {
    // The write names the attempt the ledger handed out (the pass's slot, or a handover's promise).
    const entry = this.#o.ledger.last?.slots[view.name] ?? this.#o.ledger.last?.next?.[view.name];
    if (!entry) throw new Error(`node ${view.name}: no slot or promise in the ledger copy for its admission`);
    const write = this.#write({ ...action, attempt: attemptId(entry) }, view, now);
    const written = await this.#o.writer.patch(view, write, core);
    // Without before-reboot hooks the attempt starts in Draining, cordoned in the same write: drain now.
    if (write.annotations[Annotations.state] === Phase.draining && this.#o.acting())
      await this.#drain(written, core);
    this.#o.metrics?.admissions.inc();
    const plan = action.plan;
    const what = plan ? `Plan ${plan.ref}` : 'reboot';
    this.#o.events.normal(view.name, 'Admitted', `admitted for ${what}: ${action.reason}`);
    // A reboot nobody asked for by hand: the node's own Event says which condition asked for it.
    if (action.remediation)
      this.#o.events.warning(view.name, 'Remediation', `rebooting to remediate: ${action.reason}`);
    this.#notify(view.name, 'Admitted', action.reason, plan ? plan.ref : undefined);
    this.#o.log('info', 'admitted', { node: view.name, reason: action.reason });
  }

  /** Ends an attempt that did not reach the reboot: own cordon undone, Pending (the caller frees the slot). */
  async #abort(
    decidedOn: Pick<NodeView, 'name' | 'state' | 'plan'>,
    reason: string,
    core = this.#o.core,
    { drainFailed = false, skip = false } = {},
  ) {
    const { name } = decidedOn;
    const abort = {
      type: 'abort',
      node: name,
      reason,
      ...(drainFailed ? { drainFailed } : {}),
      ...(skip ? { skip } : {}),
    } as const;
    await this.#o.ledger.recordEnd(name, AttemptEnd.failed);
    await this.#o.writer.endAttempt(decidedOn, core, (fresh) => this.#write(abort, fresh, new Date()));
    this.#o.metrics?.failures.inc();
    this.#o.events.warning(name, skip ? 'Skipped' : 'AttemptAborted', reason);
    if (skip) this.#notify(name, 'Failed', reason, decidedOn.plan);
    this.#o.log(
      'warn',
      skip ? 'attempt aborted; node skipped; slot released' : 'attempt aborted; slot released',
      {
        node: name,
        reason,
      },
    );
  }

  /**
   * The slot of a node whose attempt just ended goes at once to the node promised it (Ledger.next), with
   * no pass and no ledger write in between: from a slot freed to the next node draining is one write.
   * decide() runs on the whole cache (the ended attempt in it, as written) and the ledger as this leader
   * last wrote it, so the budget is counted exactly as a pass would; and no pass gives a promised slot to
   * anyone else (decide() holds it back while the promise is withdrawn), so this needs no lock. The next
   * pass records the handover in the ledger (the successor claims the slot).
   */
  #handOver(ended: string): void {
    const ledger = this.#o.ledger.last;
    const successor = Object.entries(ledger?.next ?? {}).find(([, s]) => s.after === ended)?.[0];
    const steps = this.#o.steps();
    if (!ledger || !successor || steps.has(successor) || !this.#o.acting()) return;
    const node = this.#o.nodes.get(successor);
    if (!node) return;
    const now = new Date();
    const { decider } = this.#o;
    const { actions } = decider.decide(decider.nodes(now), ledger, this.#o.health(), now);
    const admit = actions.find((a) => a.type === 'admit' && a.node === successor);
    // A remediation is left to the pass: its rate limit counts in the ledger write that admits it.
    if (admit?.type !== 'admit' || admit.remediation) return;
    this.#o.log('info', 'slot handed over', { from: ended, to: successor });
    steps.start(admit, decider.view(node), now, steps.handoverLane);
  }
}
