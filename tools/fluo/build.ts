/**
 * Builds the Flatcar Linux update operator's update-agent (FLUO), unmodified, from its source at a pinned
 * commit into a cache outside the repository (<cache>/fluo/<commit>/bin/update-agent), so the testing
 * ground can run the real third-party agent on simulated nodes; a second run returns at once.
 *
 * The source is the `git archive` of that commit kept beside the checkout in ../shared/third-party/
 * (checked against its sha256; it carries FLUO's vendor/ tree, so the build downloads nothing), or a
 * clone of the same commit named by $NUO_FLUO_SOURCE. Neither there: the build fails and says how to get it.
 *
 *   node tools/fluo/build.ts          build the agent if it is missing, with progress
 *   node tools/fluo/build.ts --print  print the binary's path and exit (no build)
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, existsSync } from 'node:fs';
import { mkdir, readFile, rm } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { cacheRoot, formatDuration, goBuild, withLock } from '../go-build.ts';

const run = promisify(execFile);
const checkout = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** The pinned source: upstream's module and commit, the archive of it and the archive's digest. */
export const FLUO = {
  module: 'github.com/flatcar/flatcar-linux-update-operator',
  commit: '8dd83d71a7d4e5461c5bd4d6e5dae52397afc7f0',
  archive: 'flatcar-linux-update-operator-8dd83d71.tar.gz',
  sha256: 'fb34527dd021b17d41753107df52306f51336a53a1f0696af3957fca6a3ded97',
} as const;

export interface FluoBinary {
  path: string;
  commit: string;
}

/** Where the source comes from: the archive (to verify and unpack) or a clone to build in place. */
export type FluoSource = { kind: 'archive'; path: string } | { kind: 'checkout'; dir: string };

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

/** The directory holding the third-party archives: $NUO_THIRD_PARTY_DIR, else ../shared/third-party. */
export function thirdPartyDir(env: NodeJS.ProcessEnv, checkoutDir: string): string {
  return env.NUO_THIRD_PARTY_DIR || join(checkoutDir, '..', 'shared', 'third-party');
}

/**
 * Picks the source: a clone named by $NUO_FLUO_SOURCE, else the archive if it exists. Neither: an error
 * saying both ways to provide it, since the Go module proxy does not serve FLUO's module.
 */
export function fluoSource(
  env: NodeJS.ProcessEnv,
  checkoutDir: string,
  exists: (path: string) => boolean,
): FluoSource {
  if (env.NUO_FLUO_SOURCE) {
    if (!exists(join(env.NUO_FLUO_SOURCE, 'cmd', 'update-agent'))) {
      throw new Error(
        `NUO_FLUO_SOURCE=${env.NUO_FLUO_SOURCE} has no cmd/update-agent: point it at a clone of ${FLUO.module} checked out at ${FLUO.commit}`,
      );
    }
    return { kind: 'checkout', dir: env.NUO_FLUO_SOURCE };
  }
  const path = join(thirdPartyDir(env, checkoutDir), FLUO.archive);
  if (exists(path)) return { kind: 'archive', path };
  throw new Error(
    [
      `FLUO's source is missing: no ${path}.`,
      `The tests run FLUO's real update-agent, built from ${FLUO.module} at commit ${FLUO.commit}. Either`,
      `  put the project's archive of that commit (${FLUO.archive}, sha256 ${FLUO.sha256}) there`,
      '  (or in the directory $NUO_THIRD_PARTY_DIR names), or',
      `  git clone https://${FLUO.module} && git -C flatcar-linux-update-operator checkout ${FLUO.commit}`,
      '  and set NUO_FLUO_SOURCE to that clone.',
    ].join('\n'),
  );
}

/** Fails unless the archive is the pinned one: a different FLUO would test a different agent. */
export function checkDigest(path: string, actual: string, expected: string = FLUO.sha256): void {
  if (actual !== expected) {
    throw new Error(
      `${path}: sha256 ${actual}, expected ${expected} (FLUO ${FLUO.commit}); replace it with that commit's archive`,
    );
  }
}

async function sha256(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** A clone must be at the pinned commit. */
async function checkCommit(dir: string): Promise<void> {
  const { stdout } = await run('git', ['-C', dir, 'rev-parse', 'HEAD']).catch((err: Error) => {
    throw new Error(`NUO_FLUO_SOURCE=${dir}: not a git checkout (${err.message.split('\n')[0]})`);
  });
  if (stdout.trim() !== FLUO.commit) {
    throw new Error(`NUO_FLUO_SOURCE=${dir} is at ${stdout.trim()}; check out ${FLUO.commit}`);
  }
}

function plan(): { binary: FluoBinary; dir: string } {
  const dir = join(cacheRoot(), 'fluo', FLUO.commit);
  return {
    binary: { path: join(dir, 'bin', 'update-agent'), commit: FLUO.commit },
    dir,
  };
}

/** Returns FLUO's update-agent, building it if it is missing. Throws (never skips) if it cannot. */
export async function ensureFluoAgent(
  log: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Promise<FluoBinary> {
  const { binary, dir } = plan();
  if (existsSync(binary.path)) return binary;
  const source = fluoSource(process.env, checkout, existsSync);
  await mkdir(dirname(binary.path), { recursive: true });
  await withLock(
    dir,
    async () => {
      if (existsSync(binary.path)) return;
      let moduleDir: string;
      const unpacked = join(dir, `src-${process.pid}`);
      if (source.kind === 'archive') {
        checkDigest(source.path, await sha256(source.path));
        log(`unpacking ${source.path} into ${unpacked}`);
        await mkdir(unpacked, { recursive: true });
        await run('tar', ['-xzf', source.path, '-C', unpacked, '--strip-components=1']);
        moduleDir = unpacked;
      } else {
        await checkCommit(source.dir);
        moduleDir = source.dir;
      }
      try {
        const ldflags = fluoLdflags(await readFile(join(moduleDir, 'VERSION'), 'utf8'), FLUO.commit);
        log(`building FLUO's update-agent (${FLUO.commit.slice(0, 8)}) into ${dir}`);
        await goBuild(
          {
            name: 'update-agent',
            moduleDir,
            pkg: './cmd/update-agent',
            ldflags,
            mod: '-mod=vendor',
          },
          binary.path,
          log,
        );
      } finally {
        await rm(unpacked, { recursive: true, force: true });
      }
    },
    log,
  );
  return binary;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const unknown = args.filter((a) => a !== '--print');
  if (unknown.length > 0) {
    process.stderr.write(`build.ts: unknown argument ${unknown.join(' ')}; usage: build.ts [--print]\n`);
    process.exit(2);
  }
  try {
    if (args.includes('--print')) {
      process.stdout.write(`${plan().binary.path}\n`);
    } else {
      const started = Date.now();
      const agent = await ensureFluoAgent();
      process.stdout.write(`FLUO update-agent in ${agent.path} (${formatDuration(Date.now() - started)})\n`);
    }
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    process.exit(1);
  }
}
