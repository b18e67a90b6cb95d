/**
 * What the Go-built tools share (tools/cluster/build.ts, tools/helm/build.ts, tools/fluo/build.ts,
 * tools/karpenter/build.ts, tools/cosign/build.ts, tools/actionlint/build.ts): the cache outside the
 * repository, the pinned version read from a go.mod, a locked `go build` of one command with progress.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';

/** One command built from a Go module: its name (the binary's), module directory, package and ldflags. */
export interface GoTarget {
  name: string;
  moduleDir: string;
  pkg: string;
  ldflags: string;
  /** How the go command finds the module's dependencies (default `-mod=readonly`: the module cache). */
  mod?: '-mod=readonly' | '-mod=vendor';
  /**
   * The go command's GOTOOLCHAIN (default: the environment's). `auto`: a module whose go.mod requires a
   * newer Go than the one installed is built with that release, which the go command fetches from the
   * Go module proxy (checked against the checksum database) into its module cache.
   */
  toolchain?: 'auto';
}

/** $NUO_CACHE_DIR, else $XDG_CACHE_HOME/nuo or ~/.cache/nuo: outside the checkout, shared by worktrees. */
export function cacheRoot(): string {
  if (process.env.NUO_CACHE_DIR) return process.env.NUO_CACHE_DIR;
  return join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'nuo');
}

/** The version a module's go.mod requires of modulePath (a `require X vN` line, or `X vN` in a block). */
export async function requiredVersion(moduleDir: string, modulePath: string): Promise<string> {
  const gomod = await readFile(join(moduleDir, 'go.mod'), 'utf8');
  const match = gomod.match(
    new RegExp(`^(?:require )?\\s*${modulePath.replaceAll('.', '\\.')} (v\\S+)`, 'm'),
  );
  if (!match?.[1]) throw new Error(`${join(moduleDir, 'go.mod')}: no "require ${modulePath} vX" line`);
  return match[1];
}

export function formatDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}

/** `go build` of one target to `out`, written under a temporary name and renamed when complete. */
export async function goBuild(target: GoTarget, out: string, log: (line: string) => void): Promise<void> {
  const tmp = `${out}.tmp-${process.pid}`;
  const args = ['build', '-trimpath', '-ldflags', target.ldflags, '-o', tmp, target.pkg];
  const started = Date.now();
  const ticker = setInterval(
    () => log(`  … ${target.name} still building (${formatDuration(Date.now() - started)})`),
    30_000,
  );
  try {
    const stderr: Buffer[] = [];
    const code = await new Promise<number | null>((resolve, reject) => {
      const child = spawn('go', args, {
        cwd: target.moduleDir,
        stdio: ['ignore', 'inherit', 'pipe'],
        env: {
          ...process.env,
          CGO_ENABLED: '0',
          GOFLAGS: `${target.mod ?? '-mod=readonly'} -buildvcs=false`,
          ...(target.toolchain ? { GOTOOLCHAIN: target.toolchain } : {}),
        },
      });
      child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
      child.on('error', (err) =>
        reject(
          new Error(
            `cannot run "go" to build ${target.name} (${err.message}); install Go ≥ 1.26 (see .ci/run)`,
          ),
        ),
      );
      child.on('exit', resolve);
    });
    if (code !== 0) {
      throw new Error(
        `go ${args.join(' ')} (in ${target.moduleDir}) exited ${code}:\n${Buffer.concat(stderr).toString()}`,
      );
    }
    await rename(tmp, out);
  } finally {
    clearInterval(ticker);
    await rm(tmp, { force: true });
  }
  log(`  ${target.name} built in ${formatDuration(Date.now() - started)}`);
}

/** Serialises builds between processes (parallel test files) with an exclusive lock directory. */
export async function withLock<T>(
  dir: string,
  fn: () => Promise<T>,
  log: (line: string) => void,
): Promise<T> {
  const lock = join(dir, '.lock');
  await mkdir(dir, { recursive: true });
  let announced = false;
  for (;;) {
    try {
      await mkdir(lock);
      await writeFile(join(lock, 'pid'), String(process.pid));
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = Number(await readFile(join(lock, 'pid'), 'utf8').catch(() => '0'));
      const age = Date.now() - (await stat(lock).catch(() => ({ mtimeMs: Date.now() }))).mtimeMs;
      if ((holder && !isAlive(holder)) || (!holder && age > 10_000)) {
        await rm(lock, { recursive: true, force: true });
        continue;
      }
      if (!announced) log(`waiting for another build (pid ${holder}) to finish…`);
      announced = true;
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
  try {
    return await fn();
  } finally {
    await rm(lock, { recursive: true, force: true });
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * A build tool's command line (`build.ts [--print]`): `--print` prints where the result goes, without
 * building; no argument builds what is missing and prints what `build` returns, with the time it took.
 * A failure prints its message and exits 1; an unknown argument exits 2.
 */
export async function buildCommand(o: {
  print: () => string | Promise<string>;
  build: () => Promise<string>;
}): Promise<void> {
  const args = process.argv.slice(2);
  const unknown = args.filter((a) => a !== '--print');
  if (unknown.length > 0) {
    process.stderr.write(`build.ts: unknown argument ${unknown.join(' ')}; usage: build.ts [--print]\n`);
    process.exit(2);
  }
  try {
    if (args.includes('--print')) {
      process.stdout.write(`${await o.print()}\n`);
    } else {
      const started = Date.now();
      const what = await o.build();
      process.stdout.write(`${what} (${formatDuration(Date.now() - started)})\n`);
    }
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    process.exit(1);
  }
}

/** One command of a pinned Go module, built into the cache under `<cacheName>/<name>-<version>_<hash>`. */
export interface PinnedCommand {
  name: string;
  /** The module directory holding go.mod, go.sum and tools.go. */
  moduleDir: string;
  /** The module go.mod requires directly, whose version names the build. */
  modulePath: string;
  pkg: string;
  /** The `-X` flags its own release build sets, given the version. */
  ldflags: (version: string) => string;
}

async function planCommand(c: PinnedCommand): Promise<BuildPlan> {
  const version = await requiredVersion(c.moduleDir, c.modulePath);
  const target: GoTarget = { name: c.name, moduleDir: c.moduleDir, pkg: c.pkg, ldflags: c.ldflags(version) };
  const hash = createHash('sha256');
  for (const file of ['go.mod', 'go.sum', 'tools.go']) hash.update(await readFile(join(c.moduleDir, file)));
  hash.update(JSON.stringify([target.pkg, target.ldflags]));
  const dir = join(cacheRoot(), c.name, `${c.name}-${version}_${hash.digest('hex').slice(0, 12)}`);
  return { path: join(dir, 'bin', c.name), target, dir };
}

/** Where a Go build goes: the binary's path, what to build, and the cache directory locked while building. */
export interface BuildPlan {
  path: string;
  target: GoTarget;
  dir: string;
}

/** The planned binary's path, built first if missing (once, across processes). Throws if the build fails. */
export async function ensureBuilt(
  { path, target, dir }: BuildPlan,
  what: string,
  log: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Promise<string> {
  if (existsSync(path)) return path;
  await mkdir(dirname(path), { recursive: true });
  await withLock(
    dir,
    async () => {
      if (existsSync(path)) return;
      log(`building ${what} into ${dir}`);
      await goBuild(target, path, log);
    },
    log,
  );
  return path;
}

/**
 * Builds, once across processes (under `dir`'s lock), each target whose binary (`pathOf`) is missing, one
 * after another with progress; `what` names them in the log ("Kubernetes v1.37.1, etcd …"). Throws if a
 * build fails.
 */
export async function buildMissing<T extends GoTarget>(
  dir: string,
  targets: readonly T[],
  pathOf: (t: T) => string,
  what: string,
  log: (line: string) => void,
): Promise<void> {
  const missing = () => targets.filter((t) => !existsSync(pathOf(t)));
  if (missing().length === 0) return;
  await mkdir(join(dir, 'bin'), { recursive: true });
  await withLock(
    dir,
    async () => {
      const todo = missing();
      if (todo.length === 0) return;
      const started = Date.now();
      log(`building ${todo.map((t) => t.name).join(', ')} (${what}) into ${dir}`);
      for (const [i, target] of todo.entries()) {
        log(`[${i + 1}/${todo.length}] go build ${target.pkg}`);
        await goBuild(target, pathOf(target), log);
      }
      log(`${todo.map((t) => t.name).join(', ')} ready in ${formatDuration(Date.now() - started)}`);
    },
    log,
  );
}

/** A pinned command's path, built first if missing (once, across processes). Throws if the build fails. */
export async function ensureCommand(
  c: PinnedCommand,
  log: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Promise<string> {
  return ensureBuilt(await planCommand(c), `${c.name} (${c.modulePath})`, log);
}

/** `build.ts [--print]` for a pinned command (see buildCommand). */
export async function commandMain(c: PinnedCommand): Promise<void> {
  await buildCommand({
    print: async () => (await planCommand(c)).path,
    build: async () => `${c.name} in ${await ensureCommand(c)}`,
  });
}
