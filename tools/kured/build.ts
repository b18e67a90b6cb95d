/**
 * Builds kured (the Kubernetes reboot daemon), unmodified, from its source at tag 1.23.0 into a cache
 * outside the repository (<cache>/kured/1.23.0/bin/kured), and beside it sim-init (this directory's Go
 * program: PID 1 of a simulated host's kured container, turning kured's reboot signal into the host's
 * reboot), so the testing ground can run the real kured on simulated nodes; a second run returns at once.
 *
 * The source is the `git archive` of that tag kept beside the checkout in ../shared/third-party/ (checked
 * against its sha256; it has no vendor/ tree, so its modules come from the Go module proxy), or a clone of
 * the same commit named by $NUO_KURED_SOURCE. Neither there: the build fails and says how to get it.
 *
 *   node tools/kured/build.ts          build what is missing, with progress
 *   node tools/kured/build.ts --print  print kured's path and exit (no build)
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildCommand, cacheRoot, goBuild, withLock } from '../go-build.ts';
import { inSourceTree, type PinnedSource, pinnedSource } from '../third-party.ts';

const here = dirname(fileURLToPath(import.meta.url));
const checkout = resolve(here, '../..');
const simInitDir = join(here, 'sim-init');

/** The pinned source: upstream's module, the tag's commit, the archive of it and the archive's digest. */
export const KURED = {
  name: 'kured',
  version: '1.23.0',
  module: 'github.com/kubereboot/kured',
  commit: 'ef3c90b2bd58c0571e6eae7b893f0de3709cc98f',
  archive: 'kured-1.23.0.tar.gz',
  sha256: '3fe82a09b8f7cea458a37755a4609293cbf277edf589a6dee427611bda89bd18',
  cloneEnv: 'NUO_KURED_SOURCE',
  marker: 'cmd/kured',
} as const satisfies PinnedSource & { version: string };

export interface KuredBinaries {
  kured: string;
  simInit: string;
}

/** Where both binaries go; sim-init's name carries its source's digest, so an edit rebuilds it. */
async function plan(): Promise<{ binaries: KuredBinaries; dir: string }> {
  const dir = join(cacheRoot(), 'kured', KURED.version);
  const digest = createHash('sha256');
  for (const file of ['go.mod', 'main.go']) digest.update(await readFile(join(simInitDir, file)));
  return {
    binaries: {
      kured: join(dir, 'bin', 'kured'),
      simInit: join(dir, 'bin', `sim-init-${digest.digest('hex').slice(0, 12)}`),
    },
    dir,
  };
}

/** Returns kured and sim-init, building what is missing. Throws (never skips) if it cannot. */
export async function ensureKured(
  log: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Promise<KuredBinaries> {
  const { binaries, dir } = await plan();
  if (existsSync(binaries.kured) && existsSync(binaries.simInit)) return binaries;
  await mkdir(join(dir, 'bin'), { recursive: true });
  await withLock(
    dir,
    async () => {
      if (!existsSync(binaries.kured)) {
        const source = pinnedSource(KURED, process.env, checkout, existsSync);
        await inSourceTree(KURED, source, dir, log, async (moduleDir) => {
          log(`building kured ${KURED.version} into ${dir} (its modules from the Go module proxy)`);
          // As its Makefile links it: stripped, with its version.
          const ldflags = `-s -w -X main.version=${KURED.version}`;
          await goBuild({ name: 'kured', moduleDir, pkg: './cmd/kured', ldflags }, binaries.kured, log);
        });
      }
      if (!existsSync(binaries.simInit)) {
        await goBuild(
          { name: 'sim-init', moduleDir: simInitDir, pkg: '.', ldflags: '-s -w' },
          binaries.simInit,
          log,
        );
      }
    },
    log,
  );
  return binaries;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await buildCommand({
    print: async () => (await plan()).binaries.kured,
    build: async () => {
      const built = await ensureKured();
      return `kured ${KURED.version} in ${built.kured}, sim-init in ${built.simInit}`;
    },
  });
}
