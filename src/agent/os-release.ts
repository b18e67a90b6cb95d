/**
 * The host's OS identity from os-release(5), for the node labels nuo.dev/os-id and nuo.dev/os-version.
 * The file is a list of shell-style assignments (KEY=value, KEY="value", KEY='value', backslash escapes),
 * with comments and blank lines; /etc/os-release is read, falling back to /usr/lib/os-release, under the
 * host-root prefix. Values are sanitised into valid Kubernetes label values.
 */
import { readFile } from 'node:fs/promises';
import { DEFAULT_HOST_ROOT, resolveInHostRoot } from './detect/sentinel-file.ts';

/** Parses one value as the shell would: quotes, backslash escapes; stops at unquoted whitespace. */
function parseValue(text: string): string | undefined {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const c = text[i] as string;
    if (c === '"') {
      i++;
      for (;;) {
        if (i >= text.length) return undefined; // unterminated
        const d = text[i] as string;
        if (d === '"') break;
        if (d === '\\' && i + 1 < text.length && '$"\\`\n'.includes(text[i + 1] as string)) {
          out += text[i + 1];
          i += 2;
          continue;
        }
        out += d;
        i++;
      }
      i++;
    } else if (c === "'") {
      const end = text.indexOf("'", i + 1);
      if (end < 0) return undefined;
      out += text.slice(i + 1, end);
      i = end + 1;
    } else if (c === '\\') {
      if (i + 1 < text.length) out += text[i + 1];
      i += 2;
    } else if (/\s/.test(c)) {
      break; // anything after unquoted whitespace (e.g. a trailing comment) is not part of the value
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

/** KEY → value for every valid assignment; invalid lines are skipped; a later assignment wins. */
export function parseOsRelease(text: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const rawLine of text.split(/\r?\n/)) {
    const line = rawLine.trim();
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (!m) continue;
    const value = parseValue(m[2] as string);
    if (value !== undefined) fields[m[1] as string] = value;
  }
  return fields;
}

/**
 * A valid Kubernetes label value made from any string: at most 63 characters of [A-Za-z0-9._-], starting
 * and ending with an alphanumeric character (or empty). Runs of other characters become one "-".
 */
export function toLabelValue(raw: string): string {
  return raw
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/^[^A-Za-z0-9]+/, '')
    .slice(0, 63)
    .replace(/[^A-Za-z0-9]+$/, '');
}

export const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

export interface OsIdentity {
  /** Label value of ID (os-release's default "linux" when absent). */
  id: string;
  /** Label value of VERSION_ID ("" when absent). */
  versionId: string;
}

export function osIdentity(fields: Record<string, string>): OsIdentity {
  return { id: toLabelValue(fields.ID ?? 'linux'), versionId: toLabelValue(fields.VERSION_ID ?? '') };
}

const OS_RELEASE_PATHS = ['/etc/os-release', '/usr/lib/os-release'] as const;

/** Reads the host's os-release under hostRoot (default /host); throws naming the paths tried. */
export async function readOsRelease(
  hostRoot: string = DEFAULT_HOST_ROOT,
): Promise<OsIdentity & { path: string; fields: Record<string, string> }> {
  const failures: string[] = [];
  for (const path of OS_RELEASE_PATHS) {
    try {
      const text = await readFile(await resolveInHostRoot(hostRoot, path), 'utf8');
      const fields = parseOsRelease(text);
      return { ...osIdentity(fields), path, fields };
    } catch (err) {
      failures.push(`${path}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  throw new Error(`cannot read os-release under ${hostRoot} (${failures.join('; ')})`);
}
