/**
 * The VM node image: a Debian bookworm root file system made by mmdebstrap from Debian's packages, with
 * the Go-built kubelet, kube-proxy and containerd, the sandbox image, and the units and configuration in
 * rootfs/, written to an ext4 disk image by `mkfs.ext4 -d` (no mount). The kernel and initrd are taken
 * out beside it for qemu's -kernel/-initrd, and manifest.json records every version inside.
 *
 * Cached in two steps: mmdebstrap's tarball under <cache>/vm-base/<key> (keyed by its command line: the
 * package list and mirrors), and the image under <cache>/vm/<key> (keyed by the base, rootfs/, this code
 * and the binaries' own key), so a second build returns at once and a change to nuo's parts redoes only
 * the last step. Debian's packages are whatever the mirror serves on the day of the base's build,
 * recorded in the manifest.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, copyFile, mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { cacheRoot, formatDuration, withLock } from '../go-build.ts';
import { ensureVmBinaries, type VmBinaries } from './binaries.ts';
import { VM_PACKAGES } from './packages.ts';
import { buildPauseLayout, PAUSE_IMAGE, tarLayout } from './pause-image.ts';

const exec = promisify(execFile);
// biome-ignore lint/suspicious/noTemplateCurlyInString: dpkg-query's own ${field} syntax, not JavaScript's
const DPKG_FORMAT = '${Package}\t${Version}\n';
const here = dirname(fileURLToPath(import.meta.url));

/** Debian's archives the image is made from: the release, its updates and its security fixes. */
const MIRRORS = [
  'deb http://deb.debian.org/debian bookworm main',
  'deb http://deb.debian.org/debian bookworm-updates main',
  'deb http://deb.debian.org/debian-security bookworm-security main',
];

/** Units rootfs/ adds, enabled in the image (Debian's ssh.service enables itself). */
const UNITS = [
  'systemd-networkd.service',
  'nuo-config.service',
  'containerd.service',
  'nuo-sandbox-image.service',
  'kubelet.service',
  'kube-proxy.service',
];

/** Free space left in the root file system for images, containers and logs. */
const FREE_BYTES = 3 * 2 ** 30;

export interface VmImage {
  dir: string;
  /** The raw ext4 disk image each VM's qcow2 overlay is backed by (never written to). */
  rootfs: string;
  kernel: string;
  initrd: string;
  /** The sandbox image's OCI layout (tag "1"), which tests may also push to a registry. */
  pauseLayout: string;
  manifest: VmManifest;
}

export interface VmManifest {
  built: string;
  buildSeconds: number;
  kubernetes: string;
  containerd: string;
  runc: string;
  kernel: string;
  pauseImage: { name: string; digest: string };
  debian: { suite: string; mirrors: string[]; packages: Record<string, string> };
}

async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await listFiles(path)));
    else out.push(path);
  }
  return out.sort();
}

/** The mmdebstrap command line, whose every argument but the target keys the base. */
function mmdebstrapArgs(target: string): string[] {
  return [
    '--mode=root',
    '--variant=minbase',
    `--include=${Object.keys(VM_PACKAGES).sort().join(',')}`,
    '--aptopt=APT::Install-Recommends "false"',
    // Docs, man pages and translations: a smaller image, nothing on a node reads them.
    '--dpkgopt=path-exclude=/usr/share/{doc,man,info,locale}/*',
    'bookworm',
    target,
    ...MIRRORS,
  ];
}

function baseTarball(): string {
  const key = createHash('sha256')
    .update(JSON.stringify(mmdebstrapArgs('')))
    .digest('hex')
    .slice(0, 12);
  return join(cacheRoot(), 'vm-base', `bookworm_${key}`, 'rootfs.tar');
}

/**
 * The Debian root file system alone, as mmdebstrap's tarball, cached apart from the image: changing
 * nuo's units, configuration or binaries rebuilds the image from it in a minute, not from the mirror.
 */
async function ensureBase(log: (line: string) => void): Promise<string> {
  const key = createHash('sha256')
    .update(JSON.stringify(mmdebstrapArgs('')))
    .digest('hex')
    .slice(0, 12);
  const dir = join(cacheRoot(), 'vm-base', `bookworm_${key}`);
  const tarball = join(dir, 'rootfs.tar');
  if (existsSync(tarball)) return tarball;
  await withLock(
    dir,
    async () => {
      if (existsSync(tarball)) return;
      const started = Date.now();
      log(`mmdebstrap: Debian bookworm with ${Object.keys(VM_PACKAGES).length} packages into ${tarball}`);
      const ticker = setInterval(
        () => log(`  … mmdebstrap still running (${formatDuration(Date.now() - started)})`),
        30_000,
      );
      const tmp = join(dir, `rootfs.tar.tmp-${process.pid}.tar`);
      try {
        await run('mmdebstrap', mmdebstrapArgs(tmp), 'the VM root file system');
        await rename(tmp, tarball);
      } finally {
        clearInterval(ticker);
        await rm(tmp, { force: true });
      }
      log(`  Debian root file system made in ${formatDuration(Date.now() - started)}`);
    },
    log,
  );
  return tarball;
}

async function imageKey(binaries: VmBinaries, base: string): Promise<string> {
  const hash = createHash('sha256');
  hash.update(JSON.stringify({ UNITS, FREE_BYTES }));
  hash.update(base);
  hash.update(binaries.key);
  for (const file of [
    ...(await listFiles(join(here, 'rootfs'))),
    join(here, 'image.ts'),
    join(here, 'pause-image.ts'),
  ]) {
    hash.update(relative(here, file));
    hash.update(String((await stat(file)).mode & 0o111));
    hash.update(await readFile(file));
  }
  return hash.digest('hex').slice(0, 12);
}

async function run(cmd: string, args: string[], what: string): Promise<string> {
  try {
    return (await exec(cmd, args, { maxBuffer: 64 * 2 ** 20 })).stdout;
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string };
    if (e.code === 'ENOENT') {
      throw new Error(`${cmd} not found (${what}): install its Debian package (.ci/run does)`);
    }
    throw new Error(`${what}: ${cmd} ${args.join(' ')} failed:\n${(e.stderr ?? e.message).slice(-4000)}`);
  }
}

/** The one file in `dir` whose name starts with `prefix` (the kernel's and the initrd's). */
async function only(dir: string, prefix: string): Promise<string> {
  const found = (await readdir(dir)).filter((f) => f.startsWith(prefix));
  if (found.length !== 1) throw new Error(`${dir}: ${found.length} files named ${prefix}*, expected one`);
  return join(dir, found[0] as string);
}

async function planImage(binaries: VmBinaries, base: string): Promise<Omit<VmImage, 'manifest'>> {
  const key = await imageKey(binaries, base);
  const dir = join(cacheRoot(), 'vm', `bookworm-k8s-${binaries.versions.kubernetes}_${key}`);
  return {
    dir,
    rootfs: join(dir, 'rootfs.img'),
    kernel: join(dir, 'vmlinuz'),
    initrd: join(dir, 'initrd.img'),
    pauseLayout: join(dir, 'pause-oci'),
  };
}

export async function vmImageDir(): Promise<string> {
  return (await planImage(await ensureVmBinaries(), baseTarball())).dir;
}

/** Returns the image, building it first if missing (once, across processes). Throws if the build fails. */
export async function ensureVmImage(
  log: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Promise<VmImage> {
  const binaries = await ensureVmBinaries(log);
  const base = await ensureBase(log);
  const image = await planImage(binaries, base);
  const manifestPath = join(image.dir, 'manifest.json');
  const read = async (): Promise<VmImage> => ({
    ...image,
    manifest: JSON.parse(await readFile(manifestPath, 'utf8')) as VmManifest,
  });
  if (existsSync(manifestPath)) return read();
  await withLock(
    image.dir,
    async () => {
      if (existsSync(manifestPath)) return;
      await buildImage(binaries, base, image, manifestPath, log);
    },
    log,
  );
  return read();
}

async function buildImage(
  binaries: VmBinaries,
  base: string,
  image: Omit<VmImage, 'manifest'>,
  manifestPath: string,
  log: (line: string) => void,
): Promise<void> {
  const started = Date.now();
  const work = join(image.dir, `work-${process.pid}`);
  const root = join(work, 'root');
  await rm(work, { recursive: true, force: true });
  await mkdir(work, { recursive: true });
  try {
    await mkdir(root);
    await run('tar', ['-xf', base, '-C', root], 'unpacking the Debian root file system');
    log(`VM image: nuo's parts into the Debian root file system in ${root}`);
    await run('cp', ['-R', '--preserve=mode', `${join(here, 'rootfs')}/.`, root], 'rootfs/ into the image');
    for (const name of ['kubelet', 'kube-proxy', 'containerd', 'containerd-shim-runc-v2', 'ctr'] as const) {
      await copyFile(binaries.path[name], join(root, 'usr/local/bin', name));
      await chmod(join(root, 'usr/local/bin', name), 0o755);
    }
    const created = new Date().toISOString();
    const pauseLayout = join(work, 'pause-oci');
    const pauseDigest = buildPauseLayout(binaries.path.pause, pauseLayout, created);
    await mkdir(join(root, 'usr/share/nuo'), { recursive: true });
    tarLayout(pauseLayout, join(root, 'usr/share/nuo/pause.oci.tar'));
    // The image's own systemctl and systemd-sysusers, run in a chroot: they only edit files there.
    await run('chroot', [root, 'systemctl', 'enable', ...UNITS], 'enabling the units');
    await run('chroot', [root, 'systemd-sysusers'], "creating rootfs/'s system users");
    // Each VM makes its own machine ID on its first boot.
    await writeFile(join(root, 'etc/machine-id'), '');
    await rm(join(root, 'var/lib/dbus/machine-id'), { force: true });

    const packages = Object.fromEntries(
      (
        await run(
          'dpkg-query',
          [`--admindir=${join(root, 'var/lib/dpkg')}`, '-W', '-f', DPKG_FORMAT],
          'the installed packages',
        )
      )
        .trim()
        .split('\n')
        .map((line) => line.split('\t') as [string, string]),
    );
    const kernelPath = await only(join(root, 'boot'), 'vmlinuz-');
    await copyFile(kernelPath, join(work, 'vmlinuz'));
    await copyFile(await only(join(root, 'boot'), 'initrd.img-'), join(work, 'initrd.img'));

    const used = Number((await run('du', ['-sb', root], 'the root file system size')).split('\t')[0]);
    const size = Math.ceil((used * 1.1 + FREE_BYTES) / 2 ** 20);
    log(`  mkfs.ext4 -d: ${Math.round(used / 2 ** 20)} MiB of files into a ${size} MiB disk image`);
    await run(
      'mkfs.ext4',
      ['-q', '-F', '-L', 'nuo-root', '-d', root, join(work, 'rootfs.img'), `${size}M`],
      'the root disk image',
    );
    await rm(root, { recursive: true, force: true });

    const manifest: VmManifest = {
      built: created,
      buildSeconds: Math.round((Date.now() - started) / 1000),
      kubernetes: binaries.versions.kubernetes,
      containerd: binaries.versions.containerd,
      runc: packages.runc ?? 'missing',
      kernel: kernelPath.split('vmlinuz-')[1] ?? '',
      pauseImage: { name: PAUSE_IMAGE, digest: pauseDigest },
      debian: { suite: 'bookworm', mirrors: MIRRORS, packages },
    };
    for (const [from, to] of [
      ['rootfs.img', image.rootfs],
      ['vmlinuz', image.kernel],
      ['initrd.img', image.initrd],
      ['pause-oci', image.pauseLayout],
    ] as const) {
      await rm(to, { recursive: true, force: true });
      await rename(join(work, from), to);
    }
    // Written last: its presence says the image is complete.
    await writeFile(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
    log(`VM image built in ${formatDuration(Date.now() - started)}: ${image.dir}`);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
