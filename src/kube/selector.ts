/**
 * Kubernetes label selectors ("a=b,c!=d,e in (f,g),h notin (i),j,!k") matched locally, so the operator
 * can watch every node and still tell eligible from ineligible ones (a node leaving the selector while
 * it holds a slot must stay visible).
 */
type Requirement =
  | { op: 'eq' | 'ne'; key: string; value: string }
  | { op: 'in' | 'notin'; key: string; values: string[] }
  | { op: 'exists' | 'absent'; key: string };

export type Selector = (labels: Record<string, string> | undefined) => boolean;

/** Splits on commas that are not inside parentheses. */
function terms(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of text) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      out.push(current.trim());
      current = '';
    } else current += ch;
  }
  if (current.trim()) out.push(current.trim());
  return out;
}

const KEY = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$/;

function requirement(term: string): Requirement {
  let m = term.match(/^(\S+?)\s*(==|=|!=)\s*(\S*)$/);
  if (m) {
    const [, key = '', op, value = ''] = m;
    check(key, [value], term);
    return { op: op === '!=' ? 'ne' : 'eq', key, value };
  }
  m = term.match(/^(\S+)\s+(in|notin)\s+\(([^)]*)\)$/);
  if (m) {
    const [, key = '', op, list = ''] = m;
    const values = list.split(',').map((v) => v.trim());
    check(key, values, term);
    return { op: op as 'in' | 'notin', key, values };
  }
  m = term.match(/^(!?)(\S+)$/);
  if (m) {
    const [, not, key = ''] = m;
    check(key, [], term);
    return { op: not ? 'absent' : 'exists', key };
  }
  throw new Error(`invalid label selector term "${term}"`);
}

function check(key: string, values: string[], term: string) {
  if (!KEY.test(key)) throw new Error(`invalid label key "${key}" in selector term "${term}"`);
  for (const v of values)
    if (!VALUE.test(v)) throw new Error(`invalid label value "${v}" in selector term "${term}"`);
}

export function parseSelector(text: string): Selector {
  return matcher(terms(text.trim()).map(requirement));
}

/** A selector as the API writes it (matchLabels and matchExpressions, all ANDed); empty selects all. */
export interface LabelSelectorSpec {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

const OPERATORS: Record<string, 'in' | 'notin' | 'exists' | 'absent'> = {
  In: 'in',
  NotIn: 'notin',
  Exists: 'exists',
  DoesNotExist: 'absent',
};

/** The Selector of an API label selector; throws naming the first bad key, value or operator. */
export function labelSelector(spec: LabelSelectorSpec): Selector {
  const reqs: Requirement[] = Object.entries(spec.matchLabels ?? {}).map(([key, value]) => {
    check(key, [value], `matchLabels ${key}: ${value}`);
    return { op: 'eq', key, value };
  });
  for (const [i, e] of (spec.matchExpressions ?? []).entries()) {
    const where = `matchExpressions[${i}]`;
    const op = OPERATORS[e.operator];
    if (!op)
      throw new Error(`${where}: unknown operator "${e.operator}": use In, NotIn, Exists or DoesNotExist`);
    const values = e.values ?? [];
    check(e.key, values, where);
    if (op === 'in' || op === 'notin') {
      if (values.length === 0) throw new Error(`${where}: ${e.operator} needs at least one value`);
      reqs.push({ op, key: e.key, values });
    } else {
      if (values.length > 0) throw new Error(`${where}: ${e.operator} takes no values`);
      reqs.push({ op, key: e.key });
    }
  }
  return matcher(reqs);
}

/** An API label selector as the `labelSelector` query parameter writes it (the server filters with it). */
export function selectorText(spec: LabelSelectorSpec): string {
  const terms = Object.entries(spec.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const e of spec.matchExpressions ?? []) {
    const values = (e.values ?? []).join(',');
    if (e.operator === 'In') terms.push(`${e.key} in (${values})`);
    else if (e.operator === 'NotIn') terms.push(`${e.key} notin (${values})`);
    else if (e.operator === 'Exists') terms.push(e.key);
    else terms.push(`!${e.key}`);
  }
  return terms.join(',');
}

function matcher(reqs: Requirement[]): Selector {
  return (labels = {}) =>
    reqs.every((r) => {
      const has = Object.hasOwn(labels, r.key);
      const v = labels[r.key];
      switch (r.op) {
        case 'eq':
          return v === r.value;
        case 'ne':
          return v !== r.value;
        case 'in':
          return has && r.values.includes(v as string);
        case 'notin':
          return !has || !r.values.includes(v as string);
        case 'exists':
          return has;
        default:
          return !has;
      }
    });
}
