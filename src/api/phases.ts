/** A node's phase as the operator records it in `nuo.dev/state` (docs/architecture.md, "A node's phases"). */
export const Phase = {
  idle: 'Idle',
  /** Needs a reboot; waits for budget, spacing, backoff or unpause. */
  pending: 'Pending',
  /** Holds a slot; before-reboot hooks run. */
  beforeReboot: 'BeforeReboot',
  /** Holds a slot; cordoned and being drained. */
  draining: 'Draining',
  /** Holds a slot; a Plan's Job runs on the node (drained first when the Plan cordons or drains). */
  upgrading: 'Upgrading',
  /** Holds a slot; reboot-ok granted, waiting for the agent. */
  rebootGranted: 'RebootGranted',
  /** Holds a slot; the agent reported reboot-in-progress. */
  rebooting: 'Rebooting',
  /** Holds a slot; back with a new boot ID; after-reboot hooks and the health gate. */
  afterReboot: 'AfterReboot',
  /** Holds a slot (fail closed): no reboot or no return within the timeouts. */
  failed: 'Failed',
} as const;
export type Phase = (typeof Phase)[keyof typeof Phase];

/** Every phase, in the order a node passes through them (Failed last). */
export const PHASES: readonly Phase[] = Object.values(Phase);

const all = new Set<string>(PHASES);
export const isPhase = (value: string | undefined): value is Phase => value !== undefined && all.has(value);

/** Phases in which a node holds a slot of the disruption budget. */
export const SLOT_PHASES: ReadonlySet<Phase> = new Set([
  Phase.beforeReboot,
  Phase.draining,
  Phase.upgrading,
  Phase.rebootGranted,
  Phase.rebooting,
  Phase.afterReboot,
  Phase.failed,
]);
