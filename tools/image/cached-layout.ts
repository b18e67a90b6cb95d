/**
 * An OCI layout kept in the cache outside the repository: written once, under the cache directory's lock,
 * into a temporary directory renamed into place, so a reader never sees half of one.
 */
import { existsSync } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { withLock } from '../go-build.ts';

/** Writes `layout` with `write(tmp)` unless it is there already; `lockDir` is the cache entry's lock. */
export async function cachedLayout(
  o: { layout: string; lockDir: string; what: string; write: (tmp: string) => void },
  log: (line: string) => void,
): Promise<void> {
  if (existsSync(join(o.layout, 'index.json'))) return;
  await withLock(
    o.lockDir,
    async () => {
      if (existsSync(join(o.layout, 'index.json'))) return;
      const tmp = `${o.layout}.tmp-${process.pid}`;
      await rm(tmp, { recursive: true, force: true });
      log(`packing ${o.what} into an image at ${o.layout}`);
      o.write(tmp);
      await rename(tmp, o.layout);
    },
    log,
  );
}
