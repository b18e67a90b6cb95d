/**
 * Lays out the image's files, one directory per layer, each the root of that layer's part of the image:
 *
 *   node tools/image/stage.ts OUT_DIR      (the Containerfile runs this; tools/image/build.ts calls stage())
 *
 * The compiled entry with its revision, the production packages of the lock file, and the runtime of the
 * architecture (tools/image/runtime.ts): Node, nsenter and the shared libraries these two need. Modes are normalised
 * and every file gets the same modification time, so the same inputs give the same layers.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BUILD_INFO_FILE, packageRoot } from '../../src/util/build-info.ts';
import { checkoutRevision } from '../build-info.ts';
import { imagePackageJson, type LockFile, productionPackages, shipsPackageFile, userFiles } from './files.ts';
import { foreignRuntime, hostRuntime } from './runtime.ts';
import { APP_DIR, LAYERS, type Layer, layerOf, nodeArchitecture, ociArchitecture } from './spec.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
/** Every file's modification time: fixed, so unchanged files make unchanged layers. */
const MTIME = new Date('2000-01-01T00:00:00Z');

export interface Staged {
  dir: string;
  /** Each layer's directory, the image's / for that layer. */
  layers: Record<Layer, string>;
  version: string;
  revision: string;
  /** sha256 over every staged path, mode and content: equal digests, equal image contents. */
  digest: string;
  /** Bytes of all staged files (the image unpacked). */
  bytes: number;
}

class Stage {
  readonly #lines: string[] = [];
  /** Directories whose mode is not 0755. */
  readonly modes = new Map<string, number>();
  bytes = 0;
  readonly dir: string;
  constructor(dir: string) {
    this.dir = dir;
  }

  #target(path: string): string {
    return join(this.dir, layerOf(path), path);
  }

  #record(path: string, mode: number, content: Buffer | string) {
    const hash = createHash('sha256').update(content).digest('hex');
    this.#lines.push(`${path} ${mode.toString(8)} ${hash}`);
  }

  file(path: string, content: Buffer | string, mode = 0o644) {
    const target = this.#target(path);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, content);
    chmodSync(target, mode);
    this.#record(path, mode, content);
    this.bytes += Buffer.byteLength(content);
  }

  /** A host file, its executable bit kept and nothing else of its mode. */
  copy(path: string, from: string) {
    const mode = lstatSync(from).mode & 0o111 ? 0o755 : 0o644;
    this.file(path, readFileSync(from), mode);
  }

  directory(path: string, mode: number) {
    const target = this.#target(path);
    mkdirSync(target, { recursive: true });
    this.modes.set(target, mode);
    this.#record(path, mode, '');
  }

  digest(): string {
    return createHash('sha256').update(this.#lines.sort().join('\n')).digest('hex');
  }
}

/** Every regular file under `dir`, relative to it; anything else (a link, a socket) is an error. */
function filesUnder(dir: string, prefix = ''): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(join(dir, prefix), { withFileTypes: true })) {
    const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) out.push(...filesUnder(dir, rel));
    else if (entry.isFile()) out.push(rel);
    else throw new Error(`${join(dir, rel)}: neither a file nor a directory; the image copies only those`);
  }
  return out;
}

/** Directories 0755 unless staged with a mode of their own; every entry the same modification time. */
function normalise(dir: string, modes: Map<string, number>) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) normalise(path, modes);
    utimesSync(path, MTIME, MTIME);
  }
  chmodSync(dir, modes.get(dir) ?? 0o755);
  utimesSync(dir, MTIME, MTIME);
}

/** This machine's architecture, by OCI's name. */
export const hostArchitecture = () => ociArchitecture(process.arch);

/**
 * Stages the image of `architecture` into `dir` (emptied first); `revision` defaults to this checkout's.
 */
export function stage(dir: string, revision = checkoutRevision(), architecture = hostArchitecture()): Staged {
  rmSync(dir, { recursive: true, force: true });
  const s = new Stage(dir);
  const version = packageRoot(root)?.version;
  if (!version) throw new Error(`${root}: no package.json named nuo with a version`);

  // nuo: the compiled entry, its revision, and the package.json that makes dist/ ESM.
  const dist = join(dir, '.tsc');
  const tsc = spawnSync(
    process.execPath,
    [
      join(root, 'node_modules/typescript/bin/tsc'),
      '-p',
      join(root, 'tsconfig.build.json'),
      '--outDir',
      dist,
    ],
    { encoding: 'utf8' },
  );
  if (tsc.status !== 0) throw new Error(`tsc -p tsconfig.build.json failed:\n${tsc.stdout}${tsc.stderr}`);
  for (const rel of filesUnder(dist)) s.copy(`${APP_DIR}/dist/${rel}`, join(dist, rel));
  rmSync(dist, { recursive: true });
  s.file(`${APP_DIR}/dist/${BUILD_INFO_FILE}`, `${JSON.stringify({ version, revision }, null, 2)}\n`);
  s.file(
    `${APP_DIR}/package.json`,
    imagePackageJson(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))),
  );

  // dependencies: the lock file's production packages that are installed (an optional one may not be).
  const nodePlatform = `linux-${nodeArchitecture(architecture)}`;
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as LockFile;
  for (const pkg of productionPackages(lock)) {
    const from = join(root, pkg);
    if (!existsSync(from)) continue;
    for (const rel of filesUnder(from).filter((rel) => shipsPackageFile(rel, nodePlatform)))
      s.copy(`${APP_DIR}/${pkg}/${rel}`, join(from, rel));
  }

  // runtime: Node, nsenter, their shared libraries, the users, /tmp.
  const nodeVersion = (
    JSON.parse(readFileSync(join(root, 'node_modules/node/package.json'), 'utf8')) as { version: string }
  ).version;
  const runtime =
    architecture === hostArchitecture() ? hostRuntime(root) : foreignRuntime(architecture, nodeVersion);
  for (const [path, from] of Object.entries(runtime.files).sort(([a], [b]) => a.localeCompare(b)))
    s.copy(path, from);
  const users = userFiles();
  s.file('/etc/passwd', users.passwd);
  s.file('/etc/group', users.group);
  s.directory('/tmp', 0o1777);

  const layers = Object.fromEntries(LAYERS.map((l) => [l, join(dir, l)])) as Record<Layer, string>;
  for (const layer of Object.values(layers)) normalise(layer, s.modes);
  return { dir, layers, version, revision, digest: s.digest(), bytes: s.bytes };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const out = process.argv[2];
  if (!out) throw new Error('usage: node tools/image/stage.ts OUT_DIR');
  const staged = stage(resolve(out));
  process.stdout.write(
    `staged nuo ${staged.version} (revision ${staged.revision}) in ${staged.dir}: ${LAYERS.join(', ')}; ${(staged.bytes / 2 ** 20).toFixed(1)} MiB\n`,
  );
}
