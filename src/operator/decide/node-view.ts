/**
 * A Node read through the nuo protocol. Malformed values never throw: each becomes a `problem` (shown on
 * the node and in status) and the safe reading (paused when unsure; not needed; no request).
 */
import type { V1Node, V1Taint } from '@kubernetes/client-node';
import {
  Annotations,
  AutoscalerTaints,
  type ForeignProtocol,
  Labels,
  LIFECYCLE_CONDITIONS,
  Taints,
} from '../../api/keys.ts';
import { isPhase, type Phase } from '../../api/phases.ts';
import type { PlanWork } from './plan-work.ts';
import type { PolicyReading } from './policy-reading.ts';

/** A Node condition as decisions read it: no heartbeat, so a kubelet's status update changes nothing. */
export interface NodeCondition {
  type: string;
  status: string;
  /** Its lastTransitionTime: since when it holds this status. */
  since?: Date;
}

export interface NodeView {
  name: string;
  resourceVersion: string;
  labels: Record<string, string>;
  ready: boolean;
  /** When the Ready condition last changed (for the soak). */
  readySince?: Date;
  /**
   * The Ready condition's lastHeartbeatTime as the kubelet wrote it: compared only with itself, to tell
   * that the kubelet posted its status again (boot-witness.ts), never with a clock.
   */
  heartbeat?: string;
  /**
   * Set by boot-witness.ts: the kubelet posted the node's status since this leader saw the agent withdraw
   * its need after a grant, and still with the boot ID the grant was given on: the node did not reboot.
   */
  bootConfirmed?: true;
  unschedulable: boolean;
  cordonedByNuo: boolean;
  /** The node's taints as read (a taint change is a conditional write of the whole list). */
  taints: V1Taint[];
  /** How many of nuo's PreferNoSchedule taints for nodes waiting for a reboot it carries. */
  pendingTaints: number;
  bootId: string;
  rebootNeeded: boolean;
  rebootNeededReason?: string;
  rebootRequested?: Date;
  /**
   * The node's conditions but Ready (read in `ready`) and nuo's own lifecycle ones (its writes must not
   * make a pass of their own), for a policy's remediation.
   */
  conditions: NodeCondition[];
  /**
   * `nuo.dev/boot-time`: when the node's current boot began, as its agent reports it; only while the
   * boot ID it was written for (`boot-time-boot-id`) is the one the kubelet posts.
   */
  bootTime?: Date;
  /** `nuo.dev/remediated-at`: when nuo last admitted the node for a remediation. */
  remediatedAt?: Date;
  /**
   * What its pool's policy asks of it (a remediation, a refresh: policy-need.ts), set for each pass from
   * the policy (pool-plan.ts); absent when the policy asks for neither.
   */
  policyAsks?: PolicyReading;
  paused: boolean;
  /** A person's request to end the node's Failed attempt (`nuo release`): the Failed phase it names. */
  release?: ReleaseRequest;
  state?: Phase;
  stateReason?: string;
  /**
   * When the phase was entered. In the views decide() sees (observed-clock.ts), when this leader first
   * saw it, on its own clock; as written (`nuo.dev/state-since`), another leader's clock.
   */
  stateSince?: Date;
  /** `nuo.dev/attempt`: the attempt the node was last admitted in (slot.ts attemptId). */
  attempt?: string;
  /** `nuo.dev/reboot-ok` is on the node, whoever wrote it (decide() removes a grant nuo did not give). */
  grantShown: boolean;
  rebootInProgress: boolean;
  bootIdBefore?: string;
  failures: number;
  /** Consecutive attempts whose drain failed (onFailure Skip's count; a malformed count reads as 0). */
  drainFailures: number;
  /** Completed reboots in a row that left the need in place (a malformed count reads as 0). */
  ineffectiveReboots: number;
  annotations: Record<string, string>;
  /** One of the operator's own keys (state, state-since, failures) holds a value it never writes. */
  ownKeysMalformed: boolean;
  /** `nuo.dev/state` holds something that is not a phase (another client's write): `state` is undefined. */
  stateMalformed: boolean;
  hasBeforeRebootLabel: boolean;
  hasAfterRebootLabel: boolean;
  /** Which autoscaler is removing the node (its NoSchedule taint, AutoscalerTaints), if one is. */
  removedBy?: string;
  /** Labelled skipped: its drains failed too often under onFailure Skip. */
  skipped: boolean;
  /** `nuo.dev/plan`: the Plan whose attempt holds the node's slot, as written with the admission. */
  plan?: string;
  /**
   * The Plan the node needs next (its label differs from the Plan's hash), set for each pass from the
   * Plans (decider.ts); absent when it needs none.
   */
  work?: PlanWork;
  /** A Plan's Job on the node has not finished: the node counts as disrupted, with a slot or without. */
  planJob?: boolean;
  /**
   * The protocol of another project's agent the node's pool speaks (agent-protocol.ts read the node
   * through it); absent: nuo's own.
   */
  protocol?: ForeignProtocol;
  problems: string[];
}

/** Longest part of a value quoted in a problem: the reason must fit the annotation it is written to. */
export const QUOTE_MAX = 64;

/** `key="value"`, a long value cut to its first QUOTE_MAX characters with its full length. */
export function quote(key: string, value: string): string {
  if (value.length <= QUOTE_MAX) return `${key}=${JSON.stringify(value)}`;
  return `${key}=${JSON.stringify(value.slice(0, QUOTE_MAX))}… (${value.length} characters)`;
}

function time(value: string | undefined, key: string, problems: string[]): Date | undefined {
  if (value === undefined) return undefined;
  const t = new Date(value);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(value) || Number.isNaN(t.getTime())) {
    problems.push(`${quote(key, value)} is not an RFC 3339 time; ignored`);
    return undefined;
  }
  return t;
}

/** `{ [field]: time }` when the key holds one, else nothing (a malformed value is a problem). */
function optionalTime<K extends string>(
  field: K,
  value: string | undefined,
  key: string,
  problems: string[],
): Partial<Record<K, Date>> {
  const t = time(value, key, problems);
  return (t ? { [field]: t } : {}) as Partial<Record<K, Date>>;
}

function bool(value: string | undefined, key: string, problems: string[], whenMalformed: boolean): boolean {
  if (value === undefined || value === 'false') return false;
  if (value === 'true') return true;
  problems.push(`${quote(key, value)} must be "true" or "false"; read as ${whenMalformed}`);
  return whenMalformed;
}

export function viewNode(node: V1Node): NodeView {
  const a = node.metadata?.annotations ?? {};
  const labels = node.metadata?.labels ?? {};
  const problems: string[] = [];
  const readyCondition = node.status?.conditions?.find((c) => c.type === 'Ready');
  const stateRaw = a[Annotations.state];
  let state: Phase | undefined;
  if (isPhase(stateRaw)) state = stateRaw;
  else if (stateRaw !== undefined)
    problems.push(`${quote(Annotations.state, stateRaw)} is not a known phase`);
  const failures = count(a, Annotations.failures, problems);
  const drainFailures = count(a, Annotations.drainFailures, problems);
  const ineffectiveReboots = count(a, Annotations.ineffectiveReboots, problems);
  const lastTransition = readyCondition?.lastTransitionTime;
  const stateSinceProblems: string[] = [];
  const stateSince = time(a[Annotations.stateSince], Annotations.stateSince, stateSinceProblems);
  const ownKeysMalformed = problems.length > 0 || stateSinceProblems.length > 0;
  problems.push(...stateSinceProblems);
  return {
    name: node.metadata?.name ?? '',
    resourceVersion: node.metadata?.resourceVersion ?? '',
    labels,
    ready: readyCondition?.status === 'True',
    readySince: lastTransition ? new Date(lastTransition) : undefined,
    ...heartbeatOf(readyCondition?.lastHeartbeatTime),
    unschedulable: node.spec?.unschedulable === true,
    cordonedByNuo: a[Annotations.cordonedByNuo] === 'true',
    taints: node.spec?.taints ?? [],
    pendingTaints: (node.spec?.taints ?? []).filter((t) => isPendingTaint(t.key)).length,
    bootId: node.status?.nodeInfo?.bootID ?? '',
    rebootNeeded: bool(a[Annotations.rebootNeeded], Annotations.rebootNeeded, problems, false),
    rebootNeededReason: a[Annotations.rebootNeededReason],
    rebootRequested: time(a[Annotations.rebootRequested], Annotations.rebootRequested, problems),
    conditions: (node.status?.conditions ?? [])
      .filter((c) => c.type !== 'Ready' && !(LIFECYCLE_CONDITIONS as readonly string[]).includes(c.type))
      .map((c) => ({
        type: c.type,
        status: c.status,
        ...(c.lastTransitionTime ? { since: new Date(c.lastTransitionTime) } : {}),
      })),
    ...(a[Annotations.bootTimeBootId] === (node.status?.nodeInfo?.bootID ?? '')
      ? optionalTime('bootTime', a[Annotations.bootTime], Annotations.bootTime, problems)
      : {}),
    ...optionalTime('remediatedAt', a[Annotations.remediatedAt], Annotations.remediatedAt, problems),
    // A person who wrote anything into paused meant to pause: fail closed.
    paused: bool(a[Annotations.paused], Annotations.paused, problems, true),
    ...releaseOf(a[Annotations.release], problems),
    state,
    stateReason: a[Annotations.stateReason],
    stateSince,
    ...(a[Annotations.attempt] === undefined ? {} : { attempt: a[Annotations.attempt] }),
    grantShown: a[Annotations.rebootOk] !== undefined,
    rebootInProgress: bool(a[Annotations.rebootInProgress], Annotations.rebootInProgress, problems, true),
    bootIdBefore: a[Annotations.bootIdBefore],
    failures,
    drainFailures,
    ineffectiveReboots,
    annotations: a,
    ownKeysMalformed,
    stateMalformed: stateRaw !== undefined && state === undefined,
    hasBeforeRebootLabel: labels[Labels.beforeReboot] === 'true',
    hasAfterRebootLabel: labels[Labels.afterReboot] === 'true',
    skipped: labels[Labels.skipped] === 'true',
    ...removal(node.spec?.taints ?? []),
    ...(a[Annotations.plan] === undefined ? {} : { plan: a[Annotations.plan] }),
    problems,
  };
}

/**
 * What the operator keeps of a Node in its cache: everything but managedFields and the image list, which
 * it never reads and which make up most of a real node object (a node with 50 images carries ~10 KiB of
 * them), so the cache of a large cluster stays small.
 */
export function slimNode(node: V1Node): V1Node {
  if (node.metadata) node.metadata.managedFields = undefined;
  if (node.status) node.status.images = undefined;
  return node;
}

/** One of nuo's reboot-pending taints: `nuo.dev/reboot-pending`, or `nuo.dev/reboot-pending-N` (N ≥ 2). */
export function isPendingTaint(key: string): boolean {
  if (key === Taints.rebootPending) return true;
  return (
    key.startsWith(Taints.rebootPendingMore) && /^[1-9]\d*$/.test(key.slice(Taints.rebootPendingMore.length))
  );
}

/**
 * The node's taints with `count` reboot-pending taints of nuo's (0: none), every other taint as it was:
 * written whole (a merge patch replaces a list) in a write conditional on the resourceVersion they were
 * read at.
 */
export function withPendingTaints(taints: readonly V1Taint[], count: number): V1Taint[] {
  const others = taints.filter((t) => !isPendingTaint(t.key));
  const key = (i: number) => (i === 1 ? Taints.rebootPending : `${Taints.rebootPendingMore}${i}`);
  const ours = Array.from({ length: count }, (_, i) => ({ key: key(i + 1), effect: 'PreferNoSchedule' }));
  return [...others, ...ours];
}

/**
 * A count as nuo writes one: digits, within Number.MAX_SAFE_INTEGER (past it, a value would read as a
 * rounded number nuo never wrote).
 */
export const isCount = (raw: string) => /^\d+$/.test(raw) && Number.isSafeInteger(Number(raw));

/** One of nuo's counts on the node; anything but a non-negative integer reads as 0, with a problem. */
function count(a: Record<string, string>, key: string, problems: string[]): number {
  const raw = a[key];
  if (raw === undefined) return 0;
  if (isCount(raw)) return Number(raw);
  problems.push(`${quote(key, raw)} is not a count; read as 0`);
  return 0;
}

/** A heartbeat time as read (a Date from the client, or its text), only ever compared with itself. */
function heartbeatOf(value: Date | string | undefined): { heartbeat?: string } {
  if (value === undefined) return {};
  return { heartbeat: value instanceof Date ? String(value.getTime()) : String(value) };
}

/** The autoscaler removing the node, named with its taint, when one has tainted it (AutoscalerTaints). */
function removal(taints: readonly V1Taint[]): { removedBy?: string } {
  const by = (key: string) => taints.some((t) => t.key === key && t.effect === 'NoSchedule');
  if (by(AutoscalerTaints.clusterAutoscaler))
    return { removedBy: `the cluster autoscaler (taint ${AutoscalerTaints.clusterAutoscaler})` };
  if (by(AutoscalerTaints.karpenter)) return { removedBy: `Karpenter (taint ${AutoscalerTaints.karpenter})` };
  return {};
}

/** `nuo.dev/release`, as `nuo release` writes it. */
export interface ReleaseRequest {
  /** The state-since of the Failed phase whose attempt it ends. */
  failedSince: string;
  reason: string;
  /** Who asked, as the API server authenticated them (absent in requests of an older CLI). */
  by?: string;
}

/** The release request on the node, or a problem naming what is wrong with it (then: none). */
function releaseOf(raw: string | undefined, problems: string[]): { release?: ReleaseRequest } {
  if (raw === undefined) return {};
  let v: Partial<ReleaseRequest> | undefined;
  try {
    v = JSON.parse(raw) as Partial<ReleaseRequest>;
  } catch {
    v = undefined;
  }
  if (typeof v?.failedSince === 'string' && typeof v.reason === 'string') {
    const by = typeof v.by === 'string' && v.by !== '' ? { by: v.by } : {};
    return { release: { failedSince: v.failedSince, reason: v.reason, ...by } };
  }
  problems.push(`${quote(Annotations.release, raw)} is not {"failedSince", "reason"} JSON; ignored`);
  return {};
}
