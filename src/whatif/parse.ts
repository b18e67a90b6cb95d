/**
 * Snapshots from files: what `nuo whatif snapshot` wrote, or what `kubectl get -A -o yaml` (or `-o json`)
 * writes, one file or a directory of them; multi-document YAML, `kind: List` (and NodeList, PodList, …)
 * or single objects. Every object goes through the same collector as a live read.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { isRaw } from './raw.ts';
import { type Snapshot, SnapshotCollector, SnapshotError } from './snapshot.ts';

/** A file larger than this is refused before it is read: one string cannot hold much more. */
export const MAX_FILE_BYTES = 400 * 1024 * 1024;
/** YAML aliases expanded per document, at most (a "billion laughs" file is refused). */
const MAX_ALIASES = 100;

const SNAPSHOT_FILE = /\.(ya?ml|json)$/i;

/** The objects of one document: a List's items, or the document itself. */
function objectsOf(doc: unknown): { items: unknown[]; list: boolean } {
  if (doc === null || doc === undefined) return { items: [], list: false };
  if (isRaw(doc) && typeof doc.kind === 'string' && doc.kind.endsWith('List') && 'items' in doc) {
    if (!Array.isArray(doc.items)) return { items: [doc], list: false };
    return { items: doc.items, list: true };
  }
  return { items: [doc], list: false };
}

/** Adds the objects of one file's text to `collector`; `file` names it in messages. */
export function parseSnapshotText(text: string, file: string, collector: SnapshotCollector): void {
  const docs: unknown[] = [];
  if (/\.json$/i.test(file)) {
    try {
      docs.push(JSON.parse(text));
    } catch (err) {
      collector.fail(file, `not valid JSON: ${(err as Error).message}`);
      return;
    }
  } else {
    for (const doc of parseAllDocuments(text)) {
      const error = doc.errors[0];
      if (error) {
        const line = error.linePos?.[0]?.line;
        collector.fail(line ? `${file}:${line}` : file, `not valid YAML: ${error.message.split('\n')[0]}`);
        return;
      }
      try {
        docs.push(doc.toJS({ maxAliasCount: MAX_ALIASES }));
      } catch (err) {
        collector.fail(file, `not valid YAML: ${(err as Error).message}`);
        return;
      }
    }
  }
  docs.forEach((doc, d) => {
    const { items, list } = objectsOf(doc);
    const place = docs.length > 1 ? `${file} document ${d + 1}` : file;
    items.forEach((item, i) => {
      collector.add(item, list ? `${place} item ${i + 1}` : place);
    });
  });
}

/** The snapshot files `path` names: itself, or the .yaml, .yml and .json files directly in it. */
export function snapshotFiles(path: string): string[] {
  let stat: ReturnType<typeof statSync>;
  try {
    stat = statSync(path);
  } catch {
    throw new SnapshotError(`${path} does not exist`);
  }
  if (!stat.isDirectory()) return [path];
  const files = readdirSync(path)
    .filter((f) => SNAPSHOT_FILE.test(f))
    .sort()
    .map((f) => join(path, f));
  if (files.length === 0) throw new SnapshotError(`${path} holds no .yaml, .yml or .json file`);
  return files;
}

/** Reads a snapshot from a file or directory; SnapshotError names every file and object it could not use. */
export function readSnapshotFiles(path: string): { snapshot: Snapshot; notes: string[] } {
  const collector = new SnapshotCollector();
  for (const file of snapshotFiles(path)) {
    const size = statSync(file).size;
    if (size > MAX_FILE_BYTES)
      throw new SnapshotError(
        `${file} is ${Math.round(size / 2 ** 20)} MiB, more than the ${MAX_FILE_BYTES / 2 ** 20} MiB a file may hold: split it (one file per kind, in one directory)`,
      );
    parseSnapshotText(readFileSync(file, 'utf8'), file, collector);
  }
  return { snapshot: collector.finish(), notes: collector.notes() };
}
