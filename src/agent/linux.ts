/** The real BootId: the kernel's boot ID and boot time, read from /proc (not from the host root: /proc is the host's kernel). */
import { readFile } from 'node:fs/promises';
import type { BootId } from './os.ts';

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

  async bootedAt(): Promise<Date> {
    const stat = await readFile(`${this.#proc}/stat`, 'utf8');
    const btime = stat.match(/^btime (\d+)$/m)?.[1];
    if (!btime) throw new Error(`${this.#proc}/stat has no btime line`);
    return new Date(Number(btime) * 1000);
  }
}
