/**
 * A PromQL instant query (GET <url>/api/v1/query), for the Prometheus health checks: the samples of a
 * vector or the value of a scalar. A range vector or a string is no answer a condition can judge, and
 * says so; any other failure comes back in words (prometheus-http.ts).
 */
import { askPrometheus, excerpt, isRecord } from './prometheus-http.ts';

/** One sample of an instant vector (a scalar is one sample without labels). */
export interface Sample {
  labels: Record<string, string>;
  value: number;
}

const QUERY_TIMEOUT_MS = 5000;

/** The query's samples, or why there are none. Never throws. */
export async function queryPrometheus(
  url: string,
  query: string,
  signal: AbortSignal,
  timeoutMs = QUERY_TIMEOUT_MS,
): Promise<{ samples: Sample[] } | { error: string }> {
  const answer = await askPrometheus(
    url,
    `/api/v1/query?query=${encodeURIComponent(query)}`,
    signal,
    timeoutMs,
  );
  if ('error' in answer) return answer;
  const samples = parseQueryResponse(answer.body);
  if (samples instanceof Error) {
    return { error: `Prometheus at ${url} answered the query with ${samples.message}` };
  }
  return { samples };
}

/** The samples of a /api/v1/query answer, or an Error saying what is wrong with it. */
export function parseQueryResponse(body: string): Sample[] | Error {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return new Error(`no JSON: ${excerpt(body)}`);
  }
  if (!isRecord(json)) return new Error(`no JSON object: ${excerpt(body)}`);
  if (json.status !== 'success') {
    const why = typeof json.error === 'string' ? `: ${json.error}` : '';
    return new Error(`status ${JSON.stringify(json.status)}${why}`);
  }
  const data = json.data;
  if (!isRecord(data)) return new Error('no data');
  if (data.resultType === 'scalar') {
    const value = sampleValue(data.result);
    return value === undefined ? new Error('a malformed scalar') : [{ labels: {}, value }];
  }
  if (data.resultType !== 'vector') {
    return new Error(
      `a ${String(data.resultType)} result; a health check takes an instant vector or a scalar`,
    );
  }
  if (!Array.isArray(data.result)) return new Error('a vector that is not a list');
  const samples: Sample[] = [];
  for (const [i, s] of data.result.entries()) {
    const value = isRecord(s) ? sampleValue(s.value) : undefined;
    const labels = isRecord(s) && isRecord(s.metric) ? s.metric : undefined;
    if (value === undefined || !labels || !Object.values(labels).every((v) => typeof v === 'string')) {
      return new Error(`a malformed sample at result[${i}]`);
    }
    samples.push({ labels: labels as Record<string, string>, value });
  }
  return samples;
}

/** Prometheus's words for the values a JavaScript number spells otherwise. */
const SPECIAL: Record<string, number> = {
  NaN: Number.NaN,
  '+Inf': Number.POSITIVE_INFINITY,
  '-Inf': Number.NEGATIVE_INFINITY,
};

/** `[<time>, "<value>"]` → the value, else undefined. */
function sampleValue(pair: unknown): number | undefined {
  if (!Array.isArray(pair) || pair.length !== 2 || typeof pair[1] !== 'string') return undefined;
  const text = pair[1];
  if (text in SPECIAL) return SPECIAL[text];
  const value = Number(text);
  return text.trim() === '' || Number.isNaN(value) ? undefined : value;
}
