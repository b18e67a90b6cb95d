/**
 * The Prometheus alert blocker of an UpdatePolicy (`blockers.prometheus`): while a matching alert fires,
 * no node is newly admitted for reboot. Rules:
 *
 * - An alert matches when its alertname matches `alerts` (a regular expression matched against the whole
 *   name, default ".*"), every label in `matchers` has exactly the given value, and its name is not in
 *   `ignoreAlerts`.
 * - Only firing alerts block; pending ones do not: a pending alert has not yet held for its rule's `for:`,
 *   and the rule's author chose that time to tell a blip from a problem.
 * - Prometheus unreachable, answering an HTTP error, or answering anything but the alerts API's shape
 *   blocks (fails closed): an outage we cannot see is no proof that there is none, and a reboot is the
 *   worst time to find out.
 * - The reason names the first few matching alerts, in a stable order so that a status does not flap
 *   between checks, and is kept short enough for a condition message.
 *
 * Reads GET <url>/api/v1/alerts, the alerts of the server's own rules (kured queries the ALERTS series
 * instead; both see the same rules, the alerts API without a query to build).
 */
import type { PrometheusBlocker as PrometheusBlockerSpec } from '../api/update-policy.ts';
import type { FieldError } from './field-error.ts';
import { askPrometheus, excerpt, isRecord, truncate } from './prometheus-http.ts';

/** `blockers.prometheus` as update-policy.ts defines it (this module's PrometheusBlocker is the checker). */
export type { PrometheusBlockerSpec };

/** One alert as /api/v1/alerts reports it (the fields nuo reads). */
export interface PromAlert {
  labels: Record<string, string>;
  /** "firing", "pending" (or "inactive" on some versions). */
  state: string;
  annotations?: Record<string, string>;
  activeAt?: string;
  value?: string;
}

export interface BlockerVerdict {
  blocked: boolean;
  reason: string;
  /** Blocked because Prometheus could not be asked or answered nonsense (fail closed), not by an alert. */
  unavailable?: true;
}

export type ParseResult<T> = { ok: true; value: T } | { ok: false; errors: FieldError[] };

export interface PrometheusBlockerOptions {
  /** Deadline for the whole request, body included (default 5000 ms). */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 5000;
const REASON_MAX_CHARS = 200;
/** Alerts named in a reason before "and N more". */
const REASON_MAX_ALERTS = 3;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const KNOWN_KEYS = new Set(['url', 'alerts', 'matchers', 'ignoreAlerts']);

// ---------------------------------------------------------------------------------------------------
// Parsing the spec

/** Validates `blockers.prometheus` as written in an UpdatePolicy; every problem is reported at once. */
export function parsePrometheusSpec(
  spec: unknown,
  field = 'blockers.prometheus',
): ParseResult<PrometheusBlockerSpec> {
  if (!isRecord(spec)) {
    return { ok: false, errors: [{ field, message: 'must be an object with at least `url`' }] };
  }
  const errors: FieldError[] = [];
  for (const key of Object.keys(spec)) {
    if (!KNOWN_KEYS.has(key)) {
      errors.push({
        field: `${field}.${key}`,
        message: 'unknown field; accepted: url, alerts, matchers, ignoreAlerts',
      });
    }
  }
  const url = parseUrl(spec.url, `${field}.url`, errors);
  const alerts = parseAlertsPattern(spec.alerts, `${field}.alerts`, errors);
  const matchers = parseMatchers(spec.matchers, `${field}.matchers`, errors);
  const ignoreAlerts = parseIgnoreAlerts(spec.ignoreAlerts, `${field}.ignoreAlerts`, errors);
  if (errors.length > 0 || url === undefined) return { ok: false, errors };
  const value: PrometheusBlockerSpec = { url };
  if (alerts !== undefined) value.alerts = alerts;
  if (matchers !== undefined) value.matchers = matchers;
  if (ignoreAlerts !== undefined) value.ignoreAlerts = ignoreAlerts;
  return { ok: true, value };
}

function parseUrl(raw: unknown, field: string, errors: FieldError[]): string | undefined {
  const accepted = 'accepted: an http:// or https:// URL, optionally with a path prefix';
  if (typeof raw !== 'string' || raw.trim() === '') {
    errors.push({ field, message: `is required; ${accepted}` });
    return undefined;
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    errors.push({ field, message: `"${raw}" is not a URL; ${accepted}` });
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    errors.push({ field, message: `scheme "${url.protocol}" is not supported; ${accepted}` });
    return undefined;
  }
  if (url.username !== '' || url.password !== '') {
    // Credentials in a custom resource are readable by everyone who can read the policy, and end up in logs.
    errors.push({ field, message: `must not contain credentials (user:password@); ${accepted}` });
    return undefined;
  }
  if (url.search !== '' || url.hash !== '') {
    errors.push({ field, message: `must not have a query or fragment; ${accepted}` });
    return undefined;
  }
  return raw;
}

function parseAlertsPattern(raw: unknown, field: string, errors: FieldError[]): string | undefined {
  if (raw === undefined) return undefined;
  const accepted = 'accepted: a regular expression matched against the whole alertname, e.g. "Node.*"';
  if (typeof raw !== 'string') {
    errors.push({ field, message: `must be a string; ${accepted}` });
    return undefined;
  }
  const compiled = compileAlertsPattern(raw);
  if (compiled instanceof Error) {
    errors.push({ field, message: `does not compile (${compiled.message}); ${accepted}` });
    return undefined;
  }
  return raw;
}

function parseMatchers(
  raw: unknown,
  field: string,
  errors: FieldError[],
): Record<string, string> | undefined {
  if (raw === undefined) return undefined;
  const accepted = 'accepted: a map of Prometheus label names to the exact values an alert must carry';
  if (!isRecord(raw)) {
    errors.push({ field, message: `must be an object; ${accepted}` });
    return undefined;
  }
  const matchers: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw)) {
    if (!LABEL_NAME.test(name)) {
      errors.push({
        field: `${field}.${name}`,
        message: `is not a label name ([a-zA-Z_][a-zA-Z0-9_]*); ${accepted}`,
      });
    } else if (typeof value !== 'string') {
      errors.push({ field: `${field}.${name}`, message: `must be a string; ${accepted}` });
    } else {
      matchers[name] = value;
    }
  }
  return matchers;
}

function parseIgnoreAlerts(raw: unknown, field: string, errors: FieldError[]): string[] | undefined {
  if (raw === undefined) return undefined;
  const accepted = 'accepted: a list of alertnames that never block';
  if (!Array.isArray(raw)) {
    errors.push({ field, message: `must be a list; ${accepted}` });
    return undefined;
  }
  raw.forEach((name, i) => {
    if (typeof name !== 'string' || name === '') {
      errors.push({ field: `${field}[${i}]`, message: `must be a non-empty string; ${accepted}` });
    }
  });
  return raw.filter((name): name is string => typeof name === 'string' && name !== '');
}

/** The alerts pattern anchored at both ends, as Prometheus anchors its regexp matchers; an Error if invalid. */
function compileAlertsPattern(pattern: string): RegExp | Error {
  try {
    return new RegExp(`^(?:${pattern})$`);
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err));
  }
}

// ---------------------------------------------------------------------------------------------------
// Evaluating alerts

/** Blocked while at least one firing alert matches the spec. Pure. */
export function evaluateAlerts(alerts: readonly PromAlert[], spec: PrometheusBlockerSpec): BlockerVerdict {
  const pattern = compileAlertsPattern(spec.alerts ?? '.*');
  if (pattern instanceof Error) {
    return { blocked: true, reason: `alerts pattern "${spec.alerts}" does not compile: ${pattern.message}` };
  }
  const firing = alerts.filter((a) => a.state === 'firing');
  const matching = firing.filter((a) => matches(a, spec, pattern));
  if (matching.length === 0) {
    const others = firing.length > 0 ? ` (${firing.length} firing, none matching)` : '';
    return { blocked: false, reason: `no matching alert firing${others}` };
  }
  return { blocked: true, reason: describeFiring(matching) };
}

function matches(alert: PromAlert, spec: PrometheusBlockerSpec, pattern: RegExp): boolean {
  const name = alert.labels.alertname ?? '';
  if (!pattern.test(name)) return false;
  if (spec.ignoreAlerts?.includes(name)) return false;
  for (const [label, value] of Object.entries(spec.matchers ?? {})) {
    if (alert.labels[label] !== value) return false;
  }
  return true;
}

/** `alert NodeDown{instance="a"} firing; alert X firing and 2 more`, sorted, at most REASON_MAX_CHARS. */
function describeFiring(alerts: readonly PromAlert[]): string {
  const described = alerts.map(describeAlert).sort();
  const shown = described.slice(0, REASON_MAX_ALERTS).join('; ');
  const more =
    described.length > REASON_MAX_ALERTS ? ` and ${described.length - REASON_MAX_ALERTS} more` : '';
  return truncate(`${shown}${more}`, REASON_MAX_CHARS);
}

function describeAlert(alert: PromAlert): string {
  const labels = Object.entries(alert.labels)
    .filter(([name]) => name !== 'alertname')
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, value]) => `${name}=${JSON.stringify(value)}`);
  const set = labels.length > 0 ? `{${labels.join(', ')}}` : '';
  return `alert ${alert.labels.alertname ?? '(no alertname)'}${set} firing`;
}

// ---------------------------------------------------------------------------------------------------
// Asking Prometheus

const ALERTS_PATH = '/api/v1/alerts';

/** Asks a Prometheus server whether a matching alert fires. `check` never throws. */
export class PrometheusBlocker {
  readonly #spec: PrometheusBlockerSpec;
  readonly #timeoutMs: number;

  constructor(
    spec: PrometheusBlockerSpec,
    { timeoutMs = DEFAULT_TIMEOUT_MS }: PrometheusBlockerOptions = {},
  ) {
    this.#spec = spec;
    this.#timeoutMs = timeoutMs;
  }

  async check(signal: AbortSignal): Promise<BlockerVerdict> {
    const url = this.#spec.url;
    const answer = await askPrometheus(url, ALERTS_PATH, signal, this.#timeoutMs);
    if ('error' in answer) return { blocked: true, unavailable: true, reason: answer.error };
    const alerts = parseAlertsResponse(answer.body);
    if (alerts instanceof Error) {
      return {
        blocked: true,
        unavailable: true,
        reason: `Prometheus at ${url} answered a malformed alerts response: ${alerts.message}`,
      };
    }
    return evaluateAlerts(alerts, this.#spec);
  }
}

/** The alerts of a /api/v1/alerts answer, or an Error saying what is wrong with its shape. */
export function parseAlertsResponse(body: string): PromAlert[] | Error {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return new Error(`not JSON: ${excerpt(body)}`);
  }
  if (!isRecord(json)) return new Error(`not a JSON object: ${excerpt(body)}`);
  if (json.status !== 'success') return new Error(`status is ${JSON.stringify(json.status)}, not "success"`);
  if (!isRecord(json.data) || !Array.isArray(json.data.alerts)) return new Error('data.alerts is not a list');
  const alerts: PromAlert[] = [];
  for (const [i, alert] of json.data.alerts.entries()) {
    if (!isPromAlert(alert)) return new Error(`data.alerts[${i}] lacks string labels or state`);
    alerts.push(alert);
  }
  return alerts;
}

function isPromAlert(value: unknown): value is PromAlert {
  return (
    isRecord(value) &&
    typeof value.state === 'string' &&
    isRecord(value.labels) &&
    Object.values(value.labels).every((v) => typeof v === 'string')
  );
}
