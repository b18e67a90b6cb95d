/**
 * What a process costs, read from Linux's /proc: resident memory now and at its peak (VmHWM, the
 * kernel's own high-water mark, so no sampling can miss a spike) and CPU time (utime + stime).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

let ticks: number | undefined;
function clockTicks(): number {
  if (ticks === undefined) {
    try {
      ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticks = 100;
    }
  }
  return ticks;
}

export interface ProcSample {
  /** Resident set now, MiB. */
  rssMiB: number;
  /** Highest resident set since the process started, MiB. */
  peakRssMiB: number;
  /** User + system CPU time since the process started, seconds. */
  cpuSeconds: number;
}

/** A sample of `pid`, or undefined once the process is gone. */
export function sampleProc(pid: number | undefined): ProcSample | undefined {
  if (!pid) return undefined;
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (field: string) => Number(status.match(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm'))?.[1] ?? 0);
    // Fields after the command name (which may contain spaces), from field 3 on: utime is 14, stime 15.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const cpu = (Number(fields[11]) + Number(fields[12])) / clockTicks();
    return { rssMiB: kib('VmRSS') / 1024, peakRssMiB: kib('VmHWM') / 1024, cpuSeconds: cpu };
  } catch {
    return undefined;
  }
}

/** The machine's 1-minute load average (other work on a shared machine skews wall-clock figures). */
export function loadAverage(): number {
  try {
    return Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);
  } catch {
    return Number.NaN;
  }
}

/** Where all of the machine's cores went since boot, in seconds of one core. */
export interface MachineCpu {
  /** Running anything on this machine (user, nice, system, irq, softirq). */
  busySeconds: number;
  /** Idle or waiting on I/O. */
  idleSeconds: number;
  /**
   * Stolen: the hypervisor ran another virtual machine while this one had work. Only the part of the
   * neighbours' load they took outright: sharing caches or hyperthreads slows this machine without it.
   */
  stealSeconds: number;
}

/**
 * The aggregate `cpu` line of /proc/stat (user nice system idle iowait irq softirq steal guest
 * guest_nice, in clock ticks). Guest time is already counted in user and nice, so it is not added again.
 */
export function parseMachineCpu(procStat: string, ticksPerSecond: number): MachineCpu {
  const line = procStat.split('\n').find((l) => l.startsWith('cpu '));
  const fields = line?.trim().split(/\s+/).slice(1).map(Number) ?? [];
  if (fields.length < 8 || fields.some((n) => !Number.isFinite(n))) {
    throw new Error(
      `/proc/stat has no aggregate cpu line with 8 counters: ${JSON.stringify(line ?? procStat.slice(0, 80))}`,
    );
  }
  const [user, nice, system, idle, iowait, irq, softirq, steal] = fields as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  return {
    busySeconds: (user + nice + system + irq + softirq) / ticksPerSecond,
    idleSeconds: (idle + iowait) / ticksPerSecond,
    stealSeconds: steal / ticksPerSecond,
  };
}

/** The machine's CPU counters now (Linux). */
export function machineCpu(): MachineCpu {
  return parseMachineCpu(readFileSync('/proc/stat', 'utf8'), clockTicks());
}

/** Where the machine's cores went between two readings. */
export function machineCpuBetween(before: MachineCpu, after: MachineCpu): MachineCpu {
  return {
    busySeconds: after.busySeconds - before.busySeconds,
    idleSeconds: after.idleSeconds - before.idleSeconds,
    stealSeconds: after.stealSeconds - before.stealSeconds,
  };
}
