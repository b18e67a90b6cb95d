/**
 * Which build this is: nuo's version, the git revision it was built from and the Node running it, for
 * `nuo --version`, the operator's nuo_build_info metric and the image's labels.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface BuildInfo {
  version: string;
  revision: string;
  node: string;
}

/** Written by the build (tools/build-info.ts) into the compiled output: dist/build-info.json. */
export const BUILD_INFO_FILE = 'build-info.json';
export const UNKNOWN = 'unknown';

export interface GitState {
  head: string;
  /** Tracked files differ from HEAD. */
  dirty: boolean;
}

/** A commit, marked "-dirty" when tracked files differ from it: no commit holds exactly what was built. */
export function describeGit(git: GitState | undefined): string {
  if (!git || !/^[0-9a-f]{40,64}$/.test(git.head)) return UNKNOWN;
  return git.dirty ? `${git.head}-dirty` : git.head;
}

/**
 * The compiled output's revision is the one recorded when it was built (git's HEAD may have moved on
 * since); a source checkout's is git's now; anything else is unknown rather than guessed.
 */
export function chooseRevision(o: { compiled: boolean; recorded?: string; git?: GitState }): string {
  if (o.compiled) return o.recorded?.trim() || UNKNOWN;
  return describeGit(o.git);
}

export function formatVersion(info: BuildInfo): string {
  return `nuo ${info.version} (revision ${info.revision}, Node ${info.node})`;
}

/** git's view of `dir`, only where `dir` is a checkout's top: never a repository that merely contains it. */
export function readGit(dir: string): GitState | undefined {
  if (!existsSync(join(dir, '.git'))) return undefined;
  const git = (...args: string[]) =>
    execFileSync('git', args, { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  try {
    const head = git('rev-parse', 'HEAD').trim();
    const dirty = git('status', '--porcelain', '--untracked-files=no').trim() !== '';
    return { head, dirty };
  } catch {
    return undefined;
  }
}

/**
 * The nearest directory above `from` with a package.json named "nuo": the checkout's top, or an image's
 * /app (which ships package.json beside dist/ to make dist/ ESM).
 */
export function packageRoot(from: string): { dir: string; version: string } | undefined {
  for (let dir = from; ; dir = dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === 'nuo' && pkg.version) return { dir, version: pkg.version };
    } catch {
      // No package.json here (or not JSON): look one directory up.
    }
    if (dirname(dir) === dir) return undefined;
  }
}

function recordedRevision(distDir: string): string | undefined {
  try {
    const recorded = JSON.parse(readFileSync(join(distDir, BUILD_INFO_FILE), 'utf8')) as {
      revision?: string;
    };
    return recorded.revision;
  } catch {
    return undefined;
  }
}

function readBuildInfo(): BuildInfo {
  const here = dirname(fileURLToPath(import.meta.url));
  const root = packageRoot(here);
  const node = process.versions.node;
  if (!root) return { version: UNKNOWN, revision: UNKNOWN, node };
  const dist = join(root.dir, 'dist');
  const compiled = here.startsWith(`${dist}${sep}`);
  const revision = compiled
    ? chooseRevision({ compiled, recorded: recordedRevision(dist) })
    : chooseRevision({ compiled, git: readGit(root.dir) });
  return { version: root.version, revision, node };
}

let cached: BuildInfo | undefined;

/** This process's build (read once). */
export function buildInfo(): BuildInfo {
  cached ??= readBuildInfo();
  return cached;
}
