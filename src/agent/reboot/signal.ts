/**
 * Reboot by sending a signal to PID 1. systemd reboots on SIGRTMIN+5 (see systemd(1), "SIGRTMIN+5: Reboots
 * the machine, starts the reboot.target unit"), which needs hostPID and the privilege to signal PID 1.
 * The PID and signal are configurable (a test targets a child process). Signals are given by name —
 * SIGTERM, SIGRTMIN+5, SIGRTMAX-2 — or number.
 */
import { constants } from 'node:os';
import type { Rebooter } from '../os.ts';

/** glibc's SIGRTMIN and SIGRTMAX on Linux (the kernel's 32 and 33 are reserved for the C library). */
export const SIGRTMIN = 34;
export const SIGRTMAX = 64;
export const DEFAULT_REBOOT_SIGNAL = 'SIGRTMIN+5';

/** The signal number for a name (SIGTERM, TERM, SIGRTMIN+5, SIGRTMAX-1) or number; throws if unknown. */
export function signalNumber(signal: string | number): number {
  if (typeof signal === 'number') {
    if (Number.isInteger(signal) && signal >= 1 && signal <= SIGRTMAX) return signal;
    throw new Error(`signal rebooter: invalid signal number ${JSON.stringify(signal)}`);
  }
  if (typeof signal !== 'string')
    throw new Error(`signal rebooter: invalid signal ${JSON.stringify(signal)}`);
  const name = signal.trim().toUpperCase();
  const full = name.startsWith('SIG') ? name : `SIG${name}`;
  const rt = /^SIGRT(MIN|MAX)(?:([+-])(\d+))?$/.exec(full);
  if (rt) {
    const base = rt[1] === 'MIN' ? SIGRTMIN : SIGRTMAX;
    const offset = rt[3] === undefined ? 0 : Number(rt[3]) * (rt[2] === '-' ? -1 : 1);
    const n = base + offset;
    if ((rt[1] === 'MIN' && offset < 0) || (rt[1] === 'MAX' && offset > 0) || n < SIGRTMIN || n > SIGRTMAX) {
      throw new Error(`signal rebooter: ${JSON.stringify(signal)} is outside SIGRTMIN..SIGRTMAX`);
    }
    return n;
  }
  const n = (constants.signals as Record<string, number>)[full];
  if (n === undefined) throw new Error(`signal rebooter: unknown signal ${JSON.stringify(signal)}`);
  return n;
}

export interface SignalRebooterOptions {
  /** Default 1 (init: systemd). */
  pid?: number;
  /** Default SIGRTMIN+5. */
  signal?: string | number;
}

export class SignalRebooter implements Rebooter {
  readonly name = 'signal';
  readonly pid: number;
  readonly signal: number;
  readonly #signalText: string;

  constructor(options: SignalRebooterOptions = {}) {
    const pid = options.pid ?? 1;
    if (!Number.isInteger(pid) || pid < 1) {
      throw new Error(`signal rebooter: pid must be a positive integer, got ${JSON.stringify(pid)}`);
    }
    this.pid = pid;
    this.signal = signalNumber(options.signal ?? DEFAULT_REBOOT_SIGNAL);
    this.#signalText = `${String(options.signal ?? DEFAULT_REBOOT_SIGNAL)} (${this.signal})`;
  }

  async reboot(): Promise<void> {
    try {
      process.kill(this.pid, this.signal);
    } catch (err) {
      throw new Error(
        `cannot send ${this.#signalText} to PID ${this.pid}: ${err instanceof Error ? err.message : String(err)}`,
        { cause: err },
      );
    }
  }
}
