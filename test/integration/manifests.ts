/**
 * Kubernetes manifests as objects, and what differs between two sets of them: how the chart's render is
 * held to kustomize's (test/integration/chart-render.test.ts) and to what the API server stored
 * (test/integration/chart-install.test.ts).
 */
import { parseAllDocuments } from 'yaml';

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  [field: string]: unknown;
}

/** Every object of a multi-document YAML stream; empty documents (a template rendering nothing) skipped. */
export function parseManifests(text: string): KubeObject[] {
  const objects: KubeObject[] = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0)
      throw new Error(`invalid YAML: ${doc.errors.map((e) => e.message).join('; ')}`);
    const value = doc.toJS() as KubeObject | null;
    if (value === null) continue;
    if (!value.kind || !value.metadata?.name) {
      throw new Error(
        `not a Kubernetes object (no kind or metadata.name): ${JSON.stringify(value).slice(0, 200)}`,
      );
    }
    objects.push(value);
  }
  return objects;
}

/** "Kind namespace/name", or "Kind name" for cluster-scoped objects: unique within one install. */
export function objectKey(o: KubeObject): string {
  return `${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`;
}

/**
 * Where `actual` differs from `expected`, one line per path. With `subset`, fields only `actual` has are
 * allowed (what the API server defaults or adds); every field of `expected` must be there, equal.
 */
export function valueDifferences(expected: unknown, actual: unknown, subset = false, path = ''): string[] {
  const show = (v: unknown) => (v === undefined ? '(absent)' : JSON.stringify(v));
  if (Array.isArray(expected) && Array.isArray(actual)) {
    if (expected.length !== actual.length) {
      return [
        `${path || '.'}: ${expected.length} items, not ${actual.length}: ${show(expected)} vs ${show(actual)}`,
      ];
    }
    return expected.flatMap((e, i) => valueDifferences(e, actual[i], subset, `${path}[${i}]`));
  }
  if (isRecord(expected) && isRecord(actual)) {
    const keys = new Set([...Object.keys(expected), ...(subset ? [] : Object.keys(actual))]);
    return [...keys].sort().flatMap((k) => valueDifferences(expected[k], actual[k], subset, `${path}.${k}`));
  }
  return Object.is(expected, actual) ? [] : [`${path || '.'}: ${show(expected)} vs ${show(actual)}`];
}

/** Objects one set has and the other lacks, and every difference between those both have, by key. */
export function manifestDifferences(expected: KubeObject[], actual: KubeObject[]): string[] {
  const byKey = (objects: KubeObject[]) => {
    const map = new Map<string, KubeObject>();
    for (const o of objects) {
      if (map.has(objectKey(o))) throw new Error(`${objectKey(o)} twice in one set`);
      map.set(objectKey(o), o);
    }
    return map;
  };
  const want = byKey(expected);
  const got = byKey(actual);
  const lines: string[] = [];
  for (const [key, o] of want) {
    const other = got.get(key);
    if (!other) lines.push(`${key}: missing`);
    else lines.push(...valueDifferences(o, other).map((d) => `${key} ${d}`));
  }
  for (const key of got.keys()) if (!want.has(key)) lines.push(`${key}: not expected`);
  return lines;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
