/**
 * Which files the image holds, decided from the lock file, `ldd` and the package: pure functions, read
 * and copied by tools/image/stage.ts.
 */
import { USER_ID } from './spec.ts';

export interface LockFile {
  packages: Record<string, { dev?: boolean; optional?: boolean; link?: boolean }>;
}

/**
 * The lock file's production packages (paths such as node_modules/a/node_modules/b), sorted: every
 * package but the root, dev-only ones and links. Optional ones that did not install are the caller's to
 * leave out.
 */
export function productionPackages(lock: LockFile): string[] {
  return Object.entries(lock.packages)
    .filter(([path, p]) => path.startsWith('node_modules/') && !p.dev && !p.link)
    .map(([path]) => path)
    .sort();
}

const LICENCE = /^(licen[cs]e|notice|copying|authors)([.-].*)?$/i;
const NOT_RUN = /(\.d\.[cm]?ts|\.map|\.md|\.markdown|\.tsbuildinfo)$/i;
/** prebuildify's directory of one platform's native binaries: prebuilds/<platform>-<arch>[+…]/. */
const PREBUILD = /(^|\/)prebuilds\/([a-z0-9]+-[a-z0-9]+)[^/]*\//;

/**
 * Whether a file of a package (its path inside the package) ships in the image of `platform` (Node's
 * `linux-x64`, `linux-arm64`): not its nested node_modules (each nested package is a lock entry of its
 * own), not what only compilers, debuggers and readers use (declarations, source maps, Markdown), not
 * native binaries prebuilt for another platform (they never load there), always its licence.
 */
export function shipsPackageFile(path: string, platform: string): boolean {
  const parts = path.split('/');
  const name = parts.at(-1) ?? '';
  if (parts[0] === 'node_modules') return false;
  const prebuild = path.match(PREBUILD);
  if (prebuild && prebuild[2] !== platform) return false;
  if (LICENCE.test(name)) return true;
  return !NOT_RUN.test(name);
}

/** The shared libraries `ldd` names for a binary (the vDSO has no file). */
export function parseLdd(output: string): string[] {
  const libs: string[] = [];
  for (const line of output.split('\n')) {
    const resolved = line.match(/=>\s+(\/\S+)\s+\(0x/);
    const loader = line.match(/^\s*(\/\S+)\s+\(0x/);
    const path = resolved?.[1] ?? loader?.[1];
    if (path) libs.push(path);
    else if (/=>\s+not found/.test(line)) throw new Error(`ldd: ${line.trim()}`);
  }
  return libs;
}

/** /etc/passwd and /etc/group: root, and the image's user with no home and no login shell. */
export function userFiles(): { passwd: string; group: string } {
  return {
    passwd: `root:x:0:0:root:/root:/usr/sbin/nologin\nnonroot:x:${USER_ID}:${USER_ID}:nonroot:/nonexistent:/usr/sbin/nologin\n`,
    group: `root:x:0:\nnonroot:x:${USER_ID}:\n`,
  };
}

/**
 * The package.json the image ships beside dist/: what Node reads (type: module for dist/'s ESM) and nuo
 * reads (name and version, for `nuo --version`); no scripts, no dependencies to install.
 */
export function imagePackageJson(pkg: Record<string, unknown>): string {
  const keep = ['name', 'version', 'description', 'type', 'license'];
  const out = Object.fromEntries(keep.filter((k) => pkg[k] !== undefined).map((k) => [k, pkg[k]]));
  if (out.type !== 'module')
    throw new Error('package.json: nuo is ESM ("type": "module") and dist/ relies on it');
  return `${JSON.stringify(out, null, 2)}\n`;
}
