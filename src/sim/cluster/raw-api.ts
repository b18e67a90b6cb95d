/**
 * A minimal JSON client for the harness's bulk work (thousands of node and pod creations, counting
 * watches): plain objects over one keep-alive HTTPS agent, without the typed client's per-object model
 * conversion, which costs more CPU than the API server's side of the request when a benchmark creates
 * 5,000 nodes or 50,000 pods on a 2-core machine.
 */
import { Agent, request } from 'node:https';
import type { Tls } from './net.ts';

export class RawApiError extends Error {
  readonly status: number;
  constructor(method: string, path: string, status: number, body: string) {
    super(`${method} ${path}: HTTP ${status}: ${body.slice(0, 300)}`);
    this.status = status;
  }
}

export interface WatchEvent<T> {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: T;
}

export class RawApi {
  readonly #server: string;
  readonly #tls: Tls;
  readonly #agent: Agent;

  constructor(server: string, tls: Tls, maxSockets = 64) {
    this.#server = server;
    this.#tls = tls;
    this.#agent = new Agent({ keepAlive: true, maxSockets, ca: tls.ca, cert: tls.cert, key: tls.key });
  }

  /** One request; resolves with the parsed body, rejects with RawApiError on a non-2xx status. */
  async request<T = unknown>(method: string, path: string, body?: unknown, timeoutMs = 60_000): Promise<T> {
    const text = await this.#send(method, path, body, timeoutMs, 'application/json');
    return (text ? JSON.parse(text) : undefined) as T;
  }

  /** A GET of a plain-text endpoint (/metrics). */
  text(path: string, timeoutMs = 60_000): Promise<string> {
    return this.#send('GET', path, undefined, timeoutMs, 'text/plain');
  }

  #send(method: string, path: string, body: unknown, timeoutMs: number, accept: string): Promise<string> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = request(
        `${this.#server}${path}`,
        {
          method,
          agent: this.#agent,
          timeout: timeoutMs,
          headers: {
            accept,
            ...(payload === undefined
              ? {}
              : {
                  'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json',
                  'content-length': Buffer.byteLength(payload),
                }),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString();
            const status = res.statusCode ?? 0;
            if (status < 200 || status >= 300) reject(new RawApiError(method, path, status, text));
            else resolve(text);
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer within ${timeoutMs} ms`)));
      req.on('error', reject);
      req.end(payload);
    });
  }

  /**
   * Streams a watch (`path` must carry `watch=1` and any selectors) and calls `onEvent` for each event
   * until the server ends the stream, the signal aborts it (resolves), or the connection fails (rejects).
   */
  watch<T>(path: string, onEvent: (e: WatchEvent<T>) => void, signal: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal.aborted) return resolve();
      const req = request(
        `${this.#server}${path}`,
        // Its own connection: a watch holds it for as long as it runs.
        {
          ca: this.#tls.ca,
          cert: this.#tls.cert,
          key: this.#tls.key,
          headers: { accept: 'application/json' },
        },
        (res) => {
          if (res.statusCode !== 200) {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () =>
              reject(new RawApiError('WATCH', path, res.statusCode ?? 0, Buffer.concat(chunks).toString())),
            );
            return;
          }
          let buffered = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            buffered += chunk;
            for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
              const line = buffered.slice(0, nl);
              buffered = buffered.slice(nl + 1);
              if (line.trim()) onEvent(JSON.parse(line) as WatchEvent<T>);
            }
          });
          res.on('end', () => resolve());
          res.on('error', (err) => (signal.aborted ? resolve() : reject(err)));
        },
      );
      const abort = () => req.destroy();
      signal.addEventListener('abort', abort, { once: true });
      req.on('error', (err) => (signal.aborted ? resolve() : reject(err)));
      req.on('close', () => signal.removeEventListener('abort', abort));
      req.end();
    });
  }

  close(): void {
    this.#agent.destroy();
  }
}

interface Meta {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
}

interface Waiter {
  /** Keys still to satisfy (a wait for keys), or undefined (a wait for a count). */
  wanted?: Set<string>;
  missing: Set<string>;
  count?: number;
  resolve: () => void;
}

const keyOf = (o: Meta) =>
  o.metadata?.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : (o.metadata?.name ?? '');

/**
 * Keeps, from a list and a watch, the set of objects of a collection that satisfy a predicate (nodes
 * Ready, pods Running), and lets callers await a set of them: the wait ends on the watch event that
 * completes it, not on the next poll. A watch that ends is resumed from the last resourceVersion; one
 * that fails, or that is too old to resume (410 Gone), is replaced by a fresh list.
 */
export class Tally<T extends Meta> {
  readonly satisfied = new Set<string>();
  readonly #api: RawApi;
  readonly #path: string;
  readonly #query: string;
  readonly #predicate: (o: T) => boolean;
  readonly #stop = new AbortController();
  readonly #waiters = new Set<Waiter>();
  #rv = '';
  #loop: Promise<void> = Promise.resolve();

  /** `path` is the collection (e.g. /api/v1/nodes), `query` its selectors (e.g. labelSelector=type%3Dkwok). */
  constructor(api: RawApi, path: string, query: string, predicate: (o: T) => boolean) {
    this.#api = api;
    this.#path = path;
    this.#query = query;
    this.#predicate = predicate;
  }

  /** Lists once, then watches in the background. */
  async start(): Promise<void> {
    await this.#list();
    this.#loop = this.#watchLoop();
  }

  /** Resolves once every key (`name`, or `namespace/name`) satisfies the predicate at the same time. */
  waitFor(keys: Iterable<string>, timeoutMs: number, what: string): Promise<void> {
    const wanted = new Set(keys);
    const missing = new Set([...wanted].filter((k) => !this.satisfied.has(k)));
    if (missing.size === 0) return Promise.resolve();
    return this.#wait(
      { wanted, missing },
      timeoutMs,
      () =>
        `${what} (${wanted.size - missing.size}/${wanted.size}; e.g. ${[...missing].slice(0, 3).join(', ')} not yet)`,
    );
  }

  /** Resolves once at least `count` objects satisfy the predicate at the same time. */
  waitForCount(count: number, timeoutMs: number, what: string): Promise<void> {
    if (this.satisfied.size >= count) return Promise.resolve();
    return this.#wait(
      { missing: new Set(), count },
      timeoutMs,
      () => `${what} (${this.satisfied.size}/${count})`,
    );
  }

  /** Registers a waiter until it is satisfied (resolves) or `timeoutMs` passes (rejects, naming `progress()`). */
  #wait(waiter: Omit<Waiter, 'resolve'>, timeoutMs: number, progress: () => string): Promise<void> {
    return new Promise((resolve, reject) => {
      const registered: Waiter = {
        ...waiter,
        resolve: () => {
          clearTimeout(timer);
          this.#waiters.delete(registered);
          resolve();
        },
      };
      const timer = setTimeout(() => {
        this.#waiters.delete(registered);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${progress()}`));
      }, timeoutMs);
      this.#waiters.add(registered);
    });
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#loop;
  }

  #set(key: string, ok: boolean): void {
    if (ok) {
      if (this.satisfied.has(key)) return;
      this.satisfied.add(key);
      for (const w of this.#waiters) {
        w.missing.delete(key);
        if (w.count !== undefined ? this.satisfied.size >= w.count : w.missing.size === 0) w.resolve();
      }
    } else if (this.satisfied.delete(key)) {
      for (const w of this.#waiters) if (w.wanted?.has(key)) w.missing.add(key);
    }
  }

  async #list(): Promise<void> {
    const seen = new Set<string>();
    let cont = '';
    do {
      const page = await this.#api.request<{
        metadata: { resourceVersion: string; continue?: string };
        items: T[];
      }>(
        'GET',
        `${this.#path}?${this.#query}&limit=5000${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`,
      );
      for (const o of page.items) {
        const key = keyOf(o);
        seen.add(key);
        this.#set(key, this.#predicate(o));
      }
      this.#rv = page.metadata.resourceVersion;
      cont = page.metadata.continue ?? '';
    } while (cont);
    for (const key of [...this.satisfied]) if (!seen.has(key)) this.#set(key, false);
  }

  async #watchLoop(): Promise<void> {
    const signal = this.#stop.signal;
    while (!signal.aborted) {
      let gone = false;
      try {
        await this.#api.watch<T>(
          `${this.#path}?${this.#query}&watch=1&allowWatchBookmarks=true&timeoutSeconds=300&resourceVersion=${this.#rv}`,
          (e) => {
            if (e.type === 'ERROR') {
              gone = true;
              return;
            }
            if (e.object.metadata?.resourceVersion) this.#rv = e.object.metadata.resourceVersion;
            if (e.type === 'BOOKMARK') return;
            this.#set(keyOf(e.object), e.type !== 'DELETED' && this.#predicate(e.object));
          },
          signal,
        );
        if (gone && !signal.aborted) await this.#list();
      } catch {
        if (signal.aborted) return;
        await new Promise((r) => setTimeout(r, 200));
        await this.#list().catch(() => {});
      }
    }
  }
}
