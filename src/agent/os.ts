/**
 * The agent's view of its host OS, one small interface per concern (as kured does): a Detector says
 * whether a reboot is needed, a Rebooter reboots, a BootId identifies the current boot, a BootTime says
 * when it began. The agent core
 * depends only on these; real implementations (D-Bus, files, commands) and the simulated node host
 * implement them.
 */

export const Need = {
  needed: 'needed',
  notNeeded: 'not-needed',
  /** The check failed or could not run: never a reason to reboot (safety rule 6). */
  unknown: 'unknown',
} as const;
export type Need = (typeof Need)[keyof typeof Need];

/** What an OS update engine reports, mirrored on the node as CLUO did. */
export interface UpdateStatus {
  /** e.g. "UPDATE_STATUS_UPDATED_NEED_REBOOT" or "UPDATED_NEED_REBOOT". */
  status: string;
  newVersion?: string;
  lastCheckedTime?: Date;
}

export interface Detection {
  need: Need;
  /** Human readable: why a reboot is needed, or why the answer is unknown. */
  reason: string;
  /** Present for update-engine detectors. */
  update?: UpdateStatus;
}

export interface Detector {
  readonly name: string;
  /** The current verdict. Never rejects: a failure is { need: 'unknown', reason }. */
  check(): Promise<Detection>;
  /**
   * Optional push for sources that signal changes (D-Bus): `onChange` is called when the verdict may
   * have changed. Returns a function that stops watching.
   */
  watch?(onChange: () => void): () => void;
}

export interface Rebooter {
  readonly name: string;
  /** Asks the OS to reboot. Resolves once the request was accepted; rejects with context if refused. */
  reboot(): Promise<void>;
}

export interface BootId {
  /** The current boot's ID (Linux: /proc/sys/kernel/random/boot_id); grants name the boot they are for. */
  read(): Promise<string>;
}

export interface BootTime {
  /** When the current boot began (Linux: btime in /proc/stat), for a policy's reboot.maxUptime. */
  read(): Promise<Date>;
}
