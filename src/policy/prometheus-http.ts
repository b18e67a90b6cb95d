/**
 * Asking a Prometheus server's HTTP API, for the alert blocker and the PromQL health checks alike: one GET
 * under a deadline that covers the body too, and a failure in the words a status message shows. Any
 * failure is an answer of its own (the callers fail closed on it), never an exception.
 */

/** The body of a 2xx answer, or why there is none. */
export type PrometheusAnswer = { body: string } | { error: string };

const BODY_EXCERPT_CHARS = 120;

/** GET `<base><path>`; failures name the server by `base`, as the policy wrote it. */
export async function askPrometheus(
  base: string,
  path: string,
  signal: AbortSignal,
  timeoutMs: number,
): Promise<PrometheusAnswer> {
  const url = apiUrl(base, path);
  let status: number;
  let body: string;
  try {
    const res = await fetch(url, {
      signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]),
      headers: { accept: 'application/json' },
    });
    status = res.status;
    // The body is read under the same deadline: a server that sends headers and then stalls is unreachable.
    body = await res.text();
  } catch (error) {
    if (signal.aborted) return { error: `Prometheus check at ${base} aborted` };
    return { error: `Prometheus unreachable at ${base}: ${causeOf(error, timeoutMs)}` };
  }
  if (status < 200 || status > 299) {
    return { error: `Prometheus at ${base} answered HTTP ${status}: ${excerpt(body)}` };
  }
  return { body };
}

/** `<base><path>`, keeping a path prefix such as http://host/prometheus. */
export function apiUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, '')}${path}`;
}

/** A fetch failure in a few words: the socket error's code and message, or the deadline. */
function causeOf(error: unknown, timeoutMs: number): string {
  if (error instanceof DOMException && error.name === 'TimeoutError')
    return `no answer within ${timeoutMs} ms`;
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause;
  if (cause instanceof Error) {
    const code = (cause as NodeJS.ErrnoException).code;
    return code && !cause.message.includes(code) ? `${code} ${cause.message}` : cause.message;
  }
  return error.message;
}

/** The start of a body on one line, for a reason. */
export function excerpt(body: string): string {
  const line = body.replace(/\s+/g, ' ').trim();
  return line === '' ? '(empty body)' : truncate(line, BODY_EXCERPT_CHARS);
}

export function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
