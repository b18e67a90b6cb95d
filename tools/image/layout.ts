/**
 * Reading an OCI layout's figures and keeping the image cache: pure functions for tools/image/build.ts.
 */
import { createHash } from 'node:crypto';
import type { ImageConfig } from './spec.ts';

export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
}

export interface Manifest {
  config: Descriptor;
  layers: Descriptor[];
}

/** The manifest tagged `tag` in a layout's index.json. */
export function manifestFor(index: { manifests: Descriptor[] }, tag: string): Descriptor {
  const found = index.manifests.filter((m) => m.annotations?.['org.opencontainers.image.ref.name'] === tag);
  if (found.length !== 1)
    throw new Error(`index.json: ${found.length} manifests tagged "${tag}", expected one`);
  return found[0] as Descriptor;
}

/** What a registry stores and a node pulls: manifest, config and compressed layers. */
export function compressedBytes(manifest: Descriptor, body: Manifest): number {
  return manifest.size + body.config.size + body.layers.reduce((sum, l) => sum + l.size, 0);
}

export const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

/**
 * The cache key of an image: its staged files and its configuration, less the time it was built (a
 * rebuild of the same inputs reuses the image built first, with that image's creation time).
 */
export function cacheKey(stagedDigest: string, config: ImageConfig, architecture: string): string {
  const labels = { ...config.labels };
  delete labels['org.opencontainers.image.created'];
  const hash = createHash('sha256');
  hash.update(JSON.stringify({ stagedDigest, config: { ...config, labels }, architecture }));
  return hash.digest('hex').slice(0, 24);
}

/** Cached images to remove: all but the `keep` most recently used, never `current`. */
export function evictions(
  entries: { name: string; usedMs: number }[],
  keep: number,
  current: string,
): string[] {
  return entries
    .filter((e) => e.name !== current)
    .sort((a, b) => b.usedMs - a.usedMs || a.name.localeCompare(b.name))
    .slice(Math.max(0, keep - 1))
    .map((e) => e.name);
}

export const INDEX_MEDIA_TYPE = 'application/vnd.oci.image.index.v1+json';

/** One architecture's image for an index: its manifest's descriptor. */
export interface PlatformManifest {
  architecture: string;
  manifest: Descriptor;
}

/**
 * The image index of one image per architecture (what a registry serves under the tag and a node picks
 * its platform's manifest from), in the order given; each manifest once, without its layout tag.
 */
export function imageIndex(platforms: PlatformManifest[]): {
  schemaVersion: 2;
  mediaType: string;
  manifests: (Descriptor & { platform: { os: string; architecture: string } })[];
} {
  const seen = new Set<string>();
  for (const p of platforms) {
    if (seen.has(p.architecture)) throw new Error(`two images of ${p.architecture} for one index`);
    seen.add(p.architecture);
  }
  return {
    schemaVersion: 2,
    mediaType: INDEX_MEDIA_TYPE,
    manifests: platforms.map((p) => ({
      mediaType: p.manifest.mediaType,
      digest: p.manifest.digest,
      size: p.manifest.size,
      platform: { os: 'linux', architecture: p.architecture },
    })),
  };
}
