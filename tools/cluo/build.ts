/**
 * Builds tools/cluo/lock, CLUO's update-operator's leader-election lock through client-go's own
 * ConfigMapLock and EndpointsLock (lock/main.go), into a cache outside the repository keyed by its files,
 * so a second run returns at once.
 *
 *   node tools/cluo/build.ts          build it if it is missing, with progress
 *   node tools/cluo/build.ts --print  print the binary's path and exit (no build)
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type BuildPlan, buildCommand, cacheRoot, ensureBuilt, requiredVersion } from '../go-build.ts';

const moduleDir = fileURLToPath(new URL('lock/', import.meta.url));

async function plan(): Promise<BuildPlan> {
  const version = await requiredVersion(moduleDir, 'k8s.io/client-go');
  const hash = createHash('sha256');
  for (const file of ['go.mod', 'go.sum', 'main.go']) hash.update(await readFile(join(moduleDir, file)));
  const dir = join(cacheRoot(), 'cluo-lock', `cluo-lock-${version}_${hash.digest('hex').slice(0, 12)}`);
  return {
    path: join(dir, 'bin', 'cluo-lock'),
    dir,
    target: { name: 'cluo-lock', moduleDir, pkg: '.', ldflags: '-s -w' },
  };
}

/** The lock command's path, built first if missing (once, across processes). */
export const ensureCluoLock = async (log?: (line: string) => void) =>
  ensureBuilt(await plan(), "CLUO's lock (client-go's ConfigMapLock and EndpointsLock)", log);

if (import.meta.url === `file://${process.argv[1]}`)
  await buildCommand({
    print: async () => (await plan()).path,
    build: async () => `cluo-lock in ${await ensureCluoLock()}`,
  });
