/**
 * Cleans up after test runs that were SIGKILLed (their exit hooks never ran): a cluster directory whose
 * owner process is gone has its recorded component processes killed and is removed.
 */
import { readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export async function reapAbandonedClusters(parent: string, prefix: string): Promise<number> {
  let reaped = 0;
  for (const entry of await readdir(parent).catch(() => [] as string[])) {
    if (!entry.startsWith(prefix)) continue;
    const dir = join(parent, entry);
    const owner = Number(await readFile(join(dir, 'owner'), 'utf8').catch(() => 'NaN'));
    if (!Number.isInteger(owner) || alive(owner)) continue;
    const pids = (await readFile(join(dir, 'pids'), 'utf8').catch(() => ''))
      .split('\n')
      .map(Number)
      .filter((p) => Number.isInteger(p) && p > 0);
    for (const pid of pids) {
      // Every component's arguments name its cluster directory; a reused pid does not.
      const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
      if (!cmdline.includes(dir)) continue;
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await rm(dir, { recursive: true, force: true });
    reaped++;
  }
  return reaped;
}
