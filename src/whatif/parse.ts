/**
 * Snapshots from files: what `nuo whatif snapshot` wrote, or what `kubectl get -A -o yaml` (or `-o json`)
 * writes, one file or a directory of them; multi-document YAML, `kind: List` (and NodeList, PodList, …)
 * or single objects. Every object goes through the same collector as a live read.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseDocument } from 'yaml';
import { isRaw } from './raw.ts';
import { type Snapshot, SnapshotCollector, SnapshotError } from './snapshot.ts';
import { cutItems, splitDocuments, type YamlChunk } from './yaml-items.ts';

/** A file larger than this is refused before it is read: one string cannot hold much more. */
const MAX_FILE_BYTES = 400 * 1024 * 1024;
/** YAML aliases expanded per document, at most (a "billion laughs" file is refused). */
const MAX_ALIASES = 100;

const SNAPSHOT_FILE = /\.(ya?ml|json)$/i;

/** The objects of one parsed document: a List's items, or the document itself. */
function objectsOf(doc: unknown): { items: unknown[]; list: boolean } {
  if (doc === null || doc === undefined) return { items: [], list: false };
  if (isList(doc)) return { items: doc.items as unknown[], list: true };
  return { items: [doc], list: false };
}

const isList = (doc: unknown): doc is { kind: string; items: unknown[] } =>
  isRaw(doc) && typeof doc.kind === 'string' && doc.kind.endsWith('List') && Array.isArray(doc.items);

/** A chunk parsed as one YAML document, or the message (naming its line in the file) of why not. */
function parseChunk(chunk: YamlChunk, file: string): { value: unknown } | { error: string; where: string } {
  const doc = parseDocument(chunk.text);
  const error = doc.errors[0];
  if (error) {
    const line = error.linePos?.[0]?.line;
    const where = `${file}:${chunk.line + (line ?? 1) - 1}`;
    // The library's own position is within the chunk: `where` has the file's.
    const message = (error.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '');
    return { error: `not valid YAML: ${message}`, where };
  }
  try {
    return { value: doc.toJS({ maxAliasCount: MAX_ALIASES }) };
  } catch (err) {
    return { error: `not valid YAML: ${(err as Error).message}`, where: `${file}:${chunk.line}` };
  }
}

/** Adds the objects of one file's text to `collector`; `file` names it in messages. */
export function parseSnapshotText(text: string, file: string, collector: SnapshotCollector): void {
  if (/\.json$/i.test(file)) {
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch (err) {
      collector.fail(file, `not valid JSON: ${(err as Error).message}`);
      return;
    }
    addObjects(doc, file, collector);
    return;
  }
  const docs = splitDocuments(text) ?? [{ text, line: 1 }];
  for (const [d, chunk] of docs.entries()) {
    addDocument(chunk, docs.length > 1 ? `${file} document ${d + 1}` : file, file, collector);
  }
}

/** One YAML document: a List's items parsed one at a time, anything else whole. */
function addDocument(chunk: YamlChunk, place: string, file: string, collector: SnapshotCollector): void {
  const { rest, items } = cutItems(chunk);
  const parsed = parseChunk(items.length > 0 ? rest : chunk, file);
  if ('error' in parsed) {
    collector.fail(parsed.where, parsed.error);
    return;
  }
  if (items.length === 0 || !isList(parsed.value)) {
    // Not a List whose items could be cut apart: the document is parsed whole.
    const whole = items.length === 0 ? parsed : parseChunk(chunk, file);
    if ('error' in whole) collector.fail(whole.where, whole.error);
    else addObjects(whole.value, place, collector);
    return;
  }
  items.forEach((item, i) => {
    const one = parseChunk(item, file);
    if ('error' in one) collector.fail(`${one.where} (item ${i + 1})`, one.error);
    else collector.add(one.value, `${place} item ${i + 1}`);
  });
}

function addObjects(doc: unknown, place: string, collector: SnapshotCollector): void {
  const { items, list } = objectsOf(doc);
  items.forEach((item, i) => {
    collector.add(item, list ? `${place} item ${i + 1}` : place);
  });
}

/** The snapshot files `path` names: itself, or the .yaml, .yml and .json files directly in it. */
function snapshotFiles(path: string): string[] {
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

const bytes = (n: number) =>
  n >= 2 ** 20 ? `${(n / 2 ** 20).toFixed(1)} MiB` : `${Math.ceil(n / 1024)} KiB`;

/** Reads a snapshot from a file or directory; SnapshotError names every file and object it could not use. */
export function readSnapshotFiles(
  path: string,
  maxFileBytes = MAX_FILE_BYTES,
): { snapshot: Snapshot; notes: string[] } {
  const collector = new SnapshotCollector();
  for (const file of snapshotFiles(path)) {
    const size = statSync(file).size;
    if (size > maxFileBytes)
      throw new SnapshotError(
        `${file} is ${bytes(size)}, more than the ${bytes(maxFileBytes)} a file may hold: split it (one file per kind, in one directory)`,
      );
    parseSnapshotText(readFileSync(file, 'utf8'), file, collector);
  }
  return { snapshot: collector.finish(), notes: collector.notes() };
}
