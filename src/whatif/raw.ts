/** Reading untrusted JSON (a file, an API answer) field by field, with errors that name the field. */

export type Raw = Record<string, unknown>;

/** An item that cannot be kept: the message names the field and what was wrong with it. */
export class ItemError extends Error {}

export const isRaw = (x: unknown): x is Raw => typeof x === 'object' && x !== null && !Array.isArray(x);

/** The object at `path` of `o`, undefined when absent; anything else there is an error. */
export function rawAt(o: Raw, key: string, path: string): Raw | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (!isRaw(v)) throw new ItemError(`${path} must be an object, not ${describe(v)}`);
  return v;
}

export function requiredRaw(o: Raw, key: string, path: string): Raw {
  const v = rawAt(o, key, path);
  if (!v) throw new ItemError(`${path} is missing`);
  return v;
}

export function stringAt(o: Raw, key: string, path: string): string | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw new ItemError(`${path} must be a string, not ${describe(v)}`);
  return v;
}

export function requiredString(o: Raw, key: string, path: string): string {
  const v = stringAt(o, key, path);
  if (v === undefined || v === '') throw new ItemError(`${path} is missing`);
  return v;
}

export function numberAt(o: Raw, key: string, path: string): number | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v))
    throw new ItemError(`${path} must be a number, not ${describe(v)}`);
  return v;
}

export function booleanAt(o: Raw, key: string, path: string): boolean | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw new ItemError(`${path} must be true or false, not ${describe(v)}`);
  return v;
}

/** A map of strings (labels, annotations, resource quantities: numbers are written as strings). */
export function stringMapAt(o: Raw, key: string, path: string): Record<string, string> | undefined {
  const v = rawAt(o, key, path);
  if (!v) return undefined;
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(v)) {
    if (typeof x === 'string') out[k] = x;
    else if (typeof x === 'number' && Number.isFinite(x)) out[k] = String(x);
    else throw new ItemError(`${path}.${k} must be a string, not ${describe(x)}`);
  }
  return out;
}

/** The array at `path`, each element an object; undefined when absent. */
export function rawListAt(o: Raw, key: string, path: string): Raw[] | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) throw new ItemError(`${path} must be a list, not ${describe(v)}`);
  return v.map((x, i) => {
    if (!isRaw(x)) throw new ItemError(`${path}[${i}] must be an object, not ${describe(x)}`);
    return x;
  });
}

/** A number or a percentage ("25%"), as PDBs and rollout strategies take them. */
export function intOrStringAt(o: Raw, key: string, path: string): number | string | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'number' && Number.isInteger(v)) return v;
  if (typeof v === 'string') return v;
  throw new ItemError(`${path} must be an integer or a percentage, not ${describe(v)}`);
}

/** `o` without its undefined fields (a snapshot writes no `key: null`). */
export function defined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'string') return `"${v.length > 40 ? `${v.slice(0, 40)}…` : v}"`;
  return typeof v === 'object' ? 'an object' : `${typeof v} ${String(v)}`;
}
