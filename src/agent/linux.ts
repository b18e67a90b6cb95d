/** The real BootId: the kernel's boot ID, read from /proc (not from the host root: /proc is the host's kernel). */
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
}
