/**
 * The operator's decisions: cluster snapshot + configuration + now → actions. Pure and synchronous so
 * every rule can be unit-tested exhaustively; the controller applies the actions with conditional writes.
 *
 * The slot ledger (one object, written conditionally) is the authority on who holds a slot: admitting a
 * node is a write to the ledger, so two deciders — a new leader and a stale one — can never both spend the
 * last slot. Node phases are the per-node protocol and the human-readable mirror.
 */
import { Annotations } from '../api/keys.ts';
import { Phase, SLOT_PHASES } from '../api/phases.ts';
import type { Selector } from '../kube/selector.ts';
import { budgetSlots, type MaxUnavailable } from './budget.ts';
import type { OperatorConfig } from './config.ts';
import { type NodeView, quote } from './node-view.ts';

export interface Slot {
  /** When the node was admitted (RFC 3339). */
  since: string;
}

/** A node promised the slot of a holder whose attempt is about to end (see Ledger.next). */
export interface Succession {
  /** The slot holder whose slot this node takes. */
  after: string;
  /** When the promise was made (RFC 3339); a promised node already in an attempt holds the slot since then. */
  since: string;
}

export interface Ledger {
  slots: Record<string, Slot>;
  /**
   * Successors: node → the holder whose slot it takes once that holder's attempt has ended. Promised while
   * the holder soaks, so that the write that ends the holder's attempt can be followed at once by the
   * successor's admission, with no pass and no ledger write between the two (the grant-latency path).
   * A promised node holds no slot and counts against no budget until its predecessor's attempt has
   * ended; a slot promised to a node is never given to another in the same pass.
   */
  next?: Record<string, Succession>;
  /** When the last node was admitted (for the minimum spacing between grants). */
  lastGrant?: string;
}

/** The operator's settings as decide() reads them: the budget and selector parsed, the rest as configured. */
export type DecideConfig = Omit<
  OperatorConfig,
  | 'maxUnavailable'
  | 'nodeSelector'
  | 'namespace'
  | 'drainForce'
  | 'drainDeleteEmptyDirData'
  | 'drainGracePeriodSeconds'
  | 'drainConcurrency'
> & {
  maxUnavailable: MaxUnavailable;
  eligible: Selector;
};

export interface Health {
  /** The node's DaemonSet pods are all Ready. */
  daemonSetPodsReady: boolean;
  detail: string;
}

export interface Snapshot {
  nodes: NodeView[];
  ledger: Ledger;
  /** Nodes with a drain running in this process. */
  draining: ReadonlySet<string>;
  /**
   * Nodes whose admission this process has decided and not yet seen land (its ledger or node write is
   * in flight). They count against the budget: two handovers, or a handover and a pass, that each
   * decided without the other's admission gave one slot twice.
   */
  admitting: ReadonlySet<string>;
  /** Health of nodes in AfterReboot (gathered by the controller for those nodes only). */
  health: ReadonlyMap<string, Health>;
}

export type Action =
  /** Reserve a slot in the ledger, then move the node to BeforeReboot. */
  | { type: 'admit'; node: string; reason: string }
  /** Change the node's phase (and reason), with the protocol keys that go with it. */
  | {
      type: 'transition';
      node: string;
      to: Phase;
      reason: string;
      clearGrant?: boolean;
      failed?: boolean;
      /** Add (true) or remove (false) the reboot-pending taint in the same write. */
      taint?: boolean;
    }
  /** Update only the reason of a waiting node (written only when it changed). */
  | { type: 'explain'; node: string; reason: string; taint?: boolean }
  /** Add or remove the reboot-pending taint of a node outside an attempt, nothing else. */
  | { type: 'taint'; node: string; present: boolean }
  /** Run the drain engine for a node in Draining. */
  | { type: 'drain'; node: string }
  /** Release the slot of a node whose attempt was aborted (hook timeout), uncordon nuo's cordon, Pending. */
  | { type: 'abort'; node: string; reason: string }
  /** Finished: uncordon nuo's cordon, clear the protocol keys, Idle, release the slot. */
  | { type: 'complete'; node: string; reason: string }
  /** A ledger entry without a live attempt behind it (deleted node, or a node already Idle). */
  | { type: 'release'; node: string; reason: string }
  /** Remove a `nuo.dev/reboot-ok` nuo did not give (written by another client, or left behind). */
  | { type: 'revoke'; node: string; reason: string }
  /** A freshly needing node enters Pending. */
  | { type: 'pending'; node: string; reason: string; taint?: boolean }
  /** Ledger only: the node takes `after`'s slot once that attempt has ended. */
  | { type: 'promise'; node: string; after: string }
  /** Ledger only: withdraw the node's promise. */
  | { type: 'unpromise'; node: string; reason: string }
  /** Ledger only: a promised node already in an attempt (handed over at once) holds its slot since `since`. */
  | { type: 'claim'; node: string; since: string };

export interface Decision {
  actions: Action[];
  budget: {
    slots: number;
    used: number;
    eligible: number;
    holders: string[];
    unavailable: string[];
    /** Admissions in flight in this process, counted against the budget (Snapshot.admitting). */
    admitting: string[];
  };
  /** The earliest time a time-based condition (soak, timeout, backoff, spacing) changes a decision. */
  wakeAt?: number;
}

const ms = (d: Date | undefined) => d?.getTime() ?? Number.NaN;

/** Longest part of the agent's reason for a need that is repeated in the operator's own reason. */
const NEED_REASON_MAX = 200;

/**
 * Why the node needs a reboot at `t`, or undefined. A `reboot-requested` time still to come asks for a
 * reboot not before then (a request written ahead, like `at`): until then the node needs nothing.
 */
export function needsReboot(n: NodeView, t: number): string | undefined {
  if (n.rebootNeeded) {
    const why = n.rebootNeededReason;
    if (!why) return 'reboot needed';
    return `reboot needed: ${why.length > NEED_REASON_MAX ? `${why.slice(0, NEED_REASON_MAX)}…` : why}`;
  }
  if (n.rebootRequested && n.rebootRequested.getTime() <= t)
    return `reboot requested at ${n.rebootRequested.toISOString()}`;
  return undefined;
}

/** The reason of a node whose reboot was requested for a time still to come. */
const REQUESTED_LATER = 'reboot requested for ';

/** Phases in which the node's `nuo.dev/reboot-ok` is the operator's: granted, and not yet withdrawn. */
const GRANT_PHASES: ReadonlySet<Phase | undefined> = new Set([
  Phase.rebootGranted,
  Phase.rebooting,
  Phase.failed,
]);

/** When a node with `failures` consecutive failures may try again. */
export function retryAt(n: NodeView, c: Pick<DecideConfig, 'retryBackoffMs' | 'retryBackoffMaxMs'>): number {
  if (n.failures === 0 || !n.stateSince) return 0;
  const wait = Math.min(c.retryBackoffMs * 2 ** Math.min(n.failures - 1, 30), c.retryBackoffMaxMs);
  return ms(n.stateSince) + wait;
}

/**
 * Disrupted = holds a slot, or is NotReady, or is cordoned. A node nuo cordoned, or left in a phase of an
 * attempt, without a slot behind it (freed by hand, or any slip) counts too: fail closed.
 */
function unavailableWithoutSlot(n: NodeView): boolean {
  return !n.ready || n.unschedulable || n.cordonedByNuo || !outsideAttempt(n);
}

export const MALFORMED = 'ignored malformed annotations: ';

/**
 * The reason to record for a node outside an attempt, naming its malformed annotations (safety rule 8).
 * The problems are part of the one reason decide() writes: a second writer of state-reason (the
 * controller used to add them after each pass) and decide() overwrote each other on every pass, a write
 * storm for as long as the annotation stayed malformed.
 */
export function withProblems(n: NodeView, reason: string): string {
  if (n.problems.length === 0) return reason;
  const problems = `${MALFORMED}${n.problems.join('; ')}`;
  return reason ? `${reason}; ${problems}` : problems;
}

/**
 * Whether the health gate needs a node's DaemonSet pods read this pass: it is in AfterReboot, Ready, and
 * has soaked. Reading them earlier only to wait for the soak cost a pod list per soaking node per pass:
 * at 1,000 nodes a quarter of the slots soak, and those lists made every pass (and every grant) slower.
 */
export function healthDue(n: NodeView, c: Pick<DecideConfig, 'soakMs'>, now: Date): boolean {
  return n.state === Phase.afterReboot && n.ready && now.getTime() - ms(n.readySince) >= c.soakMs;
}

/**
 * How long before its soak ends a slot holder's DaemonSet pods are first read, and how often a reading
 * is renewed. Reading them only once the soak was over put a pod list and another pass between the soak's
 * end and the completion of every node (0.2–0.5 s a slot on a busy API server). The soak already proves
 * the node Ready throughout; the pods' reading is a point in time either way, now at most
 * HEALTH_LEAD_MS + HEALTH_REREAD_MS old at the completion.
 */
export const HEALTH_LEAD_MS = 2000;
export const HEALTH_REREAD_MS = 1000;

/** Whether a slot holder's DaemonSet pods are to be read (and a reading kept): its soak ends within HEALTH_LEAD_MS. */
export function healthGated(n: NodeView, c: Pick<DecideConfig, 'soakMs'>, now: Date): boolean {
  return healthDue(n, { soakMs: Math.max(0, c.soakMs - HEALTH_LEAD_MS) }, now);
}

/**
 * Whether a gated node's last reading is renewed: one that found pods not ready every HEALTH_REREAD_MS;
 * a healthy one when it would be older than HEALTH_LEAD_MS + HEALTH_REREAD_MS, which a node completing
 * at the end of its soak never reaches (one read a node), and one held longer (hooks, its agent) does.
 */
export function healthRereadDue(last: { healthy: boolean; ageMs: number }): boolean {
  return last.ageMs >= (last.healthy ? HEALTH_LEAD_MS : 0) + HEALTH_REREAD_MS;
}

/** Idle (or never touched) or Pending: phases that hold no slot. */
function outsideAttempt(n: NodeView): boolean {
  return n.state === undefined || n.state === Phase.idle || n.state === Phase.pending;
}

/** The hook annotations (keys) that do not read "true" on the node yet. */
export function missingHooks(n: NodeView, keys: string[]): string[] {
  return keys.filter((k) => n.annotations[k] !== 'true');
}

/** Why a node that needs a reboot may not start one now, the budget aside; undefined when it may. */
function cannotStart(n: NodeView, c: DecideConfig, t: number): string | undefined {
  if (n.paused) return 'paused';
  if (n.grantShown) return 'waiting: a reboot grant nuo did not give is being removed';
  if (c.paused) return 'waiting: nuo is paused cluster-wide';
  if (!n.ready) return 'waiting: node is NotReady';
  const retry = retryAt(n, c);
  if (t < retry) return `waiting: retry after ${new Date(retry).toISOString()} (${n.failures} failure(s))`;
  return undefined;
}

export function decide(snapshot: Snapshot, c: DecideConfig, now: Date): Decision {
  const t = now.getTime();
  const actions: Action[] = [];
  let wakeAt = Number.POSITIVE_INFINITY;
  /** Remembers a future moment at which waiting ends, so the controller looks again exactly then. */
  const wake = (at: number) => {
    if (at > t && at < wakeAt) wakeAt = at;
  };
  const byName = new Map(snapshot.nodes.map((n) => [n.name, n]));
  const eligible = snapshot.nodes.filter((n) => c.eligible(n.labels));
  const holders = new Set(Object.keys(snapshot.ledger.slots));
  // A grant only the operator writes, and only in the phases that carry one: anything else is removed
  // before the node's next step, so no client's `reboot-ok` outlives a pass (the agent ignores it anyway).
  for (const n of snapshot.nodes) {
    if (n.grantShown && !GRANT_PHASES.has(n.state)) {
      const value = n.annotations[Annotations.rebootOk] ?? '';
      actions.push({
        type: 'revoke',
        node: n.name,
        reason: `removed ${quote(Annotations.rebootOk, value)}: nuo gave no grant (phase ${n.state ?? 'none'})`,
      });
    }
  }

  // Ledger entries with nothing behind them: the node is gone, or came back to a phase without a slot
  // (a crash between "node Idle" and "release"). Freed only after this check, never guessed.
  for (const [name, slot] of Object.entries(snapshot.ledger.slots)) {
    const n = byName.get(name);
    if (!n) {
      actions.push({ type: 'release', node: name, reason: 'node no longer exists' });
      holders.delete(name);
    } else if (outsideAttempt(n)) {
      // Written since its admission: the attempt ended (completed or aborted) and the node is back.
      // Written before it (or never): the admission's node write is still to come — kept, and redone
      // below, while the node still needs a reboot.
      if (ms(n.stateSince) >= Date.parse(slot.since)) {
        actions.push({
          type: 'release',
          node: name,
          reason: `node is ${n.state ?? Phase.idle} after its attempt`,
        });
        holders.delete(name);
      } else if (!needsReboot(n, t)) {
        actions.push({ type: 'release', node: name, reason: 'admitted, but no longer needs a reboot' });
        holders.delete(name);
      }
    }
  }

  // Successors (Ledger.next). One already in an attempt (handed its slot at once) holds a slot, whatever
  // the ledger says of its predecessor. One whose predecessor is still in its attempt waits, promised,
  // off the waiting list, while it could still start; one whose predecessor's attempt has ended is
  // admitted first below. A withdrawn promise keeps its freed slot from anyone else this pass: the
  // operator may be handing it to the promised node at this very moment, on the ledger as last written.
  const promised = new Map<string, string>();
  const successors = new Set<string>();
  let reserved = 0;
  const inFlight = new Set([...snapshot.admitting].filter((name) => !holders.has(name) && byName.has(name)));
  for (const [name, s] of Object.entries(snapshot.ledger.next ?? {})) {
    const n = byName.get(name);
    if (holders.has(name)) {
      actions.push({ type: 'unpromise', node: name, reason: 'holds a slot already' });
      continue;
    }
    if (inFlight.has(name)) continue;
    if (n && !outsideAttempt(n)) {
      actions.push({ type: 'claim', node: name, since: s.since });
      holders.add(name);
      continue;
    }
    const why = !n
      ? 'node no longer exists'
      : !c.eligible(n.labels) || !needsReboot(n, t)
        ? 'no longer needs a reboot here'
        : (cannotStart(n, c, t) ?? (c.minGrantSpacingMs > 0 ? 'grants are spaced' : undefined));
    if (why) {
      actions.push({ type: 'unpromise', node: name, reason: why });
      if (!holders.has(s.after)) reserved++;
    } else if (holders.has(s.after)) promised.set(name, s.after);
    else successors.add(name);
  }

  const unavailable = eligible
    .filter((n) => !holders.has(n.name) && !inFlight.has(n.name) && unavailableWithoutSlot(n))
    .map((n) => n.name);
  const slots = budgetSlots(c.maxUnavailable, eligible.length);
  let used = holders.size + unavailable.length + reserved + inFlight.size;

  // Nodes in an attempt: move each along its phases.
  for (const name of holders) {
    const n = byName.get(name) as NodeView;
    if (n.paused) {
      if (n.stateReason !== 'paused: holds its slot, no further action') {
        actions.push({ type: 'explain', node: name, reason: 'paused: holds its slot, no further action' });
      }
      continue;
    }
    const since = ms(n.stateSince);
    const age = Number.isNaN(since) ? 0 : t - since;
    const timeoutAt = (timeoutMs: number) => wake(since + timeoutMs + 1);
    switch (n.state) {
      case undefined:
      case Phase.idle:
      case Phase.pending:
        // Admitted in the ledger but the node write did not happen (crash between the two): redo it.
        actions.push({
          type: 'transition',
          node: name,
          to: Phase.beforeReboot,
          reason: `${needsReboot(n, t) ?? 'holds a slot'} (its admission's node write redone)`,
        });
        break;
      case Phase.beforeReboot: {
        const missing = missingHooks(n, c.beforeRebootAnnotations);
        if (missing.length === 0) {
          actions.push({
            type: 'transition',
            node: name,
            to: Phase.draining,
            reason: 'before-reboot hooks done; draining',
          });
        } else if (age > c.drainTimeoutMs) {
          actions.push({
            type: 'abort',
            node: name,
            reason: `before-reboot hooks not done in time: ${missing.join(', ')}`,
          });
        } else {
          timeoutAt(c.drainTimeoutMs);
          const reason = `waiting for before-reboot hooks: ${missing.join(', ')}`;
          if (n.stateReason !== reason) actions.push({ type: 'explain', node: name, reason });
        }
        break;
      }
      case Phase.draining:
        if (!snapshot.draining.has(name)) actions.push({ type: 'drain', node: name });
        break;
      case Phase.rebootGranted:
        if (n.rebootInProgress && n.bootIdBefore && n.bootId !== n.bootIdBefore) {
          actions.push({
            type: 'transition',
            node: name,
            to: Phase.afterReboot,
            reason: 'rebooted: boot ID changed',
            clearGrant: true,
          });
        } else if (n.rebootInProgress) {
          actions.push({
            type: 'transition',
            node: name,
            to: Phase.rebooting,
            reason: 'agent is rebooting the node',
          });
        } else if (age > c.rebootTimeoutMs) {
          actions.push({
            type: 'transition',
            node: name,
            to: Phase.failed,
            reason: `the agent did not start the reboot within ${c.rebootTimeoutMs / 1000}s of the grant`,
            failed: true,
          });
        } else {
          timeoutAt(c.rebootTimeoutMs);
        }
        break;
      case Phase.rebooting:
        if (n.bootIdBefore && n.bootId !== n.bootIdBefore) {
          actions.push({
            type: 'transition',
            node: name,
            to: Phase.afterReboot,
            reason: 'rebooted: boot ID changed',
            clearGrant: true,
          });
        } else if (age > c.rebootTimeoutMs) {
          actions.push({
            type: 'transition',
            node: name,
            to: Phase.failed,
            reason: `no reboot: boot ID unchanged ${c.rebootTimeoutMs / 1000}s after the agent started it`,
            failed: true,
          });
        } else {
          timeoutAt(c.rebootTimeoutMs);
        }
        break;
      case Phase.afterReboot: {
        if (!n.ready) {
          if (age > c.returnTimeoutMs) {
            actions.push({
              type: 'transition',
              node: name,
              to: Phase.failed,
              reason: `not Ready within ${c.returnTimeoutMs / 1000}s of the reboot`,
              failed: true,
            });
          } else {
            timeoutAt(c.returnTimeoutMs);
            if (n.stateReason !== 'waiting for the node to become Ready') {
              actions.push({ type: 'explain', node: name, reason: 'waiting for the node to become Ready' });
            }
          }
          break;
        }
        const waits: string[] = [];
        const missing = missingHooks(n, c.afterRebootAnnotations);
        if (missing.length > 0) waits.push(`after-reboot hooks: ${missing.join(', ')}`);
        const readyFor = t - ms(n.readySince);
        wake(ms(n.readySince) + c.soakMs);
        if (!(readyFor >= c.soakMs))
          waits.push(`soak (Ready ${Math.max(0, Math.floor(readyFor / 1000))}s of ${c.soakMs / 1000}s)`);
        // DaemonSet pods are read only once the soak is over (see healthDue): until then the soak waits.
        const health = snapshot.health.get(name);
        const due = healthDue(n, c, now);
        if (!health?.daemonSetPodsReady && due)
          waits.push(`DaemonSet pods: ${health?.detail ?? 'not checked yet'}`);
        if (n.rebootInProgress) waits.push('the agent to report after boot');
        if (waits.length === 0) {
          actions.push({ type: 'complete', node: name, reason: 'rebooted and healthy' });
        } else if (!(due && !health && waits.length === 1)) {
          // Nothing is written while only the pods' first read is awaited: most nodes pass it, and
          // their next write is the completion. The soak countdown changes every second: only the
          // first entry into waiting is written.
          const reason = `health gate: waiting for ${waits.map((w) => w.replace(/ \(Ready \d+s of/, ' (of')).join('; ')}`;
          if (n.stateReason !== reason) actions.push({ type: 'explain', node: name, reason });
        }
        break;
      }
      case Phase.failed:
        // Recover open: a node that came back after all resumes at the health gate; else fail closed.
        if (n.bootIdBefore && n.bootId !== n.bootIdBefore && n.ready) {
          actions.push({
            type: 'transition',
            node: name,
            to: Phase.afterReboot,
            reason: 'came back after the timeout: boot ID changed',
            clearGrant: true,
          });
        }
        break;
    }
  }

  // Nodes not in an attempt that need a reboot: admit the longest-waiting while slots remain — Pending
  // ones by age, then Idle ones at once (a free slot is not left idle for a pass that only writes
  // Pending); the rest wait in Pending.
  const waiting: NodeView[] = [];
  for (const n of eligible) {
    if (holders.has(n.name) || inFlight.has(n.name)) continue;
    const need = needsReboot(n, t);
    if (!need) {
      const later = n.rebootRequested?.toISOString();
      if (n.rebootRequested) wake(n.rebootRequested.getTime());
      if ((n.state !== undefined && n.state !== Phase.idle) || n.ownKeysMalformed) {
        // Out of an attempt, or nuo's own keys overwritten with nonsense: written Idle afresh, the reason
        // naming what was found.
        const reason = withProblems(n, 'no reboot needed');
        actions.push({ type: 'transition', node: n.name, to: Phase.idle, reason });
      } else {
        // Idle: name a request for later and malformed annotations; withdraw both once they are gone.
        const reason = withProblems(n, later ? `${REQUESTED_LATER}${later}: not before then` : '');
        const stale = n.stateReason?.startsWith(MALFORMED) || n.stateReason?.startsWith(REQUESTED_LATER);
        if (reason ? n.stateReason !== reason : stale) {
          actions.push({ type: 'explain', node: n.name, reason: reason || 'no reboot needed' });
        }
      }
      continue;
    }
    if (!outsideAttempt(n)) {
      // A phase of an attempt without a slot behind it (its slot was freed by hand, say): start over.
      actions.push({ type: 'pending', node: n.name, reason: withProblems(n, need) });
      continue;
    }
    if (!promised.has(n.name)) waiting.push(n);
  }
  const byNodeName = (a: NodeView, b: NodeView) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  waiting.sort((a, b) => {
    const as = successors.has(a.name);
    if (as !== successors.has(b.name)) return as ? -1 : 1;
    const ap = a.state === Phase.pending;
    if (ap !== (b.state === Phase.pending)) return ap ? -1 : 1;
    return ap ? ms(a.stateSince) - ms(b.stateSince) || byNodeName(a, b) : byNodeName(a, b);
  });
  const lastGrant = snapshot.ledger.lastGrant
    ? Date.parse(snapshot.ledger.lastGrant)
    : Number.NEGATIVE_INFINITY;
  let admittedThisPass = 0;
  /** Waiting in Pending for nothing but a slot: the candidates for a promise, in admission order. */
  const nextInLine: NodeView[] = [];
  for (const n of waiting) {
    wake(retryAt(n, c));
    if (c.minGrantSpacingMs > 0) wake(lastGrant + c.minGrantSpacingMs);
    let wait = cannotStart(n, c, t);
    if (!wait && used >= slots) {
      wait = `waiting for a free slot (maxUnavailable ${slots})`;
      if (n.state === Phase.pending && !successors.has(n.name)) nextInLine.push(n);
    } else if (
      !wait &&
      c.minGrantSpacingMs > 0 &&
      (admittedThisPass > 0 || t - lastGrant < c.minGrantSpacingMs)
    ) {
      wait = `waiting: minimum spacing between grants (${c.minGrantSpacingMs / 1000}s)`;
    }
    if (wait) {
      if (successors.has(n.name)) actions.push({ type: 'unpromise', node: n.name, reason: wait });
      const reason = withProblems(n, wait);
      if (n.state !== Phase.pending) actions.push({ type: 'pending', node: n.name, reason });
      else if (n.stateReason !== reason) actions.push({ type: 'explain', node: n.name, reason });
      continue;
    }
    actions.push({ type: 'admit', node: n.name, reason: needsReboot(n, t) ?? 'admitted' });
    // A node cordoned by someone else already counts as unavailable; admitting it uses no new slot.
    if (!unavailableWithoutSlot(n)) used++;
    admittedThisPass++;
  }

  // Promises: holders soaking after their reboot (their attempt ends within the soak) each get the next
  // node in line that waits for nothing but a slot, the soonest to end first.
  if (c.minGrantSpacingMs === 0 && nextInLine.length > 0) {
    const taken = new Set(promised.values());
    const ending = [...holders]
      .map((name) => byName.get(name) as NodeView)
      .filter((n) => n.state === Phase.afterReboot && n.ready && !n.paused && !taken.has(n.name))
      .sort((a, b) => ms(a.readySince) - ms(b.readySince) || byNodeName(a, b));
    for (let i = 0; i < Math.min(ending.length, nextInLine.length); i++) {
      const n = nextInLine[i] as NodeView;
      actions.push({ type: 'promise', node: n.name, after: (ending[i] as NodeView).name });
    }
  }

  // The reboot-pending taint: on every node outside an attempt that waits for a reboot, on no other node
  // outside one (nodes in an attempt keep what they had until the write that ends it removes it). It
  // rides on the node's write of this pass where there is one.
  // (Indexed by node: a scan of the actions per node was quadratic at the start of a 5,000-node rollout.)
  const admitted = new Set<string>();
  const writes = new Map<string, Extract<Action, { type: 'pending' | 'explain' | 'transition' }>>();
  for (const a of actions) {
    if (a.type === 'admit') admitted.add(a.node);
    else if (a.type === 'pending' || a.type === 'explain' || a.type === 'transition') writes.set(a.node, a);
  }
  for (const n of snapshot.nodes) {
    if (holders.has(n.name) || admitted.has(n.name) || inFlight.has(n.name)) continue;
    const want = c.pendingTaint && !n.paused && c.eligible(n.labels) && needsReboot(n, t) !== undefined;
    if (n.pendingTaint === want) continue;
    const write = writes.get(n.name);
    if (write) write.taint = want;
    else actions.push({ type: 'taint', node: n.name, present: want });
  }

  return {
    actions,
    budget: {
      slots,
      used,
      eligible: eligible.length,
      holders: [...holders],
      unavailable,
      admitting: [...inFlight],
    },
    wakeAt: Number.isFinite(wakeAt) ? wakeAt : undefined,
  };
}

export { SLOT_PHASES };
