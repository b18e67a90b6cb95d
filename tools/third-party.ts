/**
 * What the builds of third-party components from pinned source share (tools/fluo/build.ts,
 * tools/kured/build.ts): where the source comes from (the project's `git archive` of the pinned commit in
 * ../shared/third-party, checked against its sha256, or a clone named by an environment variable), the
 * error that says how to get it when neither is there, and a source tree to build in.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** One third-party component's pinned source. */
export interface PinnedSource {
  /** How messages name it: "FLUO", "kured". */
  name: string;
  /** Its Go module path, also where upstream's repository is cloned from (https://<module>). */
  module: string;
  commit: string;
  /** The archive's file name in the third-party directory. */
  archive: string;
  sha256: string;
  /** The environment variable that names a clone to build instead of the archive. */
  cloneEnv: string;
  /** A path every checkout of the component holds: the command built. */
  marker: string;
}

/** Where the source comes from: the archive (to verify and unpack) or a clone to build in place. */
export type SourceLocation = { kind: 'archive'; path: string } | { kind: 'checkout'; dir: string };

/** The directory holding the third-party archives: $NUO_THIRD_PARTY_DIR, else ../shared/third-party. */
export function thirdPartyDir(env: NodeJS.ProcessEnv, checkoutDir: string): string {
  return env.NUO_THIRD_PARTY_DIR || join(checkoutDir, '..', 'shared', 'third-party');
}

/**
 * Picks the source: a clone named by the pin's variable, else the archive if it exists. Neither: an error
 * saying both ways to provide it, since the Go module proxy here does not serve these modules' sources.
 */
export function pinnedSource(
  pin: PinnedSource,
  env: NodeJS.ProcessEnv,
  checkoutDir: string,
  exists: (path: string) => boolean,
): SourceLocation {
  const clone = env[pin.cloneEnv];
  if (clone) {
    if (!exists(join(clone, pin.marker))) {
      throw new Error(
        `${pin.cloneEnv}=${clone} has no ${pin.marker}: point it at a clone of ${pin.module} checked out at ${pin.commit}`,
      );
    }
    return { kind: 'checkout', dir: clone };
  }
  const path = join(thirdPartyDir(env, checkoutDir), pin.archive);
  if (exists(path)) return { kind: 'archive', path };
  const repo = pin.module.split('/').at(-1);
  throw new Error(
    [
      `${pin.name}'s source is missing: no ${path}.`,
      `The tests run ${pin.name}'s real binary, built from ${pin.module} at commit ${pin.commit}. Either`,
      `  put the project's archive of that commit (${pin.archive}, sha256 ${pin.sha256}) there`,
      '  (or in the directory $NUO_THIRD_PARTY_DIR names), or',
      `  git clone https://${pin.module} && git -C ${repo} checkout ${pin.commit}`,
      `  and set ${pin.cloneEnv} to that clone.`,
    ].join('\n'),
  );
}

/** Fails unless the archive is the pinned one: a different version would test a different program. */
export function checkDigest(pin: PinnedSource, path: string, actual: string): void {
  if (actual !== pin.sha256) {
    throw new Error(
      `${path}: sha256 ${actual}, expected ${pin.sha256} (${pin.name} ${pin.commit}); replace it with that commit's archive`,
    );
  }
}

async function sha256(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** A clone must be at the pinned commit. */
async function checkCommit(pin: PinnedSource, dir: string): Promise<void> {
  const { stdout } = await run('git', ['-C', dir, 'rev-parse', 'HEAD']).catch((err: Error) => {
    throw new Error(`${pin.cloneEnv}=${dir}: not a git checkout (${err.message.split('\n')[0]})`);
  });
  if (stdout.trim() !== pin.commit) {
    throw new Error(`${pin.cloneEnv}=${dir} is at ${stdout.trim()}; check out ${pin.commit}`);
  }
}

/**
 * Runs `build` in the pinned source tree: the archive verified and unpacked into a directory of `workDir`
 * (removed after), or the clone checked to be at the pinned commit.
 */
export async function inSourceTree<T>(
  pin: PinnedSource,
  source: SourceLocation,
  workDir: string,
  log: (line: string) => void,
  build: (moduleDir: string) => Promise<T>,
): Promise<T> {
  if (source.kind === 'checkout') {
    await checkCommit(pin, source.dir);
    return build(source.dir);
  }
  checkDigest(pin, source.path, await sha256(source.path));
  const unpacked = join(workDir, `src-${process.pid}`);
  log(`unpacking ${source.path} into ${unpacked}`);
  await mkdir(unpacked, { recursive: true });
  try {
    await run('tar', ['-xzf', source.path, '-C', unpacked, '--strip-components=1']);
    return await build(unpacked);
  } finally {
    await rm(unpacked, { recursive: true, force: true });
  }
}
