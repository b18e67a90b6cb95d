/**
 * A KubeConfig whose API clients share one connection pool per cluster and user.
 *
 * @kubernetes/client-node 2.x builds a new undici Agent in every applySecurityAuthentication(), that is
 * for every request and every watch: each request would pay a TLS handshake and a new SecureContext, and
 * kept-alive sockets would pile up (CPU and memory grow with the request rate). Credentials stay per
 * request (the Authorization header is still applied every time, so rotated tokens are picked up); only
 * the transport is shared.
 *
 * The transport is HTTP/1.1, never HTTP/2: Node's native HTTP/2 client can loop forever doubling its
 * outgoing buffer after a server restart (docs/decisions/0022-http1-only.md), and an operator must
 * survive API server restarts; HTTP/1.1 is as fast here.
 *
 * On HTTP/1.1 a connection carries one request at a time and undici opens one per request in flight (~150
 * KiB each with TLS), so requests share a pool of REQUEST_CONNECTIONS (beyond it they queue, as HTTP/2
 * streams would past the server's stream limit) to bound memory under a drain's eviction bursts; watches,
 * each holding its connection for minutes, get a pool of their own that requests cannot starve. undici is
 * a direct dependency for that: the library builds its Agent without a connection limit, and the transport
 * options it derives reach the request pool through createDispatcherOptions (#transports).
 *
 * One pool is one queue: a vital request (the leader's Lease renewal) must not wait behind a burst of
 * evictions, so separatePool() gives it connections of its own.
 *
 * setFence() drops requests a stale leader or an ended attempt would still send (fence.ts).
 */
import type * as https from 'node:https';
import {
  type Cluster,
  type DispatcherOptions,
  KubeConfig,
  type RequestContext,
} from '@kubernetes/client-node';
import { Agent } from 'undici';
import type { Fence } from './fence.ts';

type Dispatcher = NonNullable<ReturnType<RequestContext['getDispatcher']>>;

/** undici's connector option (buildConnector.BuildOptions), absent from the library's ConnectOptions type. */
const HTTP1_ONLY = { allowH2: false } as const;

/** Connections per API server for requests other than watches. */
const REQUEST_CONNECTIONS = 64;

export interface PoolOptions {
  /** Connections per API server for requests other than watches; more requests queue. */
  requestConnections?: number;
  /** For separatePool(): false leaves its requests unfenced (the leader election's own). Default true. */
  fenced?: boolean;
}

/** The library's transport options, with HTTP/2 refused on each kind. */
function http1Only(options: DispatcherOptions): DispatcherOptions {
  switch (options.type) {
    case 'agent': {
      const connect = { ...options.connect, ...HTTP1_ONLY };
      return { ...options, connect };
    }
    case 'proxy': {
      // The TLS connection through the proxy to the API server is made with requestTls.
      const requestTls = { ...options.requestTls, ...HTTP1_ONLY };
      return { ...options, requestTls };
    }
    case 'none': {
      // No TLS settings of its own: the library would use undici's global dispatcher, which offers h2.
      const connect = { keepAlive: true, keepAliveInitialDelay: 30_000, ...HTTP1_ONLY };
      return { type: 'agent', connect };
    }
    case 'socks':
      // Its TLS socket is made with these options, which offer no ALPN: HTTP/1.1.
      return options;
  }
}

type Headers = Parameters<Dispatcher['dispatch']>[0]['headers'];

/** `headers` (as undici dispatches them: an object, or a flat array of names and values) with `userAgent`. */
export function withUserAgent(headers: Headers, userAgent: string): Headers {
  if (Array.isArray(headers)) {
    const out: string[] = [];
    for (let i = 0; i + 1 < headers.length; i += 2) {
      if (String(headers[i]).toLowerCase() !== 'user-agent')
        out.push(String(headers[i]), String(headers[i + 1]));
    }
    return [...out, 'user-agent', userAgent];
  }
  const out: Record<string, string | string[] | undefined> = {};
  for (const [name, value] of Object.entries(
    (headers ?? {}) as Record<string, string | string[] | undefined>,
  )) {
    if (name.toLowerCase() !== 'user-agent') out[name] = value;
  }
  return { ...out, 'user-agent': userAgent };
}

/** The library sets its own User-Agent after any hook of ours: it is replaced on the way out. */
const userAgentInterceptor =
  (userAgent: string): Parameters<Dispatcher['compose']>[0] =>
  (dispatch) =>
  (options, handler) =>
    dispatch({ ...options, headers: withUserAgent(options.headers, userAgent) }, handler);

export class PooledKubeConfig extends KubeConfig {
  readonly #pools = new Map<string, Dispatcher>();
  /** The transport options derived for each cluster and user, which the request pool is built with. */
  readonly #transports = new Map<string, DispatcherOptions>();
  readonly #requestConnections: number;
  /** Made by separatePool(): reset and closed with this one. */
  readonly #separate: PooledKubeConfig[] = [];
  #fence: Fence | undefined;
  readonly #fenced: boolean;
  #userAgent: string | undefined;

  constructor(options: PoolOptions = {}) {
    super();
    const n = options.requestConnections ?? REQUEST_CONNECTIONS;
    if (!Number.isInteger(n) || n < 1)
      throw new Error(`requestConnections must be a positive integer, not ${n}`);
    this.#requestConnections = n;
    this.#fenced = options.fenced ?? true;
  }

  /**
   * Fences every request other than a watch (fence.ts), here and in every separate pool made with
   * `fenced` left true, before or after. Set it before any request is sent.
   */
  setFence(fence: Fence): void {
    if (this.#fenced) this.#fence = fence;
    for (const kc of this.#separate) kc.setFence(fence);
  }

  /**
   * Sent as User-Agent on every request here and in the separate pools, instead of the library's own:
   * which process sent it, in the API server's audit log. Set it before any request is sent.
   */
  setUserAgent(userAgent: string): void {
    this.#userAgent = userAgent;
    for (const kc of this.#separate) kc.setUserAgent(userAgent);
  }

  /** What the transport depends on: server, trust, client certificate, proxy. */
  #transportKey(cluster: Cluster | null): string {
    const user = this.getCurrentUser();
    return JSON.stringify([
      cluster?.server,
      cluster?.caFile,
      cluster?.caData,
      cluster?.skipTLSVerify,
      cluster?.tlsServerName,
      cluster?.proxyUrl,
      user?.name,
      user?.certFile,
      user?.certData,
      user?.keyFile,
      user?.keyData,
    ]);
  }

  /** The library's transport, with HTTP/2 refused (see the module comment). */
  override createDispatcherOptions(
    cluster: Cluster | null,
    agentOptions: https.AgentOptions,
  ): DispatcherOptions {
    const options = http1Only(super.createDispatcherOptions(cluster, agentOptions));
    this.#transports.set(this.#transportKey(cluster), options);
    return options;
  }

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    const fresh = context.getDispatcher();
    if (!fresh) return;
    // A fresh agent that is not kept has never connected, so dropping it costs nothing.
    const transportKey = this.#transportKey(this.getCurrentCluster());
    const watch = new URL(context.getUrl()).searchParams.get('watch') === 'true';
    const key = `${watch ? 'watches' : 'requests'} ${transportKey}`;
    let pooled = this.#pools.get(key);
    if (!pooled) {
      const transport = this.#transports.get(transportKey);
      // Through a proxy the library's agent is kept as it is: no connection limit there.
      pooled =
        !watch && transport?.type === 'agent'
          ? new Agent({ connect: transport.connect, connections: this.#requestConnections })
          : fresh;
      const interceptors = [
        ...(this.#userAgent ? [userAgentInterceptor(this.#userAgent)] : []),
        ...(!watch && this.#fence ? [this.#fence.interceptor] : []),
      ];
      if (interceptors.length > 0) pooled = pooled.compose(interceptors);
      this.#pools.set(key, pooled);
    }
    context.setDispatcher(pooled);
  }

  /**
   * The same clusters, users and contexts (credentials included, so rotated tokens are still read per
   * request) over connections of its own: requests here never queue behind this KubeConfig's, nor theirs
   * behind these. resetConnections() and close() on this KubeConfig reach the separate one too: a server
   * that stopped answering on one connection (the informer's watchdog) is no better on the others.
   */
  separatePool(options: PoolOptions = {}): PooledKubeConfig {
    const kc = new PooledKubeConfig(options);
    if (this.#fence) kc.setFence(this.#fence);
    if (this.#userAgent) kc.setUserAgent(this.#userAgent);
    kc.loadFromOptions({
      clusters: this.clusters,
      users: this.users,
      contexts: this.contexts,
      currentContext: this.currentContext,
    });
    this.#separate.push(kc);
    return kc;
  }

  /**
   * Drops the shared connections at once (requests on them fail and are retried by their callers); the
   * next request opens a new one. For a connection that stopped answering without breaking.
   */
  resetConnections(): void {
    const pools = [...this.#pools.values()];
    this.#pools.clear();
    for (const p of pools) void p.destroy().catch(() => {});
    for (const kc of this.#separate) kc.resetConnections();
  }

  /**
   * Ends the shared connections now: open watches and requests fail. (undici's graceful close() would
   * wait for every open watch to time out — minutes — which hung the harness's stop.)
   */
  async close(): Promise<void> {
    const pools = [...this.#pools.values()];
    this.#pools.clear();
    await Promise.all([...pools.map((p) => p.destroy()), ...this.#separate.map((kc) => kc.close())]);
  }
}
