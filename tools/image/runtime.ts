/**
 * Where the image's runtime files come from, per architecture: Node, nsenter and the shared libraries they
 * load, as image path → file on this machine. The machine's own architecture takes them from this machine
 * (the `node` devDependency's binary, util-linux's nsenter, `ldd`). Another architecture takes Node from
 * the npm registry's package of that platform (the one the `node` package installs there) and nsenter and
 * the libraries from Debian's packages of that architecture, unpacked into a cache; the libraries are
 * those its own loader lists, run under qemu-user-static.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { cacheRoot } from '../go-build.ts';
import { parseLdd } from './files.ts';
import { NODE_PATH, NSENTER_PATH, nodeArchitecture } from './spec.ts';

export interface RuntimeFiles {
  /** Image path → the file on this machine whose content it gets. */
  files: Record<string, string>;
}

/**
 * The npm package whose binary is Node on an OCI architecture: the one the `node` package installs there,
 * at the `node` devDependency's version.
 */
export const nodePackage = (architecture: string) => `node-linux-${nodeArchitecture(architecture)}`;

/** What an architecture other than this machine's takes from the registries. */
export interface ForeignPlatform {
  /** sha512 integrity of its nodePackage, by version: a new Node version is pinned here on purpose. */
  nodeIntegrity: Record<string, string>;
  /** Debian's name of the architecture. */
  debianArch: string;
  /** The loader, as the binaries name their interpreter. */
  loader: string;
  /** The qemu-user-static emulator that runs this architecture's binaries here. */
  qemu: string;
}

/**
 * Debian packages holding nsenter and every library Node and nsenter load (libc6: the loader, libc, libm,
 * libdl, libpthread; libstdc++6 and libgcc-s1: Node's C++ runtime; libselinux1 and libpcre2-8-0:
 * nsenter's): what another architecture's image takes them from, and what the SBOM names.
 */
export const DEBIAN_PACKAGES = [
  'libc6',
  'libstdc++6',
  'libgcc-s1',
  'util-linux',
  'libselinux1',
  'libpcre2-8-0',
];

export const FOREIGN: Record<string, ForeignPlatform> = {
  arm64: {
    nodeIntegrity: {
      '24.21.0':
        'sha512-FpJRPEz2OvvTLfjIOlNGFY9JLPMKgl5m+d4oGYBLg24kJ1mmvN1Zl/HPJgF4HDaJ51ISev1l1cRZ/DM+keXW5g==',
    },
    debianArch: 'arm64',
    loader: '/lib/ld-linux-aarch64.so.1',
    qemu: 'qemu-aarch64-static',
  },
};

function which(name: string): string {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/bin', '/usr/sbin'];
  const found = dirs
    .filter(Boolean)
    .map((dir) => join(dir, name))
    .find((path) => existsSync(path));
  if (!found)
    throw new Error(`${name} not found on PATH or in /usr/bin, /usr/sbin (Debian package util-linux)`);
  return found;
}

/** This machine's Node (the `node` devDependency), nsenter, and the libraries `ldd` names for them. */
export function hostRuntime(root: string): RuntimeFiles {
  const binaries = {
    [NODE_PATH]: join(root, 'node_modules/node/bin/node'),
    [NSENTER_PATH]: which('nsenter'),
  };
  const files: Record<string, string> = {};
  for (const [path, from] of Object.entries(binaries)) {
    files[path] = realpathSync(from);
    for (const lib of parseLdd(execFileSync('ldd', [from], { encoding: 'utf8' })))
      files[lib] = realpathSync(lib);
  }
  return { files };
}

/** The integrity string (sha512, base64) of a file, as npm's lock file and registry give it. */
function integrity(path: string): string {
  return `sha512-${createHash('sha512').update(readFileSync(path)).digest('base64')}`;
}

function run(command: string, args: string[], o: { cwd?: string; hint: string }): string {
  try {
    return execFileSync(command, args, { cwd: o.cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const e = err as { code?: string; stderr?: string; message: string };
    const why = e.code === 'ENOENT' ? `${command} not found` : e.stderr?.trim() || e.message;
    throw new Error(`${command} ${args.join(' ')} failed: ${why}\n${o.hint}`);
  }
}

/** Node of the platform's npm package, verified against its pinned integrity, unpacked into the cache. */
function foreignNode(p: ForeignPlatform, architecture: string, version: string, dir: string): string {
  const pkg = nodePackage(architecture);
  const node = join(dir, `${pkg}-${version}`, 'package', 'bin', 'node');
  if (existsSync(node)) return node;
  const expected = p.nodeIntegrity[version];
  if (!expected)
    throw new Error(
      `no pinned integrity of ${pkg}@${version} (the node devDependency's version) in tools/image/runtime.ts: add the one \`npm view ${pkg}@${version} dist.integrity\` prints`,
    );
  const work = `${dirname(dirname(dirname(node)))}.tmp-${process.pid}`;
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  const tgz = join(
    work,
    run('npm', ['pack', '--silent', `${pkg}@${version}`], {
      cwd: work,
      hint: 'npm fetches the package from the npm registry',
    }).trim(),
  );
  const actual = integrity(tgz);
  if (actual !== expected)
    throw new Error(`${pkg}@${version}: integrity ${actual}, pinned ${expected}; not used`);
  run('tar', ['-xzf', tgz, '-C', work, 'package/bin/node'], { hint: '' });
  rmSync(tgz);
  renameSync(work, dirname(dirname(dirname(node))));
  return node;
}

/** The platform's Debian packages, at the versions apt offers, unpacked into one root in the cache. */
function foreignDebianRoot(p: ForeignPlatform, dir: string): string {
  const hint = `enable the architecture and refresh apt's lists: dpkg --add-architecture ${p.debianArch} && apt-get update (.ci/run does)`;
  const names = DEBIAN_PACKAGES.map((name) => `${name}:${p.debianArch}`);
  const versions = JSON.stringify(debianVersions(p.debianArch));
  const key = createHash('sha256').update(versions).digest('hex').slice(0, 16);
  const sysroot = join(dir, `debian-${p.debianArch}-${key}`);
  if (existsSync(sysroot)) return sysroot;
  const work = `${sysroot}.tmp-${process.pid}`;
  rmSync(work, { recursive: true, force: true });
  mkdirSync(join(work, 'debs'), { recursive: true });
  run('apt-get', ['download', ...names], { cwd: join(work, 'debs'), hint });
  for (const deb of readdirSync(join(work, 'debs')))
    run('dpkg-deb', ['-x', join(work, 'debs', deb), join(work, 'root')], { hint: '' });
  renameSync(join(work, 'root'), sysroot);
  rmSync(work, { recursive: true, force: true });
  return sysroot;
}

/** dpkg-query's output in apt-cache show's form. */
// biome-ignore lint/suspicious/noTemplateCurlyInString: dpkg-query's own ${field} syntax, not JavaScript's
const DPKG_QUERY_FORMAT = 'Package: ${Package}\nVersion: ${Version}\n\n';

/** `apt-cache show` output's packages and versions. */
export function parseAptShow(output: string): Record<string, string> {
  const found: Record<string, string> = {};
  for (const stanza of output.split(/\n\s*\n/)) {
    const name = stanza.match(/^Package: (\S+)$/m)?.[1];
    const version = stanza.match(/^Version: (\S+)$/m)?.[1];
    if (name && version) found[name] = version;
  }
  return found;
}

/**
 * The versions of DEBIAN_PACKAGES an image of `debianArch` holds: this machine's installed ones for its
 * own architecture, the ones apt offers (and the foreign root unpacks) for another.
 */
export function debianVersions(debianArch: string): Record<string, string> {
  const hint = `enable the architecture and refresh apt's lists: dpkg --add-architecture ${debianArch} && apt-get update (.ci/run does)`;
  const native = run('dpkg', ['--print-architecture'], { hint: '' }).trim() === debianArch;
  const names = DEBIAN_PACKAGES.map((name) => `${name}:${debianArch}`);
  const output = native
    ? run('dpkg-query', ['-W', `-f=${DPKG_QUERY_FORMAT}`, ...names], { hint: '' })
    : run('apt-cache', ['show', '--no-all-versions', ...names], { hint });
  const versions = parseAptShow(output);
  const missing = DEBIAN_PACKAGES.filter((name) => !versions[name]);
  if (missing.length > 0)
    throw new Error(`no ${debianArch} version of ${missing.join(', ')} known to apt. ${hint}`);
  return versions;
}

/** A path the foreign loader printed, as the image sees it (the loader's own is printed with the root). */
export function imagePath(printed: string, sysroot: string): string {
  return printed.startsWith(`${sysroot}/`) ? printed.slice(sysroot.length) : printed;
}

/** A file inside the unpacked Debian root, its links followed but never out of the root. */
function insideRoot(sysroot: string, path: string): string {
  const real = realpathSync(join(sysroot, path));
  if (!real.startsWith(`${sysroot}/`))
    throw new Error(
      `${path} in ${sysroot} links out of it (to ${real}); the image takes files of the root only`,
    );
  return real;
}

/** Node of the platform's npm package, nsenter and the libraries of its Debian packages. */
export function foreignRuntime(architecture: string, nodeVersion: string): RuntimeFiles {
  const p = FOREIGN[architecture];
  if (!p)
    throw new Error(
      `no source of an ${architecture} runtime: tools/image/runtime.ts knows ${Object.keys(FOREIGN).join(', ')}`,
    );
  const dir = join(cacheRoot(), `image-${architecture}`);
  mkdirSync(dir, { recursive: true });
  const node = foreignNode(p, architecture, nodeVersion, dir);
  const sysroot = foreignDebianRoot(p, dir);
  const nsenter = join(sysroot, NSENTER_PATH);
  const files: Record<string, string> = {
    [NODE_PATH]: node,
    [NSENTER_PATH]: insideRoot(sysroot, NSENTER_PATH),
  };
  for (const binary of [node, nsenter]) {
    const listed = run(p.qemu, ['-L', sysroot, join(sysroot, p.loader), '--list', binary], {
      hint: `install Debian's qemu-user-static (.ci/run does): its ${p.qemu} runs the ${architecture} loader here`,
    });
    for (const printed of parseLdd(listed)) {
      const path = imagePath(printed, sysroot);
      files[path] = insideRoot(sysroot, path);
    }
  }
  return { files };
}
