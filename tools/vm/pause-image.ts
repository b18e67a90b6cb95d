/**
 * The sandbox ("pause") image as an OCI layout, made with umoci from the pause program built here: the
 * one image a node needs before any pod starts, and no public registry is reachable to pull it from.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { binaryLayout } from '../image/umoci.ts';

/** The name containerd knows the sandbox image by (rootfs/etc/containerd/config.toml pins it). */
export const PAUSE_IMAGE = 'nuo.local/pause:1';
export const PAUSE_TAG = '1';

/**
 * Writes the layout to `layout` (tag PAUSE_TAG, entrypoint /pause, annotated with PAUSE_IMAGE so that
 * `ctr images import` names it so) and returns its manifest digest.
 */
export function buildPauseLayout(pauseBinary: string, layout: string, created: string): string {
  const manifest = binaryLayout({
    binary: pauseBinary,
    path: '/pause',
    layout,
    tag: PAUSE_TAG,
    user: '65535:65535',
    created,
  });
  const indexPath = join(layout, 'index.json');
  manifest.annotations = { ...manifest.annotations, 'io.containerd.image.name': PAUSE_IMAGE };
  writeFileSync(
    indexPath,
    JSON.stringify({ ...JSON.parse(readFileSync(indexPath, 'utf8')), manifests: [manifest] }),
  );
  return manifest.digest;
}

/** The layout as the tar archive `ctr images import` reads. */
export function tarLayout(layout: string, out: string): void {
  execFileSync('tar', ['--sort=name', '--owner=0', '--group=0', '-cf', out, '-C', layout, '.']);
}
