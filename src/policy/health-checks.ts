/**
 * An UpdatePolicy's health checks (`healthChecks`): compiled once per generation, and judged from what
 * was read. Pure. Rules:
 *
 * - An object check passes when the object it names exists, or at least one object matches its selector,
 *   and its CEL expression is true for each of them.
 * - A Prometheus check passes when its condition is true for every sample the query returns; a query that
 *   returns none passes only with `whenEmpty: Healthy`.
 * - Whatever cannot be judged fails (closed): the read failed, the object is missing, the expression stops
 *   on an error or gives something other than a bool. The reading says what was read, so the status
 *   shows why.
 */
import type { CelInput } from '@bufbuild/cel';
import type { HealthCheck } from '../api/update-policy.ts';
import { type LabelSelectorSpec, labelSelector, selectorText } from '../kube/selector.ts';
import { type CelProgram, celValue, compileCel } from './cel.ts';
import type { Sample } from './prometheus-query.ts';

export interface ObjectCheck {
  type: 'object';
  name: string;
  apiVersion: string;
  kind: string;
  namespace?: string;
  /** The one object checked, or the label selector (as the list request sends it) of those checked. */
  target: { name: string } | { selector: string };
  expression: string;
  program: CelProgram;
}

export interface PrometheusCheck {
  type: 'prometheus';
  name: string;
  url: string;
  query: string;
  condition: string;
  program: CelProgram;
  emptyIsHealthy: boolean;
}

export type ResolvedHealthCheck = ObjectCheck | PrometheusCheck;

/** One check's outcome, and what it read. */
export interface CheckResult {
  name: string;
  healthy: boolean;
  reading: string;
}

/** Every check of a policy, read together at `at` (ms since the epoch). */
export interface HealthReading {
  at: number;
  checks: CheckResult[];
}

const READING_MAX_CHARS = 300;
const SAMPLES_SHOWN = 3;
const COMPARISON = /^\s*(==|!=|<=|>=|<|>)\s*(\S.*)$/;

/**
 * The check compiled; throws an Error naming the part (field) that does not compile. The API server has
 * already made sure exactly one of object and prometheus is set, and name or selector.
 */
export function resolveHealthCheck(spec: HealthCheck): ResolvedHealthCheck {
  if (spec.object) {
    const o = spec.object;
    const target = o.name !== undefined ? { name: o.name } : { selector: checkedSelector(o.selector ?? {}) };
    return {
      type: 'object',
      name: spec.name,
      apiVersion: o.apiVersion,
      kind: o.kind,
      ...(o.namespace !== undefined ? { namespace: o.namespace } : {}),
      target,
      expression: o.expression,
      program: compiled('object.expression', o.expression, ['object']),
    };
  }
  const p = spec.prometheus;
  if (!p) throw new Error('set exactly one of object and prometheus');
  return {
    type: 'prometheus',
    name: spec.name,
    url: p.url,
    query: p.query,
    condition: p.condition,
    program: compiled('prometheus.condition', conditionExpression(p.condition), ['value', 'labels']),
    emptyIsHealthy: p.whenEmpty === 'Healthy',
  };
}

/** A condition that starts with a comparison ("== 0", "< 0.05") compares the sample's value. */
export function conditionExpression(condition: string): string {
  const m = COMPARISON.exec(condition);
  return m ? `value ${m[1]} ${m[2]}` : condition;
}

function compiled(field: string, expression: string, variables: readonly string[]): CelProgram {
  try {
    return compileCel(expression, variables);
  } catch (err) {
    throw new Error(`${field} does not compile: ${(err as Error).message}`);
  }
}

function checkedSelector(spec: LabelSelectorSpec): string {
  labelSelector(spec);
  return selectorText(spec);
}

/** The objects an object check read (the one named, or those its selector matched), or why none were. */
export type ObjectsRead = { objects: unknown[] } | { error: string };

/** Which objects a check reads, in words: `Widget ceph`, `Pod kube-system/{app=etcd}`. */
export function checkTarget(c: ObjectCheck): string {
  const ns = c.namespace ? `${c.namespace}/` : '';
  return 'name' in c.target ? `${c.kind} ${ns}${c.target.name}` : `${c.kind} ${ns}{${c.target.selector}}`;
}

export function objectVerdict(c: ObjectCheck, read: ObjectsRead): CheckResult {
  const fail = (reading: string) => result(c, false, reading);
  if ('error' in read) return fail(`${checkTarget(c)} could not be read: ${read.error}`);
  if (read.objects.length === 0) {
    return fail(
      'name' in c.target ? `${checkTarget(c)} not found` : `no ${checkTarget(c)} exists (nothing to check)`,
    );
  }
  for (const object of read.objects) {
    const outcome = c.program({ object: celValue(object) });
    const which = `${c.kind} ${objectName(object)}`;
    if (!outcome.ok) return fail(`${which}: the expression failed: ${outcome.error}`);
    if (typeof outcome.value !== 'boolean') {
      return fail(`${which}: the expression gave ${shown(outcome.value)}, not a bool`);
    }
    if (!outcome.value) return fail(`${which}: false; its status: ${json(statusOf(object))}`);
  }
  const n = read.objects.length;
  return result(c, true, n === 1 ? `${checkTarget(c)}: true` : `${checkTarget(c)}: true for all ${n}`);
}

/** The samples a Prometheus check's query returned, or why there are none (unreachable, an error). */
export type SamplesRead = { samples: Sample[] } | { error: string };

export function prometheusVerdict(c: PrometheusCheck, read: SamplesRead): CheckResult {
  if ('error' in read) return result(c, false, read.error);
  if (read.samples.length === 0) {
    return result(c, c.emptyIsHealthy, `the query returned no sample (whenEmpty: ${whenEmpty(c)})`);
  }
  for (const s of read.samples) {
    const bindings: Record<string, CelInput> = { value: s.value, labels: new Map(Object.entries(s.labels)) };
    const outcome = c.program(bindings);
    if (!outcome.ok) return result(c, false, `${sample(s)}: the condition failed: ${outcome.error}`);
    if (typeof outcome.value !== 'boolean') {
      return result(c, false, `${sample(s)}: the condition gave ${shown(outcome.value)}, not a bool`);
    }
    if (!outcome.value) return result(c, false, `${sample(s)} fails "${c.condition}"`);
  }
  const shownSamples = read.samples.slice(0, SAMPLES_SHOWN).map(sample).join(', ');
  const more = read.samples.length > SAMPLES_SHOWN ? ` and ${read.samples.length - SAMPLES_SHOWN} more` : '';
  return result(c, true, `${shownSamples}${more} meet "${c.condition}"`);
}

/** The first failing check of a reading: the one a status names. */
export function firstFailing(reading: HealthReading): CheckResult | undefined {
  return reading.checks.find((c) => !c.healthy);
}

function result(c: ResolvedHealthCheck, healthy: boolean, reading: string): CheckResult {
  return { name: c.name, healthy, reading: clip(reading) };
}

function whenEmpty(c: PrometheusCheck): string {
  return c.emptyIsHealthy ? 'Healthy' : 'Unhealthy';
}

/** `{instance="a", job="x"} 3`, labels sorted, the metric name first when there is one. */
function sample(s: Sample): string {
  const { __name__: metric, ...rest } = s.labels;
  const labels = Object.keys(rest)
    .sort()
    .map((k) => `${k}=${JSON.stringify(rest[k])}`);
  const set = labels.length > 0 ? `{${labels.join(', ')}}` : '';
  const name = `${metric ?? ''}${set}`;
  return name === '' ? String(s.value) : `${name} ${s.value}`;
}

function objectName(object: unknown): string {
  const meta = (object as { metadata?: { name?: string; namespace?: string } } | null)?.metadata;
  return meta?.namespace ? `${meta.namespace}/${meta.name ?? ''}` : (meta?.name ?? '(no name)');
}

function statusOf(object: unknown): unknown {
  return (object as { status?: unknown } | null)?.status ?? null;
}

function shown(value: unknown): string {
  return typeof value === 'bigint' ? String(value) : json(value);
}

function json(value: unknown): string {
  try {
    return JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? String(v) : v)) ?? String(value);
  } catch {
    return String(value);
  }
}

function clip(text: string): string {
  return text.length <= READING_MAX_CHARS ? text : `${text.slice(0, READING_MAX_CHARS - 1)}…`;
}
