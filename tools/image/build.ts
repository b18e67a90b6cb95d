/**
 * Builds the container image of one architecture without a container engine, with Debian's umoci, into an
 * OCI layout in nuo's cache (reused while the staged files and configuration are the same); `npm run
 * image` (tools/image/multi-arch.ts) builds one per architecture and their index.
 *
 * Each layer is staged (tools/image/stage.ts), copied into an unpacked bundle of the image so far and
 * repacked by umoci, which computes the layer; `umoci config` then sets the user, entrypoint and labels.
 */
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cacheRoot } from '../go-build.ts';
import {
  cacheKey,
  compressedBytes,
  type Descriptor,
  evictions,
  type Manifest,
  manifestFor,
} from './layout.ts';
import { imageConfig, LAYERS, ref, umociConfigFlags } from './spec.ts';
import { hostArchitecture, stage } from './stage.ts';
import { umoci } from './umoci.ts';

/** Cached images kept, the one just built or used among them (about one per architecture and recent revision). */
const KEEP = 6;

export interface ImageBuild {
  /** The OCI layout directory. */
  layout: string;
  architecture: string;
  tag: string;
  ref: string;
  version: string;
  revision: string;
  created: string;
  /** The manifest's digest. */
  digest: string;
  compressedBytes: number;
  unpackedBytes: number;
  /** Compressed size of each layer, in LAYERS order. */
  layerBytes: number[];
  /** Found in the cache rather than built now. */
  reused: boolean;
}

function readLayout(layout: string, tag: string): { manifest: Descriptor; body: Manifest } {
  const index = JSON.parse(readFileSync(join(layout, 'index.json'), 'utf8'));
  const manifest = manifestFor(index, tag);
  const blob = (d: Descriptor) => join(layout, 'blobs', ...d.digest.split(':'));
  return { manifest, body: JSON.parse(readFileSync(blob(manifest), 'utf8')) as Manifest };
}

/**
 * Moves a finished build into the cache, unless another process (a test file run beside this one) put
 * the same one there first: that one stays, since a test may be reading it. False when it was there.
 */
export function moveIntoCache(work: string, dir: string): boolean {
  if (existsSync(dir)) {
    rmSync(work, { recursive: true, force: true });
    return false;
  }
  try {
    renameSync(work, dir);
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw err;
    rmSync(work, { recursive: true, force: true });
    return false;
  }
}

/** Builds the image of this checkout for one architecture, or finds it in the cache. */
export function buildImage(
  log: (line: string) => void = () => {},
  architecture = hostArchitecture(),
): ImageBuild {
  const staging = mkdtempSync(join(tmpdir(), 'nuo-image-stage-'));
  try {
    const staged = stage(staging, undefined, architecture);
    const tag = staged.version;
    const created = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    const config = imageConfig({ version: staged.version, revision: staged.revision, created });
    const key = cacheKey(staged.digest, config, architecture);
    const cache = join(cacheRoot(), 'image');
    const dir = join(cache, key);
    const recordPath = join(dir, 'image.json');
    const cached = (): ImageBuild => {
      const now = new Date();
      utimesSync(dir, now, now);
      return {
        ...(JSON.parse(readFileSync(recordPath, 'utf8')) as ImageBuild),
        layout: join(dir, 'layout'),
        architecture,
        reused: true,
      };
    };
    if (existsSync(recordPath)) {
      log(`image ${key} is in the cache: the same files and configuration were built before`);
      return cached();
    }
    const work = `${dir}.tmp-${process.pid}`;
    rmSync(work, { recursive: true, force: true });
    const layout = join(work, 'layout');
    const bundle = join(work, 'bundle');
    const image = `${layout}:${tag}`;
    const rootless = process.getuid?.() === 0 ? [] : ['--rootless'];
    umoci('init', '--layout', layout);
    umoci('new', '--image', image);
    umoci('unpack', ...rootless, '--image', image, bundle);
    for (const layer of LAYERS) {
      log(`layer ${layer}: repacking`);
      execFileSync('cp', ['-a', `${staged.layers[layer]}/.`, join(bundle, 'rootfs')]);
      umoci(
        'repack',
        '--refresh-bundle',
        `--history.created=${created}`,
        `--history.created_by=nuo image: ${layer} layer (tools/image/build.ts)`,
        '--image',
        image,
        bundle,
      );
    }
    umoci(
      'config',
      '--image',
      image,
      `--history.created=${created}`,
      '--history.created_by=nuo image: user, entrypoint and labels (tools/image/build.ts)',
      ...umociConfigFlags(config, created, architecture),
    );
    umoci('gc', '--layout', layout);
    rmSync(bundle, { recursive: true, force: true });
    const { manifest, body } = readLayout(layout, tag);
    const build: ImageBuild = {
      layout: join(dir, 'layout'),
      architecture,
      tag,
      ref: ref(tag),
      version: staged.version,
      revision: staged.revision,
      created,
      digest: manifest.digest,
      compressedBytes: compressedBytes(manifest, body),
      unpackedBytes: staged.bytes,
      layerBytes: body.layers.map((l) => l.size),
      reused: false,
    };
    writeFileSync(join(work, 'image.json'), `${JSON.stringify(build, null, 2)}\n`);
    if (!moveIntoCache(work, dir)) {
      log(`image ${key} was built meanwhile by another process: using that one`);
      return cached();
    }
    const entries = readdirSync(cache)
      .filter((name) => !name.includes('.tmp-'))
      .map((name) => ({ name, usedMs: statSync(join(cache, name)).mtimeMs }));
    for (const name of evictions(entries, KEEP, key))
      rmSync(join(cache, name), { recursive: true, force: true });
    return build;
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}
