/**
 * The real BootId and BootTime: the kernel's boot ID and boot time, read from /proc (not from the host
 * root: /proc is the host's kernel).
 */
import { readFile } from 'node:fs/promises';
import type { BootId, BootTime } from './os.ts';

export class LinuxBootId implements BootId {
  readonly #proc: string;

  constructor(proc = '/proc') {
    this.#proc = proc;
  }

  async read(): Promise<string> {
    const id = (await readFile(`${this.#proc}/sys/kernel/random/boot_id`, 'utf8')).trim();
    if (!/^[0-9a-f-]{36}$/.test(id))
      throw new Error(`${this.#proc}/sys/kernel/random/boot_id holds no boot ID: "${id}"`);
    return id;
  }
}

/** The kernel's boot time: `btime` in /proc/stat, seconds since the epoch. */
export class LinuxBootTime implements BootTime {
  readonly #proc: string;

  constructor(proc = '/proc') {
    this.#proc = proc;
  }

  async read(): Promise<Date> {
    return parseBtime(await readFile(`${this.#proc}/stat`, 'utf8'), `${this.#proc}/stat`);
  }
}

/** The boot time in the text of /proc/stat (its `btime` line). */
export function parseBtime(stat: string, source: string): Date {
  const m = /^btime (\d+)$/m.exec(stat);
  if (!m) throw new Error(`${source} has no btime line: cannot tell when the node booted`);
  return new Date(Number(m[1]) * 1000);
}
