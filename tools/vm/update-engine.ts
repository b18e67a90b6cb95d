/**
 * Builds the update_engine stand-in (tools/vm/update-engine, a Go module of this repository) that a VM
 * node runs for FLUO's update-agent, into a cache outside the repository keyed by its source, so a
 * second run returns at once.
 *
 *   node tools/vm/update-engine.ts          build it if it is missing, with progress
 *   node tools/vm/update-engine.ts --print  print the binary's path and exit (no build)
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type BuildPlan, buildCommand, cacheRoot, ensureBuilt } from '../go-build.ts';

const moduleDir = join(dirname(fileURLToPath(import.meta.url)), 'update-engine');

async function plan(): Promise<BuildPlan> {
  const hash = createHash('sha256');
  for (const file of ['go.mod', 'go.sum', 'main.go']) hash.update(await readFile(join(moduleDir, file)));
  const dir = join(cacheRoot(), 'vm-update-engine', hash.digest('hex').slice(0, 12));
  return {
    path: join(dir, 'bin', 'update-engine'),
    target: { name: 'update-engine', moduleDir, pkg: '.', ldflags: '-s -w' },
    dir,
  };
}

/** The stand-in's path, built first if missing (once, across processes). Throws if the build fails. */
export const ensureUpdateEngine = async (log?: (line: string) => void) =>
  ensureBuilt(await plan(), 'the update_engine stand-in (tools/vm/update-engine)', log);

if (import.meta.url === `file://${process.argv[1]}`) {
  await buildCommand({
    print: async () => (await plan()).path,
    build: async () => `update-engine in ${await ensureUpdateEngine()}`,
  });
}
