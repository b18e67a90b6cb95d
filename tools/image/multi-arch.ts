/**
 * The multi-architecture image: one image per architecture of PLATFORMS (tools/image/build.ts), and an
 * OCI layout holding them all under one image index, tagged with the version, as a registry serves it
 * (`skopeo copy --all oci:LAYOUT:TAG docker://…` pushes it whole). Cached beside the images, keyed by
 * their manifests, its blobs hard links to theirs.
 *
 *   npm run image [-- --archive FILE]
 *
 * `--archive FILE` also writes the index's layout as an OCI archive (`skopeo copy --all oci-archive:`).
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { cacheRoot } from '../go-build.ts';
import { buildImage, type ImageBuild, moveIntoCache } from './build.ts';
import { evictions, INDEX_MEDIA_TYPE, imageIndex, manifestFor, mib } from './layout.ts';
import { LAYERS, ref } from './spec.ts';

/** The architectures the published image holds, the index's order. */
export const PLATFORMS = ['amd64', 'arm64'] as const;

/** Cached index layouts kept (they hold links, not copies). */
const KEEP = 3;

export interface ImageIndexBuild {
  /** The OCI layout holding the index and every image's blobs. */
  layout: string;
  tag: string;
  ref: string;
  /** The index's digest: what a signature signs and a deployment may pin. */
  digest: string;
  images: ImageBuild[];
}

/** Builds (or finds) each architecture's image and the layout of their index. */
export function buildImageIndex(log: (line: string) => void = () => {}): ImageIndexBuild {
  const images = PLATFORMS.map((architecture) => {
    log(`image for ${architecture}`);
    return buildImage(log, architecture);
  });
  const tag = images[0]?.tag ?? '';
  const manifests = images.map((image) => ({
    architecture: image.architecture,
    manifest: manifestFor(JSON.parse(readFileSync(join(image.layout, 'index.json'), 'utf8')), image.tag),
  }));
  const body = `${JSON.stringify(imageIndex(manifests))}\n`;
  const digest = `sha256:${createHash('sha256').update(body).digest('hex')}`;
  const cache = join(cacheRoot(), 'image-index');
  const name = digest.slice('sha256:'.length, 'sha256:'.length + 24);
  const dir = join(cache, name);
  const build = { layout: join(dir, 'layout'), tag, ref: ref(tag), digest, images };
  if (existsSync(join(dir, 'layout', 'index.json'))) {
    const now = new Date();
    utimesSync(dir, now, now);
    return build;
  }
  const work = `${dir}.tmp-${process.pid}`;
  rmSync(work, { recursive: true, force: true });
  const blobs = join(work, 'layout', 'blobs', 'sha256');
  mkdirSync(blobs, { recursive: true });
  for (const image of images) {
    const from = join(image.layout, 'blobs', 'sha256');
    for (const blob of readdirSync(from))
      if (!existsSync(join(blobs, blob))) linkSync(join(from, blob), join(blobs, blob));
  }
  writeFileSync(join(blobs, digest.slice('sha256:'.length)), body);
  writeFileSync(join(work, 'layout', 'oci-layout'), '{"imageLayoutVersion":"1.0.0"}\n');
  const index = {
    schemaVersion: 2,
    manifests: [
      {
        mediaType: INDEX_MEDIA_TYPE,
        digest,
        size: Buffer.byteLength(body),
        annotations: { 'org.opencontainers.image.ref.name': tag },
      },
    ],
  };
  writeFileSync(join(work, 'layout', 'index.json'), `${JSON.stringify(index)}\n`);
  if (!moveIntoCache(work, dir)) return build;
  const cached = readdirSync(cache)
    .filter((entry) => !entry.includes('.tmp-'))
    .map((entry) => ({ name: entry, usedMs: statSync(join(cache, entry)).mtimeMs }));
  for (const old of evictions(cached, KEEP, name)) rmSync(join(cache, old), { recursive: true, force: true });
  return build;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { archive: { type: 'string' } }, strict: true });
  const b = buildImageIndex((line) => process.stderr.write(`${line}\n`));
  const lines = [`${b.ref}: an index of ${b.images.map((i) => i.architecture).join(', ')}`];
  lines.push(`  OCI layout: ${b.layout} (tag ${b.tag})`, `  index:      ${b.digest}`);
  for (const i of b.images) {
    const layers = LAYERS.map((l, n) => `${l} ${mib(i.layerBytes[n] ?? 0)}`).join(', ');
    const when = i.reused ? `from the cache, built ${i.created}` : `built ${i.created}`;
    lines.push(
      `  ${i.architecture}:${' '.repeat(Math.max(1, 10 - i.architecture.length))}${i.digest} (revision ${i.revision}, ${when})`,
      `              ${mib(i.compressedBytes)} compressed (${layers}); ${mib(i.unpackedBytes)} unpacked`,
    );
  }
  lines.push(`  push:       skopeo copy --all oci:${b.layout}:${b.tag} docker://${b.ref}`);
  if (values.archive) {
    // Relative to where `npm run image` was typed (npm runs scripts from the package's top).
    const archive = resolve(process.env.INIT_CWD ?? process.cwd(), values.archive);
    mkdirSync(dirname(archive), { recursive: true });
    execFileSync('tar', ['-C', b.layout, '-chf', archive, '.']);
    lines.push(`  archive:    ${archive} (${mib(statSync(archive).size)}; skopeo copy --all oci-archive:)`);
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}
