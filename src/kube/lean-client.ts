/**
 * The agent's Kubernetes client: get, patch and watch one Node, and read the operator's grant key, over
 * node:https. The agent needs nothing else, and @kubernetes/client-node costs ~130 MiB RSS to import — more than the whole agent may use.
 * Credentials: a kubeconfig's server, CA and client certificate or token (the simulated nodes), or the
 * in-cluster ServiceAccount (a real DaemonSet).
 */
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { createInterface } from 'node:readline';

export interface LeanCredentials {
  server: string;
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  /** Read per request: projected ServiceAccount tokens rotate. */
  token?: () => string;
}

export interface LeanNode {
  metadata: {
    name: string;
    resourceVersion: string;
    annotations?: Record<string, string>;
    labels?: Record<string, string>;
  };
  spec?: { unschedulable?: boolean };
  status?: { nodeInfo?: { bootID?: string } };
}

export interface LeanConfigMap {
  metadata: { name: string; resourceVersion: string };
  data?: Record<string, string>;
}

/** A list of nodes: its resourceVersion is the collection's, current when the list was served. */
export interface LeanNodeList {
  metadata: { resourceVersion: string };
  items: LeanNode[];
}

/** An API failure with the HTTP status, so callers can tell 409 (re-read) from the rest. */
export class LeanApiError extends Error {
  readonly status: number;
  /** Set when the server asked to send the request again after this long (see retryAfterMs). */
  readonly retryAfterMs: number | undefined;
  constructor(status: number, message: string, retryAfterMs?: number) {
    super(message);
    this.status = status;
    this.retryAfterMs = retryAfterMs;
  }
}

const SA_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** client-go's default: how often one request is sent again after the server asked to wait. */
const MAX_RETRIES = 10;
/** A longer Retry-After is obeyed only this long: an agent waiting minutes would miss its grant. */
const MAX_RETRY_AFTER_MS = 10_000;

/**
 * How long to wait before sending a request again, or undefined if it must not be sent again. As in
 * client-go: a 429, or a 5xx that carries Retry-After, was refused before anything was done (API Priority
 * and Fairness turning a burst away, a server shutting down), so any verb may be repeated after the wait
 * the server named. Without the header the answer is final (a 429 from a PodDisruptionBudget has none).
 */
export function retryAfterMs(status: number, retryAfter: string | undefined): number | undefined {
  if (status !== 429 && status < 500) return undefined;
  if (retryAfter === undefined || !/^\s*\d+\s*$/.test(retryAfter)) return undefined;
  return Math.min(Number(retryAfter) * 1000, MAX_RETRY_AFTER_MS);
}

export function inClusterCredentials(): LeanCredentials {
  const host = process.env.KUBERNETES_SERVICE_HOST;
  const port = process.env.KUBERNETES_SERVICE_PORT ?? '443';
  if (!host) throw new Error('not running in a cluster (KUBERNETES_SERVICE_HOST unset): pass --kubeconfig');
  return {
    server: `https://${host.includes(':') ? `[${host}]` : host}:${port}`,
    ca: readFileSync(`${SA_DIR}/ca.crt`),
    token: () => readFileSync(`${SA_DIR}/token`, 'utf8').trim(),
  };
}

export class LeanClient {
  readonly #creds: LeanCredentials;
  readonly #agent: Agent;
  readonly #maxRetries: number;

  /**
   * `idleSockets`: connections kept open between requests (node:https keeps 256). One agent needs one or
   * two; the simulated fleet shares one client among 1,000 agents, and with 256 kept, staging an update
   * on all of them cost ~750 fresh TLS handshakes at once. `maxRetries`: how often a request the server
   * asked to retry later (see retryAfterMs) is sent again before its refusal is the answer.
   */
  constructor(
    creds: LeanCredentials,
    { idleSockets = 256, maxRetries = MAX_RETRIES }: { idleSockets?: number; maxRetries?: number } = {},
  ) {
    if (!/^https:\/\//.test(creds.server))
      throw new Error(`API server must be an https:// URL, got "${creds.server}"`);
    if (!Number.isInteger(maxRetries) || maxRetries < 0)
      throw new Error(`maxRetries must be a whole number ≥ 0, got ${maxRetries}`);
    this.#creds = creds;
    this.#maxRetries = maxRetries;
    this.#agent = new Agent({
      keepAlive: true,
      maxFreeSockets: idleSockets,
      ca: creds.ca,
      cert: creds.cert,
      key: creds.key,
    });
  }

  #headers(extra: Record<string, string> = {}): Record<string, string> {
    const token = this.#creds.token?.();
    return { Accept: 'application/json', ...(token ? { Authorization: `Bearer ${token}` } : {}), ...extra };
  }

  /** One request, sent again as long as the server asks to retry later, at most `maxRetries` times. */
  async #call<T>(method: string, path: string, body?: unknown, contentType?: string): Promise<T> {
    for (let retry = 0; ; retry++) {
      try {
        return await this.#once<T>(method, path, body, contentType);
      } catch (err) {
        if (!(err instanceof LeanApiError) || err.retryAfterMs === undefined) throw err;
        if (retry >= this.#maxRetries) {
          throw new LeanApiError(
            err.status,
            `${err.message} (sent ${retry + 1} times, each time answered "retry later")`,
          );
        }
        await new Promise((r) => setTimeout(r, err.retryAfterMs));
      }
    }
  }

  #once<T>(
    method: string,
    path: string,
    body?: unknown,
    contentType?: string,
    timeoutMs = 30_000,
  ): Promise<T> {
    return new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const req = request(
        `${this.#creds.server}${path}`,
        {
          method,
          agent: this.#agent,
          timeout: timeoutMs,
          headers: this.#headers(payload ? { 'Content-Type': contentType ?? 'application/json' } : {}),
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString();
            const status = res.statusCode ?? 0;
            if (status >= 200 && status < 300) {
              resolve(JSON.parse(text) as T);
              return;
            }
            let message = text;
            try {
              message = (JSON.parse(text) as { message?: string }).message ?? text;
            } catch {
              // not a Status object
            }
            const retryAfter = res.headers['retry-after'];
            reject(
              new LeanApiError(
                status,
                `${method} ${path}: HTTP ${status}: ${message}`,
                retryAfterMs(status, retryAfter),
              ),
            );
          });
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer within ${timeoutMs} ms`)));
      req.on('error', (err) => reject(new Error(`${method} ${path}: ${err.message}`)));
      req.end(payload);
    });
  }

  getNode(name: string): Promise<LeanNode> {
    return this.#call('GET', `/api/v1/nodes/${encodeURIComponent(name)}`);
  }

  /** One ConfigMap (the agent reads the operator's published grant key). */
  getConfigMap(namespace: string, name: string): Promise<LeanConfigMap> {
    return this.#call(
      'GET',
      `/api/v1/namespaces/${encodeURIComponent(namespace)}/configmaps/${encodeURIComponent(name)}`,
    );
  }

  /**
   * Lists the one node `name` (a field selector). Watch from the list's resourceVersion, not from the
   * node's own: the node's is as old as its last change, which after a kube-apiserver restart lies before
   * the new watch cache's window (a watch from it is answered 410 Gone); the list's is current.
   */
  listNode(name: string): Promise<LeanNodeList> {
    const query = new URLSearchParams({ fieldSelector: `metadata.name=${name}` });
    return this.#call('GET', `/api/v1/nodes?${query}`);
  }

  /** A JSON merge patch; include metadata.resourceVersion to make it conditional (409 on conflict). */
  patchNode(name: string, patch: object): Promise<LeanNode> {
    return this.#call(
      'PATCH',
      `/api/v1/nodes/${encodeURIComponent(name)}`,
      patch,
      'application/merge-patch+json',
    );
  }

  /**
   * Watches one node from `resourceVersion` until the server ends the watch, the signal aborts, or an
   * error occurs (then it rejects; on 410 Gone the caller re-lists, on others it may watch again from the
   * last resourceVersion it saw). `onNode` gets every event but ERROR, BOOKMARK included (its object
   * carries only metadata.resourceVersion: where to watch from next).
   */
  watchNode(
    name: string,
    resourceVersion: string,
    onNode: (type: string, node: LeanNode) => void,
    signal: AbortSignal,
  ): Promise<void> {
    const query = new URLSearchParams({
      watch: 'true',
      fieldSelector: `metadata.name=${name}`,
      resourceVersion,
      allowWatchBookmarks: 'true',
      timeoutSeconds: String(240 + Math.floor(Math.random() * 120)),
    });
    return new Promise((resolve, reject) => {
      const req = request(
        `${this.#creds.server}/api/v1/nodes?${query}`,
        { method: 'GET', agent: this.#agent, headers: this.#headers(), signal },
        (res) => {
          if (res.statusCode !== 200) {
            res.resume();
            reject(new LeanApiError(res.statusCode ?? 0, `watch node ${name}: HTTP ${res.statusCode}`));
            return;
          }
          const lines = createInterface({ input: res });
          // An aborted watch errors the stream it reads; the request's handlers below settle the promise.
          lines.on('error', () => {});
          lines.on('line', (line) => {
            if (!line.trim()) return;
            const event = JSON.parse(line) as { type: string; object: LeanNode & { code?: number } };
            if (event.type === 'ERROR') {
              req.destroy();
              reject(
                new LeanApiError(
                  event.object.code ?? 500,
                  `watch node ${name}: ${JSON.stringify(event.object)}`,
                ),
              );
              return;
            }
            onNode(event.type, event.object);
          });
          res.on('end', () => resolve());
          res.on('error', (err) => (signal.aborted ? resolve() : reject(err)));
        },
      );
      req.on('error', (err) => (signal.aborted ? resolve() : reject(err)));
      req.end();
    });
  }

  close(): void {
    this.#agent.destroy();
  }
}
