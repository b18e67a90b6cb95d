/**
 * Builds secret-hash (tools/suc-hash/main.go: kubectl's real SecretHash, from k8s.io/kubectl at the
 * version pinned in the go.mod beside this file) into a cache outside the repository, keyed by the
 * module's files, so a second run returns at once. The contract test of nuo's SUC hash runs it.
 *
 *   node tools/suc-hash/build.ts          build it if it is missing, with progress
 *   node tools/suc-hash/build.ts --print  print the binary's path and exit (no build)
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type BuildPlan,
  buildCommand,
  cacheRoot,
  ensureBuilt,
  type GoTarget,
  requiredVersion,
} from '../go-build.ts';

const here = dirname(fileURLToPath(import.meta.url));

async function plan(): Promise<BuildPlan> {
  const kubectl = await requiredVersion(here, 'k8s.io/kubectl');
  const target: GoTarget = { name: 'secret-hash', moduleDir: here, pkg: '.', ldflags: '-s -w' };
  const hash = createHash('sha256');
  for (const file of ['go.mod', 'go.sum', 'main.go']) hash.update(await readFile(join(here, file)));
  const dir = join(cacheRoot(), 'suc-hash', `kubectl-${kubectl}_${hash.digest('hex').slice(0, 12)}`);
  return { path: join(dir, 'bin', 'secret-hash'), target, dir };
}

/** Returns secret-hash's path, building it if it is missing. Throws (never skips) if the build fails. */
export async function ensureSecretHash(
  log: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Promise<string> {
  return ensureBuilt(await plan(), 'secret-hash', log);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await buildCommand({
    print: async () => (await plan()).path,
    build: async () => `secret-hash in ${await ensureSecretHash()}`,
  });
}
