/**
 * The image kured's DaemonSet runs, made here from kured built from its pinned source (build.ts), laid out
 * as kured's Dockerfile lays out its image: kured at /usr/bin/kured, its entrypoint, run as root. Of its
 * Alpine base it keeps what kured runs: nsenter at /usr/bin/nsenter (kured enters the host's mount
 * namespace through it to reboot), taken with the libraries it loads from this machine's util-linux
 * (Alpine's is BusyBox's). CA certificates and time zones are left out: in-cluster, the ServiceAccount
 * brings the API server's CA, and kured's reboot days default to UTC. Cached outside the repository.
 *
 *   node tools/kured/image.ts          build the layout if it is missing
 *   node tools/kured/image.ts --print  print the layout's directory and exit (no build)
 */
import { execFileSync } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { buildCommand, cacheRoot } from '../go-build.ts';
import { cachedLayout } from '../image/cached-layout.ts';
import { parseLdd } from '../image/files.ts';
import { filesLayout } from '../image/umoci.ts';
import { ensureKured, KURED } from './build.ts';

export interface KuredImage {
  /** The OCI layout directory, for `skopeo copy oci:<layout>:<tag>`. */
  layout: string;
  tag: string;
}

const NSENTER = '/usr/bin/nsenter';
const TAG = KURED.version;
const layoutDir = () => join(cacheRoot(), 'kured', KURED.version, 'image-oci');

/** nsenter and the libraries `ldd` names for it, each at its path on this machine. */
function nsenterFiles(): Record<string, string> {
  if (!existsSync(NSENTER)) throw new Error(`${NSENTER} not found: install the Debian package util-linux`);
  const files: Record<string, string> = { [NSENTER]: NSENTER };
  for (const lib of parseLdd(execFileSync('ldd', [NSENTER], { encoding: 'utf8' })))
    files[lib] = realpathSync(lib);
  return files;
}

/** kured's image layout, built (with kured, if missing) the first time. */
export async function ensureKuredImage(
  log: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Promise<KuredImage> {
  const layout = layoutDir();
  const image = { layout, tag: TAG };
  if (existsSync(join(layout, 'index.json'))) return image;
  const { kured } = await ensureKured(log);
  await cachedLayout(
    {
      layout,
      lockDir: join(cacheRoot(), 'kured', KURED.version),
      what: `kured ${KURED.version} and nsenter`,
      write: (tmp) =>
        filesLayout({
          files: { '/usr/bin/kured': kured, ...nsenterFiles() },
          entrypoint: ['/usr/bin/kured'],
          layout: tmp,
          tag: TAG,
          user: '0:0',
          created: '2020-01-01T00:00:00Z',
        }),
    },
    log,
  );
  return image;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await buildCommand({
    print: () => layoutDir(),
    build: async () => {
      const image = await ensureKuredImage();
      return `kured's image ${image.tag} in ${image.layout}`;
    },
  });
}
