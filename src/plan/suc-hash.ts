/**
 * The hash system-upgrade-controller gives a Plan (its status.latestHash, and the value of the node label
 * plan.upgrade.cattle.io/<plan> once the Plan is applied there), computed as SUC computes it, so that a
 * node SUC already upgraded counts as applied after the Plan moves to nuo. SUC's rule
 * (pkg/upgrade/plan/plan.go, DigestStatus): sha224 in hex over, written one after the other with no
 * separator, the munged latest version, spec.serviceAccountName, each field named by the Plan's
 * upgrade.cattle.io/digest annotation (addToHashFromAnnotation), and kubectl's SecretHash of each Secret
 * that is not ignoreUpdates, in spec order. Pure.
 */
import { createHash } from 'node:crypto';
import type { Plan } from '../api/plan.ts';

/** SUC's annotation: comma-separated dotted paths into the Plan whose values join its hash. */
export const SUC_DIGEST_ANNOTATION = 'upgrade.cattle.io/digest';

/** A Secret as kubectl's SecretHash reads it: `data` as the API serves it (base64 values). */
export interface HashedSecret {
  name: string;
  type?: string;
  data?: Readonly<Record<string, string>>;
  immutable?: boolean;
}

export interface SucHashInput {
  plan: Pick<Plan, 'metadata' | 'spec'>;
  /** The resolved version, munged ('+' written '-'): SUC's status.latestVersion. */
  version: string;
  /** Each Secret the Plan mounts that is not ignoreUpdates, by name. */
  secrets: Readonly<Record<string, HashedSecret>>;
}

export function sucPlanHash({ plan, version, secrets }: SucHashInput): string {
  const h = createHash('sha224');
  h.update(version);
  h.update(plan.spec.serviceAccountName ?? '');
  const paths = plan.metadata.annotations?.[SUC_DIGEST_ANNOTATION] ?? '';
  if (paths !== '') for (const path of paths.split(',')) h.update(digestField(plan, path.split('.')));
  for (const s of plan.spec.secrets ?? []) {
    if (s.ignoreUpdates) continue;
    const secret = secrets[s.name];
    if (!secret) throw new Error(`secret ${s.name} is not read: SUC's hash of the Plan needs it`);
    h.update(secretHash(secret));
  }
  return h.digest('hex');
}

/**
 * A digest annotation's field as wrangler's data.Object.String gives it: the path walked through objects
 * only (a list on the way gives nothing), a list's first item, nothing for null or absent, else Go's
 * fmt.Sprint of the value, spaces trimmed.
 */
export function digestField(plan: unknown, path: readonly string[]): string {
  let value: unknown = plan;
  for (const key of path) {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return '';
    value = (value as Record<string, unknown>)[key];
  }
  if (Array.isArray(value)) value = value[0];
  if (value === undefined || value === null) return '';
  return goSprint(value).trim();
}

/** Go's fmt.Sprint of a value decoded from JSON: maps with sorted keys as map[k:v], lists as [a b]. */
export function goSprint(value: unknown): string {
  if (value === null || value === undefined) return '<nil>';
  if (Array.isArray(value)) return `[${value.map(goSprint).join(' ')}]`;
  if (typeof value === 'object') {
    const keys = Object.keys(value).sort(byBytes);
    return `map[${keys.map((k) => `${k}:${goSprint((value as Record<string, unknown>)[k])}`).join(' ')}]`;
  }
  return String(value);
}

/**
 * kubectl's SecretHash (k8s.io/kubectl/pkg/util/hash): sha256 of the JSON object of the Secret's data,
 * kind, name and type (and immutable when set) as Go encodes it, its first 10 hex characters with 0, 1,
 * 3, a and e written g, h, k, m and t (kubectl's mapping, so the hash spells no words).
 */
export function secretHash(s: HashedSecret): string {
  const fields: [string, string][] = [
    ['data', s.data === undefined ? 'null' : goObject(s.data)],
    ...(s.immutable === undefined ? [] : [['immutable', String(s.immutable)] as [string, string]]),
    ['kind', goString('Secret')],
    ['name', goString(s.name)],
    ['type', goString(s.type ?? '')],
  ];
  const json = `{${fields.map(([k, v]) => `${goString(k)}:${v}`).join(',')}}`;
  const hex = createHash('sha256').update(json).digest('hex').slice(0, 10);
  return hex.replace(/[013ae]/g, (c) => KUBECTL_MAPPING[c] ?? c);
}

const KUBECTL_MAPPING: Readonly<Record<string, string>> = { 0: 'g', 1: 'h', 3: 'k', a: 'm', e: 't' };

/** Go's encoding/json of a map of strings: keys sorted by their bytes. */
function goObject(m: Readonly<Record<string, string>>): string {
  const keys = Object.keys(m).sort(byBytes);
  return `{${keys.map((k) => `${goString(k)}:${goString(m[k] ?? '')}`).join(',')}}`;
}

/** A string as Go's encoding/json writes it: JSON, with <, >, &, U+2028 and U+2029 escaped. */
export function goString(s: string): string {
  return JSON.stringify(s).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** Go orders strings by their UTF-8 bytes. */
function byBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}
