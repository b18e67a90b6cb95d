/**
 * Debian's umoci, which builds OCI image layouts without a container engine: the one wrapper the image
 * builders share, and the layout of an image holding a single static binary.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Descriptor } from './layout.ts';

/** Runs umoci; returns what it printed, or throws with its stderr (and how to install it if missing). */
export function umoci(...args: string[]): string {
  try {
    return execFileSync('umoci', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const e = err as { code?: string; stderr?: string; message: string };
    if (e.code === 'ENOENT')
      throw new Error('umoci not found: install the Debian package umoci (.ci/run does)');
    throw new Error(`umoci ${args.join(' ')} failed: ${e.stderr?.trim() || e.message}`);
  }
}

export interface FilesImage {
  /** Each file's path in the image, and the file of this machine it is copied from. */
  files: Record<string, string>;
  /** The command the image runs (its first word a path in `files`). */
  entrypoint: string[];
  /** The OCI layout directory to write (made here) and the tag to give the image. */
  layout: string;
  tag: string;
  /** The user the image runs as (uid:gid). */
  user: string;
  /** The images' timestamps (RFC 3339), fixed so a rebuild of the same files is the same image. */
  created: string;
}

/** Writes a one-layer amd64 image holding `files`; returns the layout's only manifest. */
export function filesLayout(i: FilesImage): Descriptor {
  const image = `${i.layout}:${i.tag}`;
  umoci('init', '--layout', i.layout);
  umoci('new', '--image', image);
  for (const [path, from] of Object.entries(i.files).sort(([a], [b]) => a.localeCompare(b)))
    umoci('insert', '--image', image, `--history.created=${i.created}`, from, path);
  umoci(
    'config',
    '--image',
    image,
    `--created=${i.created}`,
    `--history.created=${i.created}`,
    ...i.entrypoint.map((word) => `--config.entrypoint=${word}`),
    `--config.user=${i.user}`,
    '--architecture=amd64',
    '--os=linux',
  );
  umoci('gc', '--layout', i.layout);
  const indexPath = join(i.layout, 'index.json');
  const index = JSON.parse(readFileSync(indexPath, 'utf8')) as { manifests: Descriptor[] };
  const [manifest] = index.manifests;
  if (index.manifests.length !== 1 || !manifest) {
    throw new Error(`${indexPath}: ${index.manifests.length} manifests, expected one image's`);
  }
  return manifest;
}

/** Writes a one-layer amd64 image holding the static `binary` at `path`, its entrypoint. */
export function binaryLayout(
  i: Omit<FilesImage, 'files' | 'entrypoint'> & { binary: string; path: string },
): Descriptor {
  const { binary, path, ...rest } = i;
  return filesLayout({ ...rest, files: { [path]: binary }, entrypoint: [path] });
}
