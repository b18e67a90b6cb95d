/**
 * The Plan schema's CEL rules (x-kubernetes-validations) as TypeScript, each by its rule's text: the API
 * server checks them for nuo's Plans, but SUC's CRD holds none, so a SUC Plan nuo runs is checked here.
 * A rule of the schema without its twin here fails a unit test. Pure.
 */
import { DURATION_PATTERN } from '../api/update-policy.ts';
import type { FieldError } from '../policy/field-error.ts';

type Value = Record<string, unknown>;

const IMAGE = (pattern: string) => new RegExp(pattern);
const DURATION = new RegExp(DURATION_PATTERN);

const webUrl = (s: unknown): boolean => {
  if (typeof s !== 'string' || !URL.canParse(s)) return false;
  const u = new URL(s);
  return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
};

/** Each rule's text → its check of `self`. The image rule is built from the pattern it names. */
export function celTwin(rule: string): ((self: unknown) => boolean) | undefined {
  const image = /^self\.matches\('(.*)'\)$/.exec(rule);
  if (image?.[1]) {
    const re = IMAGE(image[1]);
    return (s) => typeof s === 'string' && re.test(s);
  }
  switch (rule) {
    case "self.type == 'Localhost' ? has(self.localhostProfile) : !has(self.localhostProfile)":
      return (s) => ((s as Value).type === 'Localhost') === ((s as Value).localhostProfile !== undefined);
    case `type(self) == int ? self >= 0 : self.matches('${DURATION_PATTERN.replaceAll('\\.', '[.]')}')`:
      return (s) => (typeof s === 'number' ? s >= 0 : typeof s === 'string' && DURATION.test(s));
    case '!(has(self.deleteLocalData) && has(self.deleteEmptydirData))':
      return (s) =>
        (s as Value).deleteLocalData === undefined || (s as Value).deleteEmptydirData === undefined;
    case '!has(self.disableEviction) || !self.disableEviction':
      return (s) => (s as Value).disableEviction !== true;
    case "isURL(self) && url(self).getScheme() in ['http', 'https'] && url(self).getHost() != ''":
      return webUrl;
    case 'has(self.upgrade)':
      return (s) => (s as Value).upgrade !== undefined;
    case 'has(self.version) || has(self.channel)':
      return (s) => (s as Value).version !== undefined || (s as Value).channel !== undefined;
    default:
      return undefined;
  }
}

interface Rule {
  rule: string;
  message: string;
  fieldPath?: string;
}

/** The part of a JSON schema (a TypeBox type) its CEL rules are found in. */
interface Schema {
  properties?: object;
  items?: object;
  'x-kubernetes-validations'?: Rule[];
}

const sub = (schemas: object | undefined): Record<string, Schema> =>
  (schemas ?? {}) as Record<string, Schema>;

/** Every CEL rule of the schema (for the test that each has its twin). */
export function celRules(schema: Schema): string[] {
  return [
    ...(schema['x-kubernetes-validations'] ?? []).map((r) => r.rule),
    ...Object.values(sub(schema.properties)).flatMap(celRules),
    ...(schema.items ? celRules(schema.items as Schema) : []),
  ];
}

/** The CEL rules `value` breaks, as field errors at their path (the value already fits the schema). */
export function celErrors(schema: Schema, value: unknown, path = ''): FieldError[] {
  if (value === undefined || value === null) return [];
  const errors: FieldError[] = [];
  for (const r of schema['x-kubernetes-validations'] ?? []) {
    if (celTwin(r.rule)?.(value) !== false) continue;
    const field = `${path}${r.fieldPath ?? ''}`.replace(/^\./, '') || 'spec';
    errors.push({ field, message: r.message });
  }
  if (Array.isArray(value) && schema.items) {
    const items = schema.items as Schema;
    for (const [i, v] of value.entries()) errors.push(...celErrors(items, v, `${path}.${i}`));
  } else if (typeof value === 'object')
    for (const [k, s] of Object.entries(sub(schema.properties)))
      errors.push(...celErrors(s, (value as Value)[k], `${path}.${k}`));
  return errors;
}
