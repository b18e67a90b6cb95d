/**
 * A Plan's channel resolved to a version, as SUC does: GET the URL without following redirects; a
 * redirect's Location names the version in its last path element (SUC takes 302; 301, 303, 307 and 308
 * mean the same to any HTTP client), a 2xx names it in the URL's own; anything else is an error naming
 * the URL and what happened, so the Plan's LatestResolved condition can say why. The request carries
 * SUC's headers, which channel servers may use: the cluster's ID and the version the Plan has now.
 */
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

export interface ResolveOptions {
  signal?: AbortSignal;
  timeoutMs: number;
  /** SUC's cluster ID: the kube-system namespace's UID. Sent when known. */
  clusterId?: string;
  /** The Plan's status.latestVersion. Sent when it has one. */
  latestVersion?: string;
}

/** SUC's channel request headers. */
const ChannelHeaders = {
  clusterId: 'X-SUC-Cluster-ID',
  latestVersion: 'X-SUC-Latest-Version',
} as const;

export async function resolveChannel(url: string, o: ResolveOptions): Promise<string> {
  const { signal, timeoutMs } = o;
  const timeout = AbortSignal.timeout(timeoutMs);
  const headers: Record<string, string> = {};
  if (o.clusterId) headers[ChannelHeaders.clusterId] = o.clusterId;
  if (o.latestVersion) headers[ChannelHeaders.latestVersion] = o.latestVersion;
  let response: Response;
  try {
    response = await fetch(url, {
      redirect: 'manual',
      headers,
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
  } catch (err) {
    const cause = timeout.aborted
      ? `no answer within ${timeoutMs} ms`
      : ((err as Error & { cause?: Error }).cause?.message ?? (err as Error).message);
    throw new Error(`channel ${url}: ${cause}`);
  }
  await response.body?.cancel();
  if (REDIRECTS.has(response.status)) {
    const location = response.headers.get('location');
    if (!location) throw new Error(`channel ${url}: ${response.status} without a Location header`);
    return lastPathElement(new URL(location, url), url);
  }
  if (response.status >= 200 && response.status < 300) return lastPathElement(new URL(url), url);
  throw new Error(`channel ${url}: unexpected response ${response.status} ${response.statusText}`.trim());
}

function lastPathElement(target: URL, url: string): string {
  const version = decodeURIComponent(target.pathname.split('/').filter(Boolean).at(-1) ?? '');
  if (!version) throw new Error(`channel ${url}: ${target.href} names no version in its path`);
  return version;
}
