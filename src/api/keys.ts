/**
 * Every annotation and label nuo reads or writes on a Node, with its only writer. One writer per key
 * keeps the protocol race-free: the agent never writes an operator key and vice versa.
 *
 * One file over 400 lines on purpose: the protocol's every key beside its writer in one place is what
 * lets a reader (and a review) check that no key has two writers.
 */

import { safeConcatName } from '../kube/names.ts';

/** Where nuo's own objects live (ledger, Lease, grant key) unless configured otherwise. */
export const DEFAULT_NAMESPACE = 'nuo-system';

/**
 * operator: the slot ledger, a ConfigMap in nuo's namespace, and its one data key (JSON). Agents read it
 * to check that a grant is for the attempt that holds the node's slot.
 */
export const LEDGER = { name: 'nuo-slots', key: 'ledger.json' } as const;

/** Node annotations. */
export const Annotations = {
  /** agent: "true" when the node needs a reboot; `rebootNeededReason` says why. */
  rebootNeeded: 'nuo.dev/reboot-needed',
  /** agent: human-readable reason for reboot-needed (e.g. "update_engine: UPDATED_NEED_REBOOT"). */
  rebootNeededReason: 'nuo.dev/reboot-needed-reason',
  /** person / CLI: RFC 3339 time; reboot this node once even if nothing detected a need. */
  rebootRequested: 'nuo.dev/reboot-requested',
  /** person / CLI: "true" to leave this node alone. */
  paused: 'nuo.dev/paused',
  /**
   * person / CLI (`nuo release`): JSON `{"failedSince": <the Failed phase's state-since>, "reason": …,
   * "by": <who asked, as the API server authenticated them; optional>}`,
   * asks the operator to end that Failed attempt and free its slot; honoured only for the Failed phase it
   * names (a stale request frees nothing), refused while the agent marks reboot-in-progress; removed by
   * the operator in the write that ends the attempt.
   */
  release: 'nuo.dev/release',
  /** operator: the node's phase. */
  state: 'nuo.dev/state',
  /** operator: why the node is in its phase (or waits), human readable. */
  stateReason: 'nuo.dev/state-reason',
  /**
   * operator: RFC 3339 time the phase was entered, for people and tools: no decision compares it with
   * another clock (a wait counts from when the deciding leader first saw the phase).
   */
  stateSince: 'nuo.dev/state-since',
  /**
   * operator: the attempt the node was last admitted in: the number the slot ledger handed out for it,
   * written in the admission's node write and kept after the attempt ends. A slot whose attempt the node
   * does not name has not started; one it names, with the node outside an attempt, has ended.
   */
  attempt: 'nuo.dev/attempt',
  /**
   * operator: the reboot grant, written once the node is drained: signed for this node, boot and attempt
   * (src/api/grant.ts); the agent reboots on no other value.
   */
  rebootOk: 'nuo.dev/reboot-ok',
  /** agent: "true" while the agent is rebooting the node. */
  rebootInProgress: 'nuo.dev/reboot-in-progress',
  /** agent: the boot ID before the reboot; a different boot ID afterwards confirms it happened. */
  bootIdBefore: 'nuo.dev/boot-id-before',
  /**
   * operator (drain engine): "true" when nuo made the node unschedulable, so nuo undoes that cordon and
   * nothing else. Written in the same conditional patch as spec.unschedulable.
   */
  cordonedByNuo: 'nuo.dev/cordoned-by-nuo',
  /** operator: consecutive failed attempts (loop and flap protection). */
  failures: 'nuo.dev/failures',
  /**
   * operator: consecutive attempts whose drain failed, which drain.onFailure Skip counts; removed by the
   * write that follows a drain that succeeded (the grant, or a Plan's Job starting).
   */
  drainFailures: 'nuo.dev/drain-failures',
  /**
   * operator: completed reboots in a row after which the node still needed one (a reboot loop): each
   * next attempt waits out the retry backoff, and past --max-ineffective-reboots none is made until a
   * person removes this key.
   */
  ineffectiveReboots: 'nuo.dev/ineffective-reboots',
  /** agent: a problem the agent cannot fix itself (e.g. a reboot that did not happen), human readable. */
  agentProblem: 'nuo.dev/agent-problem',
  /** agent: mirror of the OS update engine's status, as CLUO did. */
  status: 'nuo.dev/status',
  /** agent: the version the update engine staged. */
  newVersion: 'nuo.dev/new-version',
  /** agent: when the update engine last checked for updates. */
  lastCheckedTime: 'nuo.dev/last-checked-time',
  /**
   * agent: RFC 3339 time the node's current boot began (the kernel's btime); a policy's reboot.maxUptime
   * refreshes nodes up longer than that.
   */
  bootTime: 'nuo.dev/boot-time',
  /**
   * agent: the boot ID `boot-time` belongs to, written with it: the operator trusts a boot time only for
   * the boot its kubelet posts (a value left from an earlier boot would ask for a refresh again and again).
   */
  bootTimeBootId: 'nuo.dev/boot-time-boot-id',
  /**
   * operator: RFC 3339 time nuo admitted the node for a remediation (a policy's `remediation`): counted
   * over the pool for its maxPerHour, so a new leader honours the rate limit too.
   */
  remediatedAt: 'nuo.dev/remediated-at',
  /**
   * operator: the Plan ("namespace/name"; "upgrade.cattle.io:namespace/name" for SUC's own) whose
   * attempt holds the node's slot; written with the admission, removed in the write that ends the attempt.
   */
  plan: 'nuo.dev/plan',
  /**
   * operator, on nodes of a pool whose agent speaks CLUO's or FLUO's protocol: the boot ID the grant was
   * given on (that grant cannot name it): a different boot ID later confirms the reboot.
   */
  grantedBootId: 'nuo.dev/granted-boot-id',
  /**
   * operator: the autoscalers' protection annotations (ScaleDownProtection) nuo set on the node for its
   * attempt, comma separated; written with the admission, removed with them in the write that ends the
   * attempt. A protection someone else set is never named here, so nuo never removes it.
   */
  scaleDownProtection: 'nuo.dev/scale-down-protection',
} as const;

/**
 * operator: a node label `plan.nuo.dev/<plan>` = the Plan's hash, written when the Plan was applied to
 * the node; a node whose label differs from the Plan's latest hash needs the Plan (SUC's
 * `plan.upgrade.cattle.io/<plan>`).
 */
export const PLAN_LABEL_PREFIX = 'plan.nuo.dev/';
export const planLabel = (plan: string) => `${PLAN_LABEL_PREFIX}${planKey(plan)}`;

/**
 * A Plan's name where a label holds it (a key's name part, a value: 63 characters at most): the name, or
 * a longer one shortened as SUC shortens names (kube/names.ts), so every label stays valid.
 */
export const planKey = (plan: string) => safeConcatName(plan);

/**
 * SUC's `plan.upgrade.cattle.io/<plan>`. On a node: a person sets it to "disabled" to keep the node out
 * of the Plan by that name (SUC's documented opt-out); SUC sets it to its hash of the Plan once applied
 * (at the Plan's SUC hash the node counts as applied). nuo writes it only for a Plan of SUC's own group
 * that it runs in place (SUC's controller stopped: --suc-plans-namespace), at SUC's hash, as SUC would;
 * for its own Plans it only reads it. operator: on a Plan's Jobs and their pods, the Plan's hash, as
 * SUC's Jobs carry it.
 */
export const sucPlanLabel = (plan: string) => `plan.upgrade.cattle.io/${planKey(plan)}`;

/**
 * operator: labels on a Plan's Jobs and their pods, naming the Plan (planKey), the node and the Plan's
 * hash.
 */
export const JobLabels = {
  plan: 'nuo.dev/plan',
  node: 'nuo.dev/node',
  hash: 'nuo.dev/plan-hash',
  /** "true" on an exclusive Plan's Jobs: no two run on a node at once (SUC's exclusive). */
  exclusive: 'nuo.dev/exclusive',
  /**
   * "prepare" on the Job that runs a Plan's `prepare` alone, before the node's attempt (it disrupts
   * nothing and holds no slot); absent on the Job of the attempt.
   */
  stage: 'nuo.dev/job-stage',
} as const;

/** The value of JobLabels.stage on a Plan's prepare Job. */
export const PREPARE_STAGE = 'prepare';

/**
 * operator: SUC's labels on a Plan's Jobs and their pods, beside nuo's, with SUC's values, so tooling
 * written for SUC finds them. The controller's is SUC_CONTROLLER: SUC's controller handles only Jobs
 * labelled with its own name, so a SUC still running leaves nuo's Jobs alone.
 */
export const SucJobLabels = {
  controller: 'upgrade.cattle.io/controller',
  exclusive: 'upgrade.cattle.io/exclusive',
  node: 'upgrade.cattle.io/node',
  plan: 'upgrade.cattle.io/plan',
  version: 'upgrade.cattle.io/version',
} as const;
export const SUC_CONTROLLER = 'nuo';

/** operator: SUC's annotation on a Plan's Job, its ttlSecondsAfterFinished (SUC keeps it as a fallback). */
export const SucJobAnnotations = {
  ttlSecondsAfterFinished: 'upgrade.cattle.io/ttl-seconds-after-finished',
} as const;

/** operator: annotations on a Plan's Jobs. */
export const JobAnnotations = {
  /** The Plan's name whole (its labels hold planKey, shortened past 63 characters). */
  plan: 'nuo.dev/plan',
  /** The resolved version the Job applies (versions may hold characters a label value may not). */
  version: 'nuo.dev/version',
  /** The node's boot ID when the Job was created: a different one later means the Job rebooted it. */
  bootId: 'nuo.dev/boot-id',
  /** The attempt the Job belongs to (its slot's `since`): a Job of another attempt is not this one's. */
  attempt: 'nuo.dev/attempt',
} as const;

/** Node labels. */
export const Labels = {
  /** operator: "true" while before-reboot hooks should run (hook selector, CLUO semantics). */
  beforeReboot: 'nuo.dev/before-reboot',
  /** operator: "true" while after-reboot hooks should run. */
  afterReboot: 'nuo.dev/after-reboot',
  /**
   * operator: "true" once the node's drains failed as often as its UpdatePolicy's onFailure.afterAttempts
   * allows under `Skip`: the rollout goes on without it; a person removes the label to try again.
   */
  skipped: 'nuo.dev/skipped',
  /** agent: ID from the host's /etc/os-release. */
  osId: 'nuo.dev/os-id',
  /** agent: VERSION_ID from the host's /etc/os-release. */
  osVersion: 'nuo.dev/os-version',
} as const;

/**
 * The keys the agent writes, and no others: the admission policy in deploy/base/agent-policy.yaml lets
 * the agent's token change exactly these on its own Node (a test checks the two lists agree).
 */
export const AGENT_ANNOTATIONS: readonly string[] = [
  Annotations.rebootNeeded,
  Annotations.rebootNeededReason,
  Annotations.rebootInProgress,
  Annotations.bootIdBefore,
  Annotations.agentProblem,
  Annotations.status,
  Annotations.newVersion,
  Annotations.lastCheckedTime,
  Annotations.bootTime,
  Annotations.bootTimeBootId,
];
export const AGENT_LABELS: readonly string[] = [Labels.osId, Labels.osVersion];

/** Pod annotations nuo reads. */
export const PodAnnotations = {
  /**
   * person / application: "true", or a Go duration counted from the pod's start ("4h"): while it holds,
   * nuo starts no attempt on the pod's node (the node waits; the rest of the pool goes on).
   */
  doNotDisrupt: 'nuo.dev/do-not-disrupt',
} as const;

/**
 * UpdatePolicy annotations, both written by a person through `nuo policy resume`: the record of who let a
 * halted pool go on, and when. Failed attempts seen before that time no longer count.
 */
export const PolicyAnnotations = {
  /** person / CLI: RFC 3339 time of the last resume. */
  resumedAt: 'nuo.dev/resumed-at',
  /** person / CLI: who resumed, as the API server authenticated them. */
  resumedBy: 'nuo.dev/resumed-by',
} as const;

/** Node taints. */
export const Taints = {
  /**
   * operator: PreferNoSchedule on a node that waits for its reboot (not while paused), removed in the
   * write that ends its attempt. The scheduler then places pods evicted from draining nodes on nodes
   * already done (or not due) where it can, so a pod is evicted once per rollout, not once per wave
   * (kured's --prefer-no-schedule-taint, on by default here: it only scores, never blocks).
   */
  rebootPending: 'nuo.dev/reboot-pending',
  /**
   * operator: the same taint's second, third, … (`nuo.dev/reboot-pending-2`, …), on a waiting node when some
   * node carries other PreferNoSchedule taints, so that the waiting nodes carry the most (taints.ts).
   */
  rebootPendingMore: 'nuo.dev/reboot-pending-',
} as const;

/**
 * Not nuo's: the NoSchedule taints with which an autoscaler marks a node it is removing. nuo admits no
 * such node and counts it as disrupted in its pool's budget (its pods are moving off it already).
 */
export const AutoscalerTaints = {
  /**
   * The cluster autoscaler's, value the Unix time it was added (cluster-autoscaler/utils/taints/taints.go,
   * ToBeDeletedTaint).
   */
  clusterAutoscaler: 'ToBeDeletedByClusterAutoscaler',
  /** Karpenter's, on a node it is disrupting (pkg/apis/v1/taints.go, DisruptedTaintKey). */
  karpenter: 'karpenter.sh/disrupted',
} as const;

/**
 * Not nuo's: the Node annotations, value "true", with which an autoscaler is told to leave a node alone.
 * operator: set on a node for its attempt unless already there (its drain empties the node, which an
 * autoscaler would otherwise remove mid-attempt), recorded in Annotations.scaleDownProtection.
 */
export const ScaleDownProtection = {
  /**
   * The cluster autoscaler's (cluster-autoscaler/core/scaledown/eligibility/eligibility.go,
   * ScaleDownDisabledKey): it never scales such a node down.
   */
  clusterAutoscaler: 'cluster-autoscaler.kubernetes.io/scale-down-disabled',
  /**
   * Karpenter's (pkg/apis/v1/labels.go, DoNotDisruptAnnotationKey): it disrupts no such node by
   * consolidation, drift or emptiness (pkg/controllers/state/statenode.go, ValidateNodeDisruptable).
   */
  karpenter: 'karpenter.sh/do-not-disrupt',
} as const;
export const SCALE_DOWN_PROTECTION: readonly string[] = Object.values(ScaleDownProtection);

/**
 * operator: the Node conditions of KEP-5683 (node lifecycle conditions, `k8s.io/api` core/v1
 * NodeConditionType) that nuo publishes in a Node's status while it maintains the node
 * (src/operator/write/lifecycle-conditions.ts says which and when), through the status subresource. nuo owns
 * such a condition only while its reason starts with NUO_REASON_PREFIX: one with any other reason is
 * another writer's (an admin's, another controller's), and nuo never changes or removes it.
 */
export const LifecycleConditions = {
  /** The node is being drained. */
  drainInProgress: 'DrainInProgress',
  /** The node met the drain criteria of whoever maintains it; nuo: drained, still cordoned. */
  drained: 'Drained',
  /** The node is expected to undergo maintenance. */
  maintenancePlanned: 'MaintenancePlanned',
  /** The node is undergoing maintenance. */
  maintenanceInProgress: 'MaintenanceInProgress',
} as const;
export type LifecycleCondition = (typeof LifecycleConditions)[keyof typeof LifecycleConditions];
export const LIFECYCLE_CONDITIONS: readonly LifecycleCondition[] = Object.values(LifecycleConditions);
/** The reasons of nuo's lifecycle conditions start with this, and no other writer's may. */
export const NUO_REASON_PREFIX = 'Nuo';

/** Kubernetes' own keys nuo reads. */
export const Kubernetes = {
  /** Set by the kubelet on mirror pods of static pods; such pods cannot be evicted. */
  mirrorPod: 'kubernetes.io/config.mirror',
} as const;

/**
 * The agent protocol a pool's nodes speak (UpdatePolicy `agentProtocol`): nuo's own, the CoreOS update
 * operator's, unmodified, under Flatcar's prefix (FLUO) or Container Linux's (CLUO), or FleetLock (Zincati
 * and other clients asking nuo's FleetLock server for a reboot lock, docs/decisions/0051-fleetlock.md).
 */
export const AgentProtocol = {
  nuo: 'nuo',
  flatcar: 'flatcar-update-operator',
  containerLinux: 'container-linux-update-operator',
  fleetlock: 'fleetlock',
} as const;
export type AgentProtocol = (typeof AgentProtocol)[keyof typeof AgentProtocol];
export const AGENT_PROTOCOLS: readonly AgentProtocol[] = Object.values(AgentProtocol);
/** A protocol of another project's agent: CLUO's, FLUO's or a FleetLock client's. */
export type ForeignProtocol = Exclude<AgentProtocol, typeof AgentProtocol.nuo>;
/** CLUO's or FLUO's protocol: node keys their agent and operator write. */
export type CoreosProtocol = Exclude<ForeignProtocol, typeof AgentProtocol.fleetlock>;
export const isCoreosProtocol = (p: AgentProtocol | undefined): p is CoreosProtocol =>
  p === AgentProtocol.flatcar || p === AgentProtocol.containerLinux;

/**
 * The keys of a pool speaking FleetLock, all written by nuo's operator: its FleetLock handler records the
 * client's requests, its attempts write the grant the handler answers by.
 */
export const FleetLockKeys = {
  /**
   * operator (FleetLock handler): RFC 3339 time (for people) of the pre-reboot request that asked for the
   * current need; written with the steady-state removed, so the need is this key without that one.
   */
  preReboot: 'nuo.dev/fleetlock-pre-reboot',
  /** operator (FleetLock handler): RFC 3339 time (for people) of the client's steady-state since it. */
  steadyState: 'nuo.dev/fleetlock-steady-state',
  /** operator: "true" once the node is drained; the handler answers pre-reboot 200 on this boot only. */
  granted: 'nuo.dev/fleetlock-granted',
} as const;

/**
 * operator (the leader, on its Lease nuo-operator): where its FleetLock server answers, as
 * `--fleetlock-advertise-url` says, written with its identity (src/kube/lease-advert.ts); the other
 * replicas forward FleetLock requests there.
 */
export const FLEETLOCK_LEADER_URL = 'nuo.dev/fleetlock-url';

const PROTOCOL_PREFIX: Record<CoreosProtocol, string> = {
  [AgentProtocol.flatcar]: 'flatcar-linux-update.v1.flatcar-linux.net/',
  [AgentProtocol.containerLinux]: 'container-linux-update.v1.coreos.com/',
};

/**
 * The keys of CLUO's and FLUO's protocol (one set, two prefixes), each with its only writer while nuo
 * coordinates the pool: the agent (their update-agent, unmodified), nuo's operator in the place of their
 * update-operator, or a person. Keys nuo never reads (`agent-version`) are left out.
 */
export function protocolKeys(protocol: CoreosProtocol) {
  const p = PROTOCOL_PREFIX[protocol];
  return {
    /** agent: annotation and label "true" when the update engine staged an update; "false" at its start. */
    rebootNeeded: `${p}reboot-needed`,
    /** agent: "true" from the grant seen until the agent restarts after the reboot ("false" then). */
    rebootInProgress: `${p}reboot-in-progress`,
    /** agent: the update engine's status (e.g. UPDATE_STATUS_UPDATED_NEED_REBOOT). */
    status: `${p}status`,
    /** agent: the version the update engine staged. */
    newVersion: `${p}new-version`,
    /** agent: when the update engine last checked (UNIX seconds). */
    lastCheckedTime: `${p}last-checked-time`,
    /** agent: "true" when the agent cordoned the node itself (never when nuo had cordoned it first). */
    agentMadeUnschedulable: `${p}agent-made-unschedulable`,
    /** agent (labels): ID and VERSION of os-release, GROUP of update.conf. */
    id: `${p}id`,
    group: `${p}group`,
    version: `${p}version`,
    /** operator: "true" grants the reboot (unsigned: the protocol has no other value). */
    rebootOk: `${p}reboot-ok`,
    /** operator (labels): "true" while before-/after-reboot hooks should run. */
    beforeReboot: `${p}before-reboot`,
    afterReboot: `${p}after-reboot`,
    /** person: "true" leaves the node alone. */
    rebootPaused: `${p}reboot-paused`,
  } as const;
}

/** The keys CLUO's or FLUO's agent writes on its own Node, and no others (deploy/base/protocol-agent-policy.yaml). */
export function protocolAgentKeys(protocol: CoreosProtocol): {
  annotations: readonly string[];
  labels: readonly string[];
} {
  const k = protocolKeys(protocol);
  return {
    annotations: [
      k.rebootNeeded,
      k.rebootInProgress,
      k.status,
      k.newVersion,
      k.lastCheckedTime,
      k.agentMadeUnschedulable,
    ],
    labels: [k.rebootNeeded, k.id, k.group, k.version],
  };
}

/**
 * CLUO's and FLUO's own update-operator, as nuo tells it is running: its leader-election lock, by the name
 * their code gives it, of any kind client-go keeps one in (CLUO's operator locks with a ConfigMap, its
 * releases before 0.4 with Endpoints; FLUO's with a ConfigMap and a Lease, or whichever its lock type
 * says), in whatever namespace it runs, and the Deployment their manifests install.
 */
export const PROTOCOL_OPERATOR: Record<CoreosProtocol, { what: string; lock: string; deployment: string }> = {
  [AgentProtocol.flatcar]: {
    what: "FLUO's update-operator",
    lock: 'flatcar-linux-update-operator-lock',
    deployment: 'flatcar-linux-update-operator',
  },
  [AgentProtocol.containerLinux]: {
    what: "CLUO's update-operator",
    lock: 'container-linux-update-operator-lock',
    deployment: 'container-linux-update-operator',
  },
};
