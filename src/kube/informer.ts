/**
 * A list+watch cache that never silently stops (client-go's Reflector + Indexer, with a watchdog).
 *
 * The loop is reflector.ts's: list, watch from the list's resourceVersion, watch again from the last
 * resourceVersion seen, list again on 410 Gone (an ERROR event or the HTTP status). This informer adds:
 * - `start()` lists (paginated) and resolves once the cache holds that first list.
 * - Watches ask for bookmarks and a randomised server-side timeout, so they roll over regularly.
 * - Any other failure (connection refused, 5xx, 403, a broken stream): capped exponential backoff with
 *   jitter, then a relist.
 * - Watchdog: no event or bookmark for `watchdogMs` means the stream may be dead without the socket
 *   knowing (a half-open TCP connection, a proxy that stopped forwarding), or a quiet collection: abort
 *   it, probe the connection with a one-item list (resetting a pooled connection that does not answer),
 *   and re-watch from the last resourceVersion — no relist unless that answers 410.
 * - A relist replaces the cache and emits the differences (add, update, delete), so a consumer never
 *   misses an object that was deleted while the watch was down.
 *
 * Objects from watch events are converted to the same @kubernetes/client-node model classes the typed
 * list returns (Date fields as Date), so consumers see one shape whatever path an object came by.
 *
 * One file over 400 lines on purpose: the cache, the relist diff, the watchdog and read-your-writes all
 * order objects by the same resourceVersion rule over the same map, and are only correct read together.
 */
import { type KubeConfig, type KubernetesObject, Watch } from '@kubernetes/client-node';
import { type KubeLog, silentLog, validateBackoff } from './backoff.ts';
import { deserializeModel, setWatchInactivityTimeout, watchFailureStatus } from './client-node-internals.ts';
import { describeError, statusCode } from './errors.ts';
import { HEALTHY_WATCH_MS, type Listed, Reflector } from './reflector.ts';

export type InformerEventType = 'add' | 'update' | 'delete';

/**
 * `obj` is the new state (for 'delete', the last state known: the deleted object from the watch event,
 * or the cached object when a relist found it gone); `old` is the cached state it replaces.
 */
export type InformerHandler<T> = (type: InformerEventType, obj: T, old?: T) => void;

export interface InformerListOptions {
  resourceVersion?: string;
  limit?: number;
  _continue?: string;
  labelSelector?: string;
  fieldSelector?: string;
}

export interface InformerListPage<T> {
  apiVersion?: string;
  kind?: string;
  metadata?: { resourceVersion?: string; _continue?: string };
  items: T[];
}

export interface InformerOptions<T extends KubernetesObject> {
  kubeconfig: KubeConfig;
  /** Collection path to watch, e.g. '/api/v1/nodes' or '/apis/nuo.dev/v1alpha1/plans'. */
  path: string;
  /**
   * One page of the collection; receives the selectors too, so a typed client method fits as is:
   * `list: (opts) => core.listNode(opts)`.
   */
  list: (opts: InformerListOptions) => Promise<InformerListPage<T>>;
  labelSelector?: string;
  fieldSelector?: string;
  /** No event or bookmark for this long → abort the watch and relist (default 90 s). */
  watchdogMs?: number;
  /** Delay before relisting after a failure (default 200 ms doubling to 30 s, with jitter). */
  backoff?: { initialMs: number; maxMs: number };
  /** Server-side watch timeout, drawn at random per watch from [min, max] seconds (default [150, 300]). */
  watchTimeoutSeconds?: { min: number; max: number };
  /** Page size of a list (default 500). */
  pageSize?: number;
  /** A list page that has not answered in this long counts as failed (default 60 s). */
  listTimeoutMs?: number;
  /**
   * The @kubernetes/client-node model watch objects are converted to (e.g. 'V1Node'); by default
   * derived from each object's apiVersion and kind ('v1' + 'Node' → 'V1Node'). Objects of kinds the
   * client does not know (custom resources) are kept as parsed JSON.
   */
  objectType?: string;
  /**
   * Applied to every object before it is cached or emitted (client-go's SetTransform): drop what the
   * consumer never reads — managedFields, a node's image list — so thousands of cached objects stay small.
   */
  transform?: (obj: T) => T;
  /** Name in log lines (default: the path). */
  name?: string;
  /** A list or watch failure its owner expects and reports itself: retried as any, logged at debug. */
  expectedFailure?: (err: unknown) => boolean;
  log?: KubeLog;
}

export interface InformerStats {
  synced: boolean;
  items: number;
  /** Successful lists after the first one. */
  relists: number;
  /** Watches opened after the first one. */
  watchRestarts: number;
  /** Times the watchdog aborted a silent watch. */
  watchdogFires: number;
  /** List or watch failures (each followed by a backoff and a relist). */
  errors: number;
  /** Watch events handled (including bookmarks). */
  events: number;
  /** Date.now() of the last watch event or bookmark, undefined before the first. */
  lastEventTime: number | undefined;
  /** Date.now() of the last completed list. */
  lastSyncTime: number | undefined;
  /** The resourceVersion the next watch starts from. */
  resourceVersion: string | undefined;
}

/** An ERROR event other than 410, or a watch that could not be opened. */
export class WatchError extends Error {
  readonly code: number | undefined;
  constructor(message: string, code: number | undefined) {
    super(message);
    this.name = 'WatchError';
    this.code = code;
  }
}

/** Key of an object in the cache: "namespace/name", or "name" for cluster-scoped objects. */
export function objectKey(obj: KubernetesObject): string {
  const namespace = obj.metadata?.namespace;
  const name = obj.metadata?.name ?? '';
  return namespace ? `${namespace}/${name}` : name;
}

/**
 * Orders two resourceVersions: -1, 0 or 1 when both are decimal integers (etcd3 storage guarantees it
 * for the built-in API server), undefined when they cannot be compared (then callers accept the newer
 * arrival, as Kubernetes clients must treat resourceVersions as opaque in general).
 */
export function compareResourceVersions(
  a: string | undefined,
  b: string | undefined,
): -1 | 0 | 1 | undefined {
  if (a === undefined || b === undefined || !/^\d+$/.test(a) || !/^\d+$/.test(b)) return undefined;
  const x = BigInt(a);
  const y = BigInt(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

const DEFAULT_BACKOFF = { initialMs: 200, maxMs: 30_000 };
const JITTER = 0.5;

export class ResilientInformer<T extends KubernetesObject> {
  readonly path: string;
  readonly name: string;
  readonly labelSelector: string | undefined;
  readonly fieldSelector: string | undefined;
  readonly watchdogMs: number;
  readonly #kubeconfig: KubeConfig;
  readonly #listFn: (opts: InformerListOptions) => Promise<InformerListPage<T>>;
  readonly #reflector: Reflector<KubernetesObject>;
  readonly #watchTimeout: { min: number; max: number };
  readonly #pageSize: number;
  readonly #listTimeoutMs: number;
  readonly #objectType: string | undefined;
  readonly #transform: (obj: T) => T;
  readonly #log: KubeLog;

  #cache = new Map<string, T>();
  readonly #handlers = new Set<InformerHandler<T>>();
  #synced = false;
  #running: Promise<void> | undefined;
  #started: Promise<void> | undefined;
  #resolveStarted: (() => void) | undefined;
  #rejectStarted: ((err: Error) => void) | undefined;
  readonly #stop = new AbortController();

  #lastEventTime: number | undefined;
  #lastSyncTime: number | undefined;

  constructor(options: InformerOptions<T>) {
    const {
      kubeconfig,
      path,
      list,
      labelSelector,
      fieldSelector,
      watchdogMs = 90_000,
      backoff = DEFAULT_BACKOFF,
      watchTimeoutSeconds = { min: 150, max: 300 },
      pageSize = 500,
      listTimeoutMs = 60_000,
      objectType,
    } = options;
    if (!kubeconfig.getCurrentCluster()) {
      throw new Error('ResilientInformer: the kubeconfig has no current cluster');
    }
    // Checks only what the types cannot say: a value's range, or fields that must agree.
    if (!path.startsWith('/') || path.includes('?')) {
      throw new Error(
        `ResilientInformer: path must be an API collection path like /api/v1/nodes (got ${path})`,
      );
    }
    if (!Number.isFinite(watchdogMs) || watchdogMs < 100) {
      throw new Error(`ResilientInformer: watchdogMs must be at least 100 ms (got ${watchdogMs})`);
    }
    validateBackoff('ResilientInformer backoff', backoff);
    const { min, max } = watchTimeoutSeconds;
    if (!Number.isInteger(min) || !Number.isInteger(max) || min < 1 || max < min) {
      throw new Error(
        `ResilientInformer: watchTimeoutSeconds must be whole seconds with 1 ≤ min ≤ max (got ${min}..${max})`,
      );
    }
    if (!Number.isInteger(pageSize) || pageSize < 1) {
      throw new Error(`ResilientInformer: pageSize must be a positive integer (got ${pageSize})`);
    }
    if (!Number.isFinite(listTimeoutMs) || listTimeoutMs <= 0) {
      throw new Error(`ResilientInformer: listTimeoutMs must be a positive number (got ${listTimeoutMs})`);
    }
    this.#kubeconfig = kubeconfig;
    this.path = path;
    this.#listFn = list;
    this.labelSelector = labelSelector;
    this.fieldSelector = fieldSelector;
    this.watchdogMs = watchdogMs;
    this.#watchTimeout = { min, max };
    this.#pageSize = pageSize;
    this.#listTimeoutMs = listTimeoutMs;
    this.#objectType = objectType;
    this.#transform = options.transform ?? ((obj) => obj);
    this.name = options.name ?? path;
    this.#log = options.log ?? silentLog;
    this.#reflector = new Reflector<KubernetesObject>({
      name: `informer ${this.name}`,
      list: () => this.#relist(),
      watch: (resourceVersion, onEvent, signal) => this.#watch(resourceVersion, onEvent, signal),
      onEvent: (type, raw) => this.#handleEvent(type, raw),
      isGone: (err) => errorCode(err) === 410,
      backoff: { initialMs: backoff.initialMs, maxMs: backoff.maxMs, jitter: JITTER },
      // As client-go's reflector after most failures: a list brings the whole cache back, whatever the
      // server lost meanwhile.
      relistAfterFailure: true,
      // A watch the watchdog cut lasted as long as it could: a short watchdog must still reset the backoff.
      healthyMs: Math.min(watchdogMs, HEALTHY_WATCH_MS),
      watchdog: { afterMs: watchdogMs, probe: () => this.#probeConnection() },
      describe: describeError,
      ...(options.expectedFailure ? { expected: options.expectedFailure } : {}),
      log: this.#log,
    });
  }

  /** True once the first list is in the cache (stays true through later relists). */
  get synced(): boolean {
    return this.#synced;
  }

  /**
   * Starts listing and watching; resolves once the first list is in the cache. Failures before that are
   * retried with backoff (and logged); it rejects only if stop() is called first. Idempotent.
   */
  start(): Promise<void> {
    if (this.#started) return this.#started;
    if (this.#stop.signal.aborted) return Promise.reject(new Error(`informer ${this.name} was stopped`));
    this.#started = new Promise<void>((resolve, reject) => {
      this.#resolveStarted = resolve;
      this.#rejectStarted = reject;
    });
    // Rejected only by stop(): whoever stopped it need not also handle the rejection.
    this.#started.catch(() => {});
    this.#running = this.#reflector.run(this.#stop.signal);
    return this.#started;
  }

  /** Stops watching; resolves once the loop has exited. The cache keeps its last contents. */
  async stop(): Promise<void> {
    if (!this.#stop.signal.aborted) this.#stop.abort();
    this.#rejectStarted?.(new Error(`informer ${this.name} was stopped before it synced`));
    this.#resolveStarted = undefined;
    this.#rejectStarted = undefined;
    await this.#running;
  }

  /** Every cached object. */
  list(): T[] {
    return [...this.#cache.values()];
  }

  get(name: string, namespace?: string): T | undefined {
    return this.#cache.get(namespace ? `${namespace}/${name}` : name);
  }

  /**
   * Calls `fn` for every change from now on (including the adds of the first list, if registered before
   * it completes). A throwing handler is logged and does not affect the informer or other handlers.
   * Returns a function that unregisters it.
   */
  onEvent(fn: InformerHandler<T>): () => void {
    this.#handlers.add(fn);
    return () => {
      this.#handlers.delete(fn);
    };
  }

  /**
   * Read your writes: puts the object a write returned into the cache at once (emitting add/update),
   * unless the cache already holds a newer or equal resourceVersion of it. Returns whether it was taken.
   * The watch delivers the same change later; it is then recognised as not newer and ignored.
   * Pass only objects this informer's selectors select (a write that makes an object leave the
   * selection is corrected when the watch reports the object gone).
   */
  upsertFromWrite(written: T): boolean {
    if (!written?.metadata?.name) throw new Error('upsertFromWrite: the object has no metadata.name');
    const obj = this.#transform(written);
    const key = objectKey(obj);
    const old = this.#cache.get(key);
    if (old && !isNewer(obj, old)) return false;
    this.#cache.set(key, obj);
    this.#emit(old ? 'update' : 'add', obj, old);
    return true;
  }

  stats(): InformerStats {
    const r = this.#reflector.stats();
    return {
      synced: this.#synced,
      items: this.#cache.size,
      relists: Math.max(0, r.lists - 1),
      watchRestarts: Math.max(0, r.watches - 1),
      watchdogFires: r.silences,
      errors: r.failures,
      events: r.events,
      lastEventTime: this.#lastEventTime,
      lastSyncTime: this.#lastSyncTime,
      resourceVersion: this.#reflector.resourceVersion,
    };
  }

  /** Lists the whole collection (paginated); applying it replaces the cache (#replace). */
  async #relist(): Promise<Listed> {
    const items = new Map<string, T>();
    let resourceVersion: string | undefined;
    let cont: string | undefined;
    let restarted = false;
    for (;;) {
      let page: InformerListPage<T>;
      try {
        page = await this.#listPage({
          limit: this.#pageSize,
          ...(cont ? { _continue: cont } : {}),
          ...(this.labelSelector !== undefined ? { labelSelector: this.labelSelector } : {}),
          ...(this.fieldSelector !== undefined ? { fieldSelector: this.fieldSelector } : {}),
        });
      } catch (err) {
        // The continue token expired (compaction) between pages: start over once with a fresh snapshot.
        if (statusCode(err) === 410 && cont !== undefined && !restarted) {
          restarted = true;
          cont = undefined;
          resourceVersion = undefined;
          items.clear();
          continue;
        }
        throw err;
      }
      if (this.#stop.signal.aborted) return { resourceVersion };
      if (!page || !Array.isArray(page.items)) throw new Error('list returned no items array');
      const kind = page.kind?.endsWith('List') ? page.kind.slice(0, -'List'.length) : undefined;
      for (const item of page.items) {
        // Items of a list carry no apiVersion/kind on the wire; fill them in like watch objects have.
        if (kind && item.kind === undefined) item.kind = kind;
        if (page.apiVersion && item.apiVersion === undefined) item.apiVersion = page.apiVersion;
        items.set(objectKey(item), this.#transform(item));
      }
      resourceVersion ??= page.metadata?.resourceVersion;
      cont = page.metadata?._continue || undefined;
      if (cont === undefined) break;
    }
    return { resourceVersion, apply: () => this.#replace(items, resourceVersion) };
  }

  /** Replaces the cache with a list, emitting the differences. */
  #replace(items: Map<string, T>, resourceVersion: string | undefined): void {
    const changes: Array<[InformerEventType, T, T | undefined]> = [];
    for (const [key, item] of items) {
      const old = this.#cache.get(key);
      if (!old) {
        changes.push(['add', item, undefined]);
      } else if (
        compareResourceVersions(old.metadata?.resourceVersion, item.metadata?.resourceVersion) === 1
      ) {
        // The cache holds a newer version from upsertFromWrite than this snapshot: keep it.
        items.set(key, old);
      } else if (old.metadata?.resourceVersion !== item.metadata?.resourceVersion) {
        changes.push(['update', item, old]);
      }
    }
    for (const [key, old] of this.#cache) {
      if (items.has(key)) continue;
      if (compareResourceVersions(old.metadata?.resourceVersion, resourceVersion) === 1) {
        // Written (by us) after this snapshot was taken; the watch from the snapshot will deliver it.
        items.set(key, old);
      } else {
        changes.push(['delete', old, undefined]);
      }
    }
    this.#cache = items;
    this.#lastSyncTime = Date.now();
    const first = !this.#synced;
    this.#log(first ? 'debug' : 'info', `informer ${this.name}: listed ${items.size} objects`, {
      resourceVersion,
      added: changes.filter(([t]) => t === 'add').length,
      updated: changes.filter(([t]) => t === 'update').length,
      deleted: changes.filter(([t]) => t === 'delete').length,
    });
    this.#synced = true;
    for (const [type, obj, old] of changes) this.#emit(type, obj, old);
    if (first) {
      this.#resolveStarted?.();
      this.#resolveStarted = undefined;
      this.#rejectStarted = undefined;
    }
  }

  /**
   * One page, bounded by listTimeoutMs and by stop(): a request hanging on a dead connection must not
   * stall the informer. (The abandoned request's own outcome is ignored.)
   */
  #listPage(opts: InformerListOptions): Promise<InformerListPage<T>> {
    const request = this.#listFn(opts);
    request.catch(() => {});
    let timer: NodeJS.Timeout | undefined;
    let onStop: (() => void) | undefined;
    const bounded = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`list of ${this.path} did not answer within ${this.#listTimeoutMs} ms`)),
        this.#listTimeoutMs,
      );
      onStop = () => reject(new Error(`informer ${this.name} stopped`));
      this.#stop.signal.addEventListener('abort', onStop, { once: true });
    });
    bounded.catch(() => {});
    return Promise.race([request, bounded]).finally(() => {
      clearTimeout(timer);
      if (onStop) this.#stop.signal.removeEventListener('abort', onStop);
    });
  }

  /**
   * One watch from `resourceVersion` (the reflector's `watch`): resolves when the server ends it or
   * `signal` aborts; rejects on a failure or an ERROR event (a WatchError with the event's code).
   */
  #watch(
    resourceVersion: string | undefined,
    onEvent: (type: string, raw: KubernetesObject) => void,
    signal: AbortSignal,
  ): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal.aborted) {
        resolve();
        return;
      }
      let settled = false;
      let controller: AbortController | undefined;
      const finish = (err?: unknown) => {
        if (settled) return;
        settled = true;
        signal.removeEventListener('abort', onAbort);
        controller?.abort();
        if (err === undefined) resolve();
        else reject(err instanceof Error ? err : new Error(String(err)));
      };
      const onAbort = () => finish();
      signal.addEventListener('abort', onAbort, { once: true });

      const { min, max } = this.#watchTimeout;
      const query: Record<string, string | number | boolean | undefined> = {
        allowWatchBookmarks: true,
        timeoutSeconds: min + Math.floor(Math.random() * (max - min + 1)),
        resourceVersion,
        labelSelector: this.labelSelector,
        fieldSelector: this.fieldSelector,
      };
      const watch = new Watch(this.#kubeconfig);
      // The client's own inactivity timeout must not end quiet watches between bookmarks (about one a
      // minute): the watchdog is the inactivity timeout here.
      setWatchInactivityTimeout(watch, this.watchdogMs + 30_000);
      watch
        .watch(
          this.path,
          query,
          (type: string, raw: unknown) => {
            if (settled) return;
            if (type === 'ERROR') finish(watchEventError(raw));
            else onEvent(type, raw as KubernetesObject);
          },
          (err: unknown) => finish(err ?? undefined),
        )
        .then(
          (c) => {
            controller = c;
            if (settled) c.abort();
          },
          (err: unknown) => finish(err ?? new Error('the watch could not be opened')),
        );
    });
  }

  /** Applies one watch event or bookmark (the reflector tracks its resourceVersion). */
  #handleEvent(type: string, raw: KubernetesObject): void {
    this.#lastEventTime = Date.now();
    if (type === 'BOOKMARK') return;
    const obj = this.#decode(raw);
    const rv = obj?.metadata?.resourceVersion;
    if (!obj?.metadata?.name) {
      this.#log('warn', `informer ${this.name}: ignoring a ${type} event without an object name`);
      return;
    }
    const key = objectKey(obj);
    const old = this.#cache.get(key);
    if (type === 'ADDED' || type === 'MODIFIED') {
      // Not newer than the cache: an event for a version upsertFromWrite already put there.
      if (!old || isNewer(obj, old)) {
        this.#cache.set(key, obj);
        this.#emit(old ? 'update' : 'add', obj, old);
      }
    } else if (type === 'DELETED') {
      // A cached version newer than the deletion was written after it (re-created): keep it.
      if (old && compareResourceVersions(rv, old.metadata?.resourceVersion) !== -1) {
        this.#cache.delete(key);
        this.#emit('delete', obj, old);
      }
    } else {
      this.#log('debug', `informer ${this.name}: ignoring watch event type ${type}`);
    }
  }

  /**
   * Whether the API server answers a one-item list within the watchdog period (on the same pooled
   * connection the watch used). If not, the KubeConfig's pooled connections are reset — client-go's
   * HTTP/2 health check does the same — so the next requests open a new one.
   */
  async #probeConnection(): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), Math.min(this.watchdogMs, 10_000));
    });
    const answered = this.#listFn({
      limit: 1,
      labelSelector: this.labelSelector,
      fieldSelector: this.fieldSelector,
    }).then(
      () => true,
      () => false,
    );
    const alive = await Promise.race([answered, timeout]);
    clearTimeout(timer);
    if (!alive) (this.#kubeconfig as { resetConnections?: () => void }).resetConnections?.();
    return alive;
  }

  #decode(raw: unknown): T | undefined {
    if (!raw || typeof raw !== 'object') return undefined;
    const { apiVersion, kind } = raw as KubernetesObject;
    const type = this.#objectType ?? modelName(apiVersion, kind);
    if (!type) return this.#transform(raw as T);
    let obj: T;
    try {
      obj = deserializeModel<T>(raw, type);
    } catch {
      obj = raw as T;
    }
    return this.#transform(obj);
  }

  #emit(type: InformerEventType, obj: T, old: T | undefined): void {
    for (const handler of [...this.#handlers]) {
      try {
        handler(type, obj, old);
      } catch (err) {
        this.#log('error', `informer ${this.name}: event handler failed: ${describeError(err)}`, {
          event: type,
          object: objectKey(obj),
        });
      }
    }
  }
}

/** True if `obj` is a newer version than `old` (or the two cannot be compared). */
function isNewer(obj: KubernetesObject, old: KubernetesObject): boolean {
  const order = compareResourceVersions(obj.metadata?.resourceVersion, old.metadata?.resourceVersion);
  return order === undefined || order === 1;
}

/** The @kubernetes/client-node model class name of a built-in kind: ('apps/v1', 'Deployment') → 'V1Deployment'. */
function modelName(apiVersion: string | undefined, kind: string | undefined): string | undefined {
  if (!apiVersion || !kind) return undefined;
  const version = apiVersion.slice(apiVersion.lastIndexOf('/') + 1);
  if (!version) return undefined;
  return `${version[0]?.toUpperCase()}${version.slice(1)}${kind}`;
}

/** The failure an ERROR event (a Status object) ends a watch with. */
function watchEventError(raw: unknown): WatchError {
  const status = raw as { code?: number; message?: string; reason?: string } | undefined;
  return new WatchError(
    `watch error: ${status?.message ?? status?.reason ?? 'unknown'} (code ${status?.code})`,
    status?.code,
  );
}

/** The HTTP status of a failed list (ApiException), watch (its `done`) or ERROR event (WatchError). */
function errorCode(err: unknown): number | undefined {
  return statusCode(err) ?? watchFailureStatus(err) ?? (err instanceof WatchError ? err.code : undefined);
}
