/**
 * Why a pool admits nothing now: its holds (paused, its rollout, the circuit breaker, its windows, its
 * blockers and health checks, kured's lock, CLUO's or FLUO's own operator running), each a pure reading
 * of the policy and what its blockers answered last, in the order policyHold() asks them.
 */
import { type CoreosProtocol, isCoreosProtocol, PROTOCOL_OPERATOR } from '../../api/keys.ts';
import { type CalendarClock, REAL_CLOCK, windowStateOn } from '../../policy/calendar-clock.ts';
import { firstFailing, type HealthReading } from '../../policy/health-checks.ts';
import type { ResolvedPolicy } from '../../policy/resolve.ts';
import { budgetSlots } from '../decide/budget.ts';
import type { ChecksReading } from '../decide/health-gate.ts';
import type { NodeView } from '../decide/node-view.ts';
import type { Wait } from '../decide/wait.ts';
import type { RolloutHold } from '../decide/waves.ts';
import { type KuredView, kuredHold } from '../protocols/kured-lock.ts';

/** Why a pool admits nothing, as its policy's Blocked condition names it. */
export type HoldCode =
  | 'Paused'
  | 'CircuitOpen'
  | 'OutsideWindow'
  | 'AlertFiring'
  | 'PrometheusUnavailable'
  | 'PodBlocker'
  | 'HealthCheck'
  | 'InvalidSpec'
  | 'PolicyGone'
  | 'PoliciesNotRead'
  | 'Superseded'
  | 'KuredLock'
  | 'KuredLockUnknown'
  | 'ForeignOperator'
  | RolloutHold['code'];

/**
 * What nuo saw of CLUO's or FLUO's own update-operator (protocol-operators.ts): `standDown` says why nuo
 * leaves the protocol's pools alone (it runs, or nuo could not tell), absent when it does not run.
 */
export interface OperatorSighting {
  standDown?: string;
}

/** Holds that stand the pool down entirely: not even its attempts in progress are stepped. */
export const STAND_DOWN: ReadonlySet<HoldCode> = new Set(['ForeignOperator']);

/** A blocker's verdict for a pool (Prometheus): blocked or clear, and why; none yet = not checked. */
export interface BlockerVerdict {
  blocked: boolean;
  reason: string;
  /** Blocked because Prometheus could not be asked (fail closed), not because an alert fires. */
  unavailable?: boolean;
}

/** A running pod one of a policy's pod blockers (`blockers.pods[blocker]`) matches. */
export interface BlockingPod {
  namespace: string;
  name: string;
  node: string;
  blocker: number;
}

/**
 * A reading older than its policy's `readings.maxAge` when a pass reads it (ages on the operator's
 * monotonic clock, from when it took the reading): it holds, as a failed one does (fail closed).
 */
export interface ExpiredReading {
  expired: { ageMs: number; maxAgeMs: number };
}

/** What a policy's blockers answered last (blocker-watch.ts); a missing part is not asked yet. */
export interface PolicyBlockers {
  prometheus?: BlockerVerdict | ExpiredReading;
  pods?: BlockingPod[] | { error: string } | ExpiredReading;
  /** The health checks' last reading. */
  health?: HealthReading | ExpiredReading;
  /** kured's lock as last read, for a policy with coexistence.kured (kured-keeper.ts). */
  kured?: KuredView | { error: string };
}

export interface PoolHold extends Wait {
  code: HoldCode;
}

/** The parts of PolicyBlockers that are readings with an age. */
export type ReadingPart = 'prometheus' | 'pods' | 'health';

/** When the operator took each reading, on its monotonic clock (performance.now()). */
export type ReadingTimes = Partial<Record<ReadingPart, number>>;

/** Each reading older than `maxAgeMs` at `now` replaced by how old it is; all times monotonic. Pure. */
export function expireReadings(
  b: PolicyBlockers,
  taken: ReadingTimes,
  maxAgeMs: number,
  now: number,
): PolicyBlockers {
  const out: PolicyBlockers = { ...b };
  for (const part of ['prometheus', 'pods', 'health'] as const) {
    const at = taken[part];
    if (out[part] === undefined || at === undefined || now - at <= maxAgeMs) continue;
    out[part] = { expired: { ageMs: now - at, maxAgeMs } };
  }
  return out;
}

const isExpired = (v: object | undefined): v is ExpiredReading => v !== undefined && 'expired' in v;

const seconds = (ms: number) => `${Math.floor(ms / 1000)} s`;

/**
 * The hold of an expired reading: its reason names maxAge only (a node's reason must not change with
 * every pass), its detail how old the reading is (the policy's condition, nuo policy explain).
 */
function tooOld(code: HoldCode, what: string, e: ExpiredReading): PoolHold {
  return {
    code,
    reason: `waiting: the ${what} reading is too old (readings.maxAge ${seconds(e.expired.maxAgeMs)})`,
    detail: `the reading is ${seconds(e.expired.ageMs)} old, older than maxAge ${seconds(e.expired.maxAgeMs)}; a new one is taken every interval, each read failing after readings.timeout`,
  };
}

/**
 * Why a valid policy's pool admits nothing now, if it does not, in this order: paused; its rollout
 * (halted by its failure budget, or pausing between waves); the circuit
 * breaker (more of the pool NotReady than it allows); outside its windows; a blocker (Prometheus not
 * asked yet, unreachable or answering an alert: fail closed); a health check failing or not evaluated.
 */
export function policyHold(
  p: ResolvedPolicy,
  nodes: readonly NodeView[],
  now: Date,
  blockers?: PolicyBlockers,
  rollout?: RolloutHold,
  clock: CalendarClock = REAL_CLOCK,
): PoolHold | undefined {
  if (p.paused) return { code: 'Paused', reason: `waiting: UpdatePolicy ${p.name} is paused` };
  if (rollout) return rollout;
  const circuit = circuitHold(p, nodes);
  if (circuit) return circuit;
  const window = windowStateOn(clock, p.windows, now);
  if (!window.open) {
    return {
      code: 'OutsideWindow',
      reason: `waiting: ${window.reason}`,
      ...(window.changesAt ? { until: window.changesAt.getTime() } : {}),
    };
  }
  return (
    prometheusHold(p, blockers?.prometheus) ??
    podHold(p, nodes, blockers?.pods) ??
    healthHold(p, blockers?.health) ??
    kuredPoolHold(p, blockers?.kured)
  );
}

/** A health check failing, or none evaluated yet, holds the pool (fail closed). */
function healthHold(p: ResolvedPolicy, reading: PolicyBlockers['health']): PoolHold | undefined {
  if (p.healthChecks.length > 0 && isExpired(reading)) return tooOld('HealthCheck', 'health checks', reading);
  const gate = healthGate(p, reading);
  if (!gate) return undefined;
  if (gate.at === undefined)
    return { code: 'HealthCheck', reason: 'waiting: the health checks are not evaluated yet' };
  if (!gate.failing) return undefined;
  return {
    code: 'HealthCheck',
    reason: `waiting: health check ${gate.failing.name} fails`,
    detail: gate.failing.reading,
  };
}

/** What the health gate of a policy's finished nodes reads: nothing when it has no health checks. */
export function healthGate(p: ResolvedPolicy, reading: PolicyBlockers['health']): ChecksReading | undefined {
  if (p.healthChecks.length === 0) return undefined;
  if (!reading) return {};
  if (isExpired(reading))
    return { expired: `their reading is too old (readings.maxAge ${seconds(reading.expired.maxAgeMs)})` };
  const bad = firstFailing(reading);
  return { at: reading.at, ...(bad ? { failing: bad } : {}) };
}

function kuredPoolHold(p: ResolvedPolicy, view: PolicyBlockers['kured']): PoolHold | undefined {
  const wait = p.kured && kuredHold(p.kured, view);
  if (!wait) return undefined;
  // Taking turns with kured is the migration going as planned; a lock nuo cannot read is not.
  return { ...wait, code: view === undefined || 'error' in view ? 'KuredLockUnknown' : 'KuredLock' };
}

function prometheusHold(p: ResolvedPolicy, verdict: PolicyBlockers['prometheus']): PoolHold | undefined {
  if (!p.prometheus) return undefined;
  if (!verdict) return { code: 'PrometheusUnavailable', reason: 'waiting: Prometheus not asked yet' };
  if (isExpired(verdict)) return tooOld('PrometheusUnavailable', 'Prometheus', verdict);
  if (!verdict.blocked) return undefined;
  return {
    code: verdict.unavailable ? 'PrometheusUnavailable' : 'AlertFiring',
    reason: `waiting: ${verdict.reason}`,
  };
}

/**
 * A running pod a pool-scoped pod blocker matches, on any node of the pool, holds it; not knowing holds
 * it whatever the scope (a node-scoped blocker cannot say which nodes are free).
 */
function podHold(
  p: ResolvedPolicy,
  nodes: readonly NodeView[],
  pods: PolicyBlockers['pods'],
): PoolHold | undefined {
  if (p.podBlockers.length === 0) return undefined;
  if (!pods) return { code: 'PodBlocker', reason: 'waiting: the pod blockers are not read yet' };
  if (isExpired(pods)) return tooOld('PodBlocker', 'pod blockers', pods);
  if ('error' in pods) return { code: 'PodBlocker', reason: `waiting: ${pods.error}` };
  const inPool = new Set(nodes.map((n) => n.name));
  const blocking = pods.filter((pod) => inPool.has(pod.node) && p.podBlockers[pod.blocker]?.scope !== 'Node');
  if (blocking.length === 0) return undefined;
  const named = blocking
    .slice(0, 3)
    .map((pod) => `${pod.namespace}/${pod.name} on ${pod.node} (blockers.pods[${pod.blocker}])`)
    .join(', ');
  const more = blocking.length > 3 ? ` and ${blocking.length - 3} more` : '';
  return { code: 'PodBlocker', reason: `waiting: pod ${named}${more} is running` };
}

/** The nodes a node-scoped pod blocker's running pod holds, each with the pods that hold it. */
export function nodeBlocks(p: ResolvedPolicy, pods: PolicyBlockers['pods']): Map<string, Wait> {
  const held = new Map<string, string[]>();
  // Not knowing holds the whole pool (podHold).
  if (!pods || 'error' in pods || isExpired(pods)) return new Map();
  for (const pod of pods) {
    if (p.podBlockers[pod.blocker]?.scope !== 'Node') continue;
    held.set(pod.node, [
      ...(held.get(pod.node) ?? []),
      `${pod.namespace}/${pod.name} (blockers.pods[${pod.blocker}])`,
    ]);
  }
  return new Map(
    [...held].map(([node, names]) => [node, { reason: `waiting: pod ${names.join(', ')} is running on it` }]),
  );
}

/** More of the pool NotReady than `circuitBreaker.maxNotReady` allows: something is wrong, admit nothing. */
function circuitHold(p: ResolvedPolicy, nodes: readonly NodeView[]): PoolHold | undefined {
  if (!p.circuitBreaker) return undefined;
  const notReady = nodes.filter((n) => !n.ready).length;
  const allowed = budgetSlots(p.circuitBreaker, nodes.length);
  if (notReady <= allowed) return undefined;
  return {
    code: 'CircuitOpen',
    reason: `waiting: circuit open: ${notReady} of ${nodes.length} nodes NotReady (more than ${allowed})`,
  };
}

/**
 * A pool whose agents speak CLUO's or FLUO's protocol while that project's own update-operator runs (or
 * before nuo has looked): two operators granting the same agents' reboots would each spend a budget the
 * other does not see, so nuo stands down and says why.
 */
export function foreignOperatorHold(
  p: ResolvedPolicy,
  sighting: (protocol: CoreosProtocol) => OperatorSighting | undefined,
): PoolHold | undefined {
  if (!isCoreosProtocol(p.agentProtocol)) return undefined;
  const seen = sighting(p.agentProtocol);
  if (!seen)
    return {
      code: 'ForeignOperator',
      reason: `waiting: not looked yet whether ${PROTOCOL_OPERATOR[p.agentProtocol].what} runs; no node of this pool is touched until then`,
    };
  if (seen.standDown === undefined) return undefined;
  return {
    code: 'ForeignOperator',
    reason: `not managed: ${seen.standDown}; nuo touches no node of this pool until it is gone`,
  };
}
