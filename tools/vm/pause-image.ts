/**
 * The sandbox ("pause") image as an OCI layout, made with umoci from the pause program built here: the
 * one image a node needs before any pod starts, and no public registry is reachable to pull it from.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Descriptor } from '../image/layout.ts';

/** The name containerd knows the sandbox image by (rootfs/etc/containerd/config.toml pins it). */
export const PAUSE_IMAGE = 'nuo.local/pause:1';
export const PAUSE_TAG = '1';

function umoci(...args: string[]): void {
  try {
    execFileSync('umoci', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: Buffer };
    if (e.code === 'ENOENT')
      throw new Error('umoci not found: install the Debian package umoci (.ci/run does)');
    throw new Error(`umoci ${args.join(' ')} failed: ${e.stderr?.toString().trim() || e.message}`);
  }
}

/**
 * Writes the layout to `layout` (tag PAUSE_TAG, entrypoint /pause, annotated with PAUSE_IMAGE so that
 * `ctr images import` names it so) and returns its manifest digest.
 */
export function buildPauseLayout(pauseBinary: string, layout: string, created: string): string {
  const image = `${layout}:${PAUSE_TAG}`;
  umoci('init', '--layout', layout);
  umoci('new', '--image', image);
  umoci('insert', '--image', image, `--history.created=${created}`, pauseBinary, '/pause');
  umoci(
    'config',
    '--image',
    image,
    `--created=${created}`,
    `--history.created=${created}`,
    '--config.entrypoint=/pause',
    '--config.user=65535:65535',
    '--architecture=amd64',
    '--os=linux',
  );
  umoci('gc', '--layout', layout);
  const indexPath = join(layout, 'index.json');
  const index = JSON.parse(readFileSync(indexPath, 'utf8')) as { manifests: Descriptor[] };
  const [manifest] = index.manifests;
  if (index.manifests.length !== 1 || !manifest) {
    throw new Error(`${indexPath}: ${index.manifests.length} manifests, expected the pause image's one`);
  }
  manifest.annotations = { ...manifest.annotations, 'io.containerd.image.name': PAUSE_IMAGE };
  writeFileSync(indexPath, JSON.stringify(index));
  return manifest.digest;
}

/** The layout as the tar archive `ctr images import` reads. */
export function tarLayout(layout: string, out: string): void {
  execFileSync('tar', ['--sort=name', '--owner=0', '--group=0', '-cf', out, '-C', layout, '.']);
}
