/**
 * The API server's own request latency (its apiserver_request_duration_seconds histogram from /metrics),
 * between two scrapes: how long the server took to answer requests of one verb and resource, whoever
 * sent them. Pure, so the parsing and the arithmetic are unit-tested.
 */

/** Cumulative bucket counts by upper bound (seconds; +Inf last), summed over every matching series. */
export type Histogram = Map<number, number>;

/** Each sample of the metric `name` in a /metrics text, with its labels. */
function* samples(
  metrics: string,
  name: string,
): Generator<{ labels: Record<string, string>; value: number }> {
  const series = new RegExp(`^${name}\\{([^}]*)\\} (\\S+)$`);
  for (const line of metrics.split('\n')) {
    const m = series.exec(line);
    if (!m) continue;
    const labels = Object.fromEntries(
      [...(m[1] as string).matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1] as string, l[2] as string]),
    );
    yield { labels, value: Number(m[2]) };
  }
}

/** The buckets of requests with this verb on this resource (no subresource) in a /metrics text. */
export function requestHistogram(metrics: string, verb: string, resource: string): Histogram {
  const buckets: Histogram = new Map();
  for (const { labels, value } of samples(metrics, 'apiserver_request_duration_seconds_bucket')) {
    if (labels.verb !== verb || labels.resource !== resource || (labels.subresource ?? '') !== '') continue;
    const le = labels.le === '+Inf' ? Number.POSITIVE_INFINITY : Number(labels.le);
    buckets.set(le, (buckets.get(le) ?? 0) + value);
  }
  return new Map([...buckets].sort((a, b) => a[0] - b[0]));
}

/** What was counted between `before` and `after`. */
export function histogramDelta(before: Histogram, after: Histogram): Histogram {
  return new Map([...after].map(([le, n]) => [le, n - (before.get(le) ?? 0)]));
}

/**
 * The upper bound of the bucket that holds the `percent` percentile: the latency is at most this. NaN
 * without any request.
 */
export function percentileBound(h: Histogram, percent: number): number {
  const total = h.get(Number.POSITIVE_INFINITY) ?? 0;
  if (total === 0) return Number.NaN;
  for (const [le, n] of h) if (n >= (percent / 100) * total) return le;
  return Number.POSITIVE_INFINITY;
}

/** The requests counted in apiserver_request_total whose labels `keep` accepts, in a /metrics text. */
function requestTotal(metrics: string, keep: (labels: Record<string, string>) => boolean): number {
  let sum = 0;
  for (const { labels, value } of samples(metrics, 'apiserver_request_total')) if (keep(labels)) sum += value;
  return sum;
}

/**
 * Pod evictions the API server answered with this status code, in a /metrics text: "429" a
 * PodDisruptionBudget refused, "201" it granted (each one a pod gone, and a replacement made).
 */
export function evictions(metrics: string, code: string): number {
  return requestTotal(
    metrics,
    (l) => l.code === code && l.resource === 'pods' && l.subresource === 'eviction',
  );
}

/**
 * Requests the API server has answered, in a /metrics text, watches left out (one is counted when it
 * ends, whatever it carried). A rollout of the same size sends about the same requests, so the server's
 * CPU per request compares how fast the machine was across runs.
 */
export function requestsAnswered(metrics: string): number {
  return requestTotal(metrics, (l) => l.verb !== 'WATCH');
}
