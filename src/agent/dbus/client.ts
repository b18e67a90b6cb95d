/**
 * The agent's client of the system bus: one lazily opened, shared connection that is re-opened after it
 * drops, plus watches that keep a service's signals subscribed across bus and service restarts.
 *
 * A watch never throws and never gives up: while the bus is unreachable it retries with capped exponential
 * backoff; once connected it subscribes (AddMatch) to the service's signals and to NameOwnerChanged for the
 * service's name, so it hears the service leave and (re)appear. The match rules name the service by its
 * well-known name, which the bus daemon resolves against the current owner for every signal, so a restarted
 * service is followed without re-subscribing; every new connection subscribes afresh.
 */
import { type BackoffOptions, backoffDelay, sleep, validateBackoff } from '../../kube/backoff.ts';
import { parseBusAddress, systemBusAddress } from './address.ts';
import {
  BusConnection,
  DBUS_INTERFACE,
  DBUS_NAME,
  DBUS_PATH,
  describeError,
  type MethodCall,
  matchRule,
  type Signal,
} from './connection.ts';

/** No jitter: each node has its own bus, so there is no crowd of clients to spread out. */
export const DEFAULT_BACKOFF: BackoffOptions = { initialMs: 500, maxMs: 30_000 };

function positiveInteger(what: string, value: number): number {
  if (!Number.isInteger(value) || value <= 0) {
    throw new Error(
      `${what} must be a positive integer number of milliseconds, got ${JSON.stringify(value)}`,
    );
  }
  return value;
}

export interface SignalSpec {
  path: string;
  interface: string;
  member: string;
}

export interface ServiceSpec {
  /** The service's well-known bus name, e.g. com.coreos.update1. */
  name: string;
  signals: SignalSpec[];
}

export type WatchEvent =
  /** Subscribed on a (new) connection; `owner` is the service's unique name if it is on the bus. */
  | { kind: 'subscribed'; owner: string | undefined }
  /** The service left (owner undefined) or (re)appeared. */
  | { kind: 'owner-changed'; owner: string | undefined }
  | { kind: 'signal'; signal: Signal }
  /** Not subscribed (bus unreachable, connection dropped, subscription refused); retrying after `retryInMs`. */
  | { kind: 'lost'; reason: string; retryInMs: number };

export interface SystemBusClientOptions {
  /** Default: env DBUS_SYSTEM_BUS_ADDRESS, else unix:path=/run/dbus/system_bus_socket. */
  address?: string;
  env?: NodeJS.ProcessEnv;
  connectTimeoutMs?: number;
  callTimeoutMs?: number;
  backoff?: Partial<BackoffOptions>;
}

export class SystemBusClient {
  readonly address: string;
  readonly backoff: BackoffOptions;
  readonly #connectTimeoutMs: number;
  readonly #callTimeoutMs: number;
  #conn: BusConnection | undefined;
  #opening: Promise<BusConnection> | undefined;
  readonly #watches = new Set<() => void>();
  #closed = false;

  constructor(options: SystemBusClientOptions = {}) {
    this.address = systemBusAddress(options.address, options.env);
    parseBusAddress(this.address);
    this.#connectTimeoutMs = positiveInteger('connectTimeoutMs', options.connectTimeoutMs ?? 5_000);
    this.#callTimeoutMs = positiveInteger('callTimeoutMs', options.callTimeoutMs ?? 10_000);
    this.backoff = { ...DEFAULT_BACKOFF, ...options.backoff };
    validateBackoff('backoff', this.backoff);
  }

  /** The open connection, or a new one. Concurrent callers share one attempt. */
  connection(): Promise<BusConnection> {
    if (this.#closed) return Promise.reject(new Error('the D-Bus client was closed'));
    if (this.#conn && !this.#conn.isClosed) return Promise.resolve(this.#conn);
    this.#opening ??= BusConnection.open(this.address, {
      connectTimeoutMs: this.#connectTimeoutMs,
      callTimeoutMs: this.#callTimeoutMs,
    })
      .then((conn) => {
        if (this.#closed) {
          conn.close();
          throw new Error('the D-Bus client was closed');
        }
        this.#conn = conn;
        conn.setKeepAlive(this.#watches.size > 0);
        void conn.closed.then(() => {
          if (this.#conn === conn) this.#conn = undefined;
        });
        return conn;
      })
      .finally(() => {
        this.#opening = undefined;
      });
    return this.#opening;
  }

  /** Calls a method on a fresh or the open connection; rejects with the reason. */
  async call(call: MethodCall): Promise<unknown[]> {
    const conn = await this.connection();
    return conn.call(call);
  }

  /**
   * Watches a service: `listener` hears every subscription, owner change, matching signal and loss. Never
   * throws (on a closed client it watches nothing); returns a function that stops the watch. While any
   * watch runs the connection keeps the process alive; otherwise it does not (a pending call's timer does).
   */
  watch(spec: ServiceSpec, listener: (event: WatchEvent) => void): () => void {
    if (this.#closed) return () => {};
    const abort = new AbortController();
    const emit = (event: WatchEvent) => {
      if (abort.signal.aborted) return;
      try {
        listener(event);
      } catch {
        // The listener's problem; the watch goes on.
      }
    };
    const aborted = new Promise<string>((resolve) =>
      abort.signal.addEventListener('abort', () => resolve('stopped'), { once: true }),
    );

    const run = async () => {
      let attempt = 0;
      while (!abort.signal.aborted) {
        let reason: string;
        const cleanups: Array<() => void> = [];
        try {
          const conn = await this.connection();
          if (abort.signal.aborted) break;
          // Handlers before match rules, so nothing routed after AddMatch is missed.
          for (const s of spec.signals) {
            cleanups.push(conn.onSignal(s, (signal) => emit({ kind: 'signal', signal })));
          }
          cleanups.push(
            conn.onSignal(
              { sender: DBUS_NAME, path: DBUS_PATH, interface: DBUS_INTERFACE, member: 'NameOwnerChanged' },
              (signal) => {
                const [name, , newOwner] = signal.body;
                if (name !== spec.name) return;
                emit({
                  kind: 'owner-changed',
                  owner: typeof newOwner === 'string' && newOwner !== '' ? newOwner : undefined,
                });
              },
            ),
          );
          const rules = [
            ...spec.signals.map((s) => matchRule({ type: 'signal', sender: spec.name, ...s })),
            matchRule({
              type: 'signal',
              sender: DBUS_NAME,
              path: DBUS_PATH,
              interface: DBUS_INTERFACE,
              member: 'NameOwnerChanged',
              arg0: spec.name,
            }),
          ];
          for (const rule of rules) {
            await conn.addMatch(rule);
            cleanups.push(() => {
              if (!conn.isClosed) conn.removeMatch(rule).catch(() => {});
            });
          }
          const owner = await conn.getNameOwner(spec.name);
          attempt = 0;
          emit({ kind: 'subscribed', owner });
          reason = await Promise.race([conn.closed, aborted]);
        } catch (err) {
          reason = describeError(err);
        } finally {
          for (const cleanup of cleanups) cleanup();
        }
        if (abort.signal.aborted) break;
        const retryInMs = backoffDelay(++attempt, this.backoff);
        emit({ kind: 'lost', reason, retryInMs });
        await sleep(retryInMs, abort.signal);
      }
    };

    const stop = () => {
      if (!this.#watches.delete(stop)) return;
      abort.abort();
      if (this.#watches.size === 0) this.#conn?.setKeepAlive(false);
    };
    this.#watches.add(stop);
    this.#conn?.setKeepAlive(true);
    void run().catch(() => {});
    return stop;
  }

  /** Stops all watches and closes the connection. */
  close(): void {
    this.#closed = true;
    for (const stop of [...this.#watches]) stop();
    this.#conn?.close();
    this.#conn = undefined;
  }
}
