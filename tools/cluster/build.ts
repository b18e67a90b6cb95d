/**
 * Builds the local control plane's binaries from the Go modules beside this file into a cache outside
 * the repository, keyed by the pinned versions and the modules' go.sum, so a second run returns at once.
 *
 *   node tools/cluster/build.ts          build whatever is missing, with progress
 *   node tools/cluster/build.ts --print  print the cache directory and exit (no build)
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

export const BINARY_NAMES = [
  'etcd',
  'kube-apiserver',
  'kube-controller-manager',
  'kube-scheduler',
  'kubectl',
  'kwok',
  'kwok-stages',
] as const;
export type BinaryName = (typeof BINARY_NAMES)[number];

export interface ClusterBinaries {
  dir: string;
  versions: { kubernetes: string; etcd: string; kwok: string };
  path: Record<BinaryName, string>;
}

interface Target {
  name: BinaryName;
  moduleDir: string;
  pkg: string;
  ldflags: string;
}

async function requiredVersion(moduleDir: string, modulePath: string): Promise<string> {
  const gomod = await readFile(join(moduleDir, 'go.mod'), 'utf8');
  const match = gomod.match(new RegExp(`^require ${modulePath.replaceAll('.', '\\.')} (v\\S+)`, 'm'));
  if (!match?.[1]) throw new Error(`${join(moduleDir, 'go.mod')}: no "require ${modulePath} vX" line`);
  return match[1];
}

/** nuo's cache outside the repository: $NUO_CACHE_DIR, else $XDG_CACHE_HOME/nuo or ~/.cache/nuo. */
export function cacheRoot(): string {
  if (process.env.NUO_CACHE_DIR) return process.env.NUO_CACHE_DIR;
  return join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'nuo');
}

async function plan(): Promise<{ binaries: ClusterBinaries; targets: Target[] }> {
  const k8sDir = here;
  const etcdDir = join(here, 'etcd');
  const kwokDir = join(here, 'kwok');
  const versions = {
    kubernetes: await requiredVersion(k8sDir, 'k8s.io/kubernetes'),
    etcd: await requiredVersion(etcdDir, 'go.etcd.io/etcd/server/v3'),
    kwok: await requiredVersion(kwokDir, 'sigs.k8s.io/kwok'),
  };
  const [major, minor] = versions.kubernetes.replace(/^v/, '').split('.');
  // Without these the binaries report v0.0.0-master, which kubectl's version skew check and KWOK dislike.
  const k8sLdflags = [
    '-s -w',
    ...['k8s.io/component-base/version', 'k8s.io/client-go/pkg/version'].flatMap((pkg) => [
      `-X ${pkg}.gitVersion=${versions.kubernetes}`,
      `-X ${pkg}.gitMajor=${major}`,
      `-X ${pkg}.gitMinor=${minor}`,
      `-X ${pkg}.gitTreeState=clean`,
    ]),
  ].join(' ');
  const targets: Target[] = [
    { name: 'etcd', moduleDir: etcdDir, pkg: 'go.etcd.io/etcd/server/v3', ldflags: '-s -w' },
    ...(['kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kubectl'] as const).map((name) => ({
      name,
      moduleDir: k8sDir,
      pkg: `k8s.io/kubernetes/cmd/${name}`,
      ldflags: k8sLdflags,
    })),
    { name: 'kwok', moduleDir: kwokDir, pkg: 'sigs.k8s.io/kwok/cmd/kwok', ldflags: '-s -w' },
    { name: 'kwok-stages', moduleDir: kwokDir, pkg: 'nuo.dev/tools/cluster/kwok/stages', ldflags: '-s -w' },
  ];
  const hash = createHash('sha256');
  for (const file of [
    'go.mod',
    'go.sum',
    'etcd/go.mod',
    'etcd/go.sum',
    'kwok/go.mod',
    'kwok/go.sum',
    'kwok/stages/main.go',
  ]) {
    hash.update(await readFile(join(here, file)));
  }
  hash.update(JSON.stringify(targets.map((t) => [t.name, t.pkg, t.ldflags])));
  const key = `k8s-${versions.kubernetes}_etcd-${versions.etcd}_kwok-${versions.kwok}_${hash.digest('hex').slice(0, 12)}`;
  const dir = join(cacheRoot(), 'cluster', key);
  const path = Object.fromEntries(BINARY_NAMES.map((n) => [n, join(dir, 'bin', n)])) as Record<
    BinaryName,
    string
  >;
  return { binaries: { dir, versions, path }, targets };
}

function formatDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}

async function goBuild(target: Target, out: string, log: (line: string) => void): Promise<void> {
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
        env: { ...process.env, CGO_ENABLED: '0', GOFLAGS: '-mod=readonly -buildvcs=false' },
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
async function withLock<T>(dir: string, fn: () => Promise<T>, log: (line: string) => void): Promise<T> {
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

/** Returns the binaries, building any that are missing. Throws (never skips) if a build fails. */
export async function ensureClusterBinaries(
  log: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Promise<ClusterBinaries> {
  const { binaries, targets } = await plan();
  const missing = () => targets.filter((t) => !existsSync(binaries.path[t.name]));
  if (missing().length === 0) return binaries;
  await mkdir(join(binaries.dir, 'bin'), { recursive: true });
  await withLock(
    binaries.dir,
    async () => {
      const todo = missing();
      if (todo.length === 0) return;
      const started = Date.now();
      log(
        `building ${todo.map((t) => t.name).join(', ')} (Kubernetes ${binaries.versions.kubernetes}, etcd ${binaries.versions.etcd}, KWOK ${binaries.versions.kwok}) into ${binaries.dir}`,
      );
      for (const [i, target] of todo.entries()) {
        log(`[${i + 1}/${todo.length}] go build ${target.pkg}`);
        await goBuild(target, binaries.path[target.name], log);
      }
      log(`all binaries ready in ${formatDuration(Date.now() - started)}`);
    },
    log,
  );
  return binaries;
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
      process.stdout.write(`${(await plan()).binaries.dir}\n`);
    } else {
      const started = Date.now();
      const bins = await ensureClusterBinaries();
      process.stdout.write(`cluster binaries in ${bins.dir}/bin (${formatDuration(Date.now() - started)})\n`);
    }
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    process.exit(1);
  }
}
