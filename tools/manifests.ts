/** Kubernetes manifests read from a third party's pinned source, as it ships them. */
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { inSourceTree, type PinnedSource, pinnedSource } from './third-party.ts';

const checkout = resolve(dirname(fileURLToPath(import.meta.url)), '..');

export type Manifest = Record<string, unknown> & {
  kind?: string;
  metadata?: { name?: string; namespace?: string };
};

/** Every object of `files` (paths in the source tree), in order. Throws if one is missing or does not parse. */
export async function pinnedManifests(
  pin: PinnedSource,
  files: string[],
  log: (line: string) => void = () => {},
): Promise<Manifest[]> {
  const source = pinnedSource(pin, process.env, checkout, existsSync);
  const work = await mkdtemp(join(tmpdir(), `nuo-${pin.name}-manifests-`));
  try {
    return await inSourceTree(pin, source, work, log, async (dir) => {
      const objects: Manifest[] = [];
      for (const file of files) {
        for (const doc of parseAllDocuments(await readFile(join(dir, file), 'utf8'))) {
          if (doc.errors.length > 0) throw new Error(`${pin.name}'s ${file}: ${doc.errors[0]?.message}`);
          const object = doc.toJS() as Manifest | null;
          if (object) objects.push(object);
        }
      }
      return objects;
    });
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
