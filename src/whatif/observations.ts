/**
 * What a `nuo whatif run` saw of the rollout of a twin: plain data, so the report (report.ts) is a pure
 * function of it. Times are milliseconds since the rollout started (updates staged on every host).
 */

/** A phase the operator recorded on a node (`nuo.dev/state`), when it entered it and why. */
export interface ObservedPhase {
  phase: string;
  atMs: number;
  reason?: string;
}

export interface ObservedNode {
  name: string;
  zone?: string;
  /** The UpdatePolicy whose pool holds the node, as the operator plans pools; none when none does. */
  pool?: string;
  /** Every phase it was seen to enter, in order. */
  phases: ObservedPhase[];
  /** Reboots its simulated host made. */
  reboots: number;
  /** NotReady in the snapshot: its host stays down, as a node that does not come back. */
  notReady: boolean;
  /** Rebooted, back, and Idle again with no reboot needed. */
  finished: boolean;
  /** For a node that did not finish: `nuo policy explain`'s lines at the end of the run. */
  explain: string[];
  /** Whether its pool's maintenance windows were open when each attempt started, and why (none: no windows). */
  windows: string[];
}

/** An eviction the operator asked for, from the twin's API server audit log. */
export interface ObservedEviction {
  atMs: number;
  /** "namespace/name". */
  pod: string;
  /** Where the pod ran when it was evicted (unknown for a pod never seen). */
  node?: string;
  /** "namespace/Kind/name" of its top-level owner (a ReplicaSet's Deployment); none for a bare pod. */
  workload?: string;
  /** When the pod was created; negative: before the rollout. */
  createdMs?: number;
  /** The API server's answer: 201 evicted, 429 refused by a PodDisruptionBudget. */
  code: number;
  /** Of a refusal: the PDB that refused it, "namespace/name". */
  pdb?: string;
}

/** A PodDisruptionBudget's spec and its status at the end of the run. */
export interface ObservedPdb {
  /** "namespace/name". */
  name: string;
  minAvailable?: number | string;
  maxUnavailable?: number | string;
  expectedPods?: number;
  currentHealthy?: number;
  desiredHealthy?: number;
  disruptionsAllowed?: number;
}

export interface RunObservations {
  /** How long the rollout ran. */
  elapsedMs: number;
  /** The run ended at its deadline with nodes unfinished. */
  timedOut: boolean;
  /** How long a simulated host was down for its reboot, until its node was Ready. */
  rebootMs: number;
  /** The run was this many times faster than real time, and its times were mapped back (timing.ts). */
  speed?: number;
  nodes: ObservedNode[];
  evictions: ObservedEviction[];
  pdbs: ObservedPdb[];
  /** Safety rules the independent checker saw broken in the twin. */
  violations: string[];
  /**
   * The (simulated) calendar instant the rollout started at, epoch ms: the operator read windows on a
   * calendar showing it then. Absent: not recorded.
   */
  calendarStartMs?: number;
  /** Per pool with maintenance windows, its open stretches that overlapped the run, in calendar epoch ms. */
  windowStretches?: { pool: string; stretches: { opens?: number; closes?: number }[] }[];
}
