/**
 * Builds the Flatcar Linux update operator's update-agent (FLUO), unmodified, from its source at a pinned
 * commit into a cache outside the repository (<cache>/fluo/<commit>/bin/update-agent), so the testing
 * ground can run the real third-party agent on simulated nodes; a second run returns at once. A second
 * binary, update-agent-coreos, is the same source with only its key prefix set to CLUO's, standing in for
 * * CLUO's agent, whose source cannot be had here (the Go module proxy refuses it; no archive is kept).
 *
 * The source is the `git archive` of that commit kept beside the checkout in ../shared/third-party/
 * (checked against its sha256; it carries FLUO's vendor/ tree, so the build downloads nothing), or a
 * clone of the same commit named by $NUO_FLUO_SOURCE. Neither there: the build fails and says how to get it.
 *
 *   node tools/fluo/build.ts          build the agent if it is missing, with progress
 *   node tools/fluo/build.ts --print  print the binary's path and exit (no build)
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildCommand, cacheRoot, goBuild, withLock } from '../go-build.ts';
import { inSourceTree, type PinnedSource, pinnedSource } from '../third-party.ts';

const checkout = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** The pinned source: upstream's module and commit, the archive of it and the archive's digest. */
export const FLUO = {
  name: 'FLUO',
  module: 'github.com/flatcar/flatcar-linux-update-operator',
  commit: '8dd83d71a7d4e5461c5bd4d6e5dae52397afc7f0',
  archive: 'flatcar-linux-update-operator-8dd83d71.tar.gz',
  sha256: 'fb34527dd021b17d41753107df52306f51336a53a1f0696af3957fca6a3ded97',
  cloneEnv: 'NUO_FLUO_SOURCE',
  marker: 'cmd/update-agent',
} as const satisfies PinnedSource;

export interface FluoBinary {
  path: string;
  commit: string;
}

/**
 * The `-X` flags FLUO's Makefile sets: the version its VERSION file holds and the commit. The agent parses
 * the version as strict semver at start-up and exits if it cannot (so no leading "v": "v0.9.0" fails).
 */
export function fluoLdflags(versionFile: string, commit: string): string {
  const version = versionFile.trim();
  if (!/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(version)) {
    throw new Error(`FLUO's VERSION file holds "${version}", not the X.Y.Z[-pre] semver its agent requires`);
  }
  return [
    '-s -w',
    `-X ${FLUO.module}/pkg/version.Version=${version}`,
    `-X ${FLUO.module}/pkg/version.Commit=${commit}`,
  ].join(' ');
}

/**
 * The key prefixes FLUO's agent can be built with: its own, and CLUO's (CoreOS's Container Linux update
 * operator, whose agent speaks the same protocol under that prefix). The prefix is a Go constant, so
 * CLUO's variant is FLUO's source with that one constant changed, and nothing else.
 */
export const FLUO_PREFIXES = {
  flatcar: 'flatcar-linux-update.v1.flatcar-linux.net/',
  coreos: 'container-linux-update.v1.coreos.com/',
} as const;
export type FluoPrefix = keyof typeof FLUO_PREFIXES;

const CONSTANTS = 'pkg/constants/constants.go';

/** FLUO's constants.go with its key prefix set to `prefix`'s; throws unless the constant is found once. */
export function withPrefix(constants: string, prefix: FluoPrefix): string {
  const declaration = `Prefix = "${FLUO_PREFIXES.flatcar}"`;
  const count = constants.split(declaration).length - 1;
  if (count !== 1) {
    throw new Error(
      `FLUO's ${CONSTANTS} declares \`${declaration}\` ${count} times, not once: its source changed`,
    );
  }
  return constants.replace(declaration, `Prefix = "${FLUO_PREFIXES[prefix]}"`);
}

function plan(prefix: FluoPrefix): { binary: FluoBinary; dir: string } {
  const dir = join(cacheRoot(), 'fluo', FLUO.commit);
  const name = prefix === 'flatcar' ? 'update-agent' : `update-agent-${prefix}`;
  return {
    binary: { path: join(dir, 'bin', name), commit: FLUO.commit },
    dir,
  };
}

/**
 * Returns FLUO's update-agent with the key prefix `prefix` (its own by default), building it if it is
 * missing. Throws (never skips) if it cannot.
 */
export async function ensureFluoAgent(
  log: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
  prefix: FluoPrefix = 'flatcar',
): Promise<FluoBinary> {
  const { binary, dir } = plan(prefix);
  if (existsSync(binary.path)) return binary;
  const source = pinnedSource(FLUO, process.env, checkout, existsSync);
  await mkdir(dirname(binary.path), { recursive: true });
  await withLock(
    dir,
    async () => {
      if (existsSync(binary.path)) return;
      await inSourceTree(FLUO, source, dir, log, async (moduleDir) => {
        const ldflags = fluoLdflags(await readFile(join(moduleDir, 'VERSION'), 'utf8'), FLUO.commit);
        if (prefix !== 'flatcar') {
          if (source.kind === 'checkout') {
            throw new Error(
              `${FLUO.cloneEnv}: the ${prefix} variant is built from the archive only (its source is edited)`,
            );
          }
          const path = join(moduleDir, CONSTANTS);
          await writeFile(path, withPrefix(await readFile(path, 'utf8'), prefix));
        }
        log(
          `building FLUO's update-agent (${FLUO.commit.slice(0, 8)}, prefix ${FLUO_PREFIXES[prefix]}) into ${dir}`,
        );
        await goBuild(
          {
            name: binary.path.split('/').at(-1) ?? 'update-agent',
            moduleDir,
            pkg: './cmd/update-agent',
            ldflags,
            mod: '-mod=vendor',
          },
          binary.path,
          log,
        );
      });
    },
    log,
  );
  return binary;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await buildCommand({
    print: () => plan('flatcar').binary.path,
    build: async () => {
      const built = [await ensureFluoAgent(), await ensureFluoAgent(undefined, 'coreos')];
      return `FLUO update-agent in ${built.map((b) => b.path).join(' and ')}`;
    },
  });
}
