/**
 * One D-Bus connection, with what the agent needs and dbus-next leaves out: every call has a timeout and
 * fails when the connection drops, the connection reports when (and why) it is gone, and signals are
 * delivered through plain filters without introspecting the remote object.
 *
 * Dependency: dbus-next 0.10.2 (MIT). It speaks the D-Bus wire protocol in plain JavaScript: no native
 * addon, no node-gyp build, no libdbus, which keeps the agent image small and buildable anywhere. Its
 * optional native "usocket" module is not installed; plain unix/tcp sockets through node:net suffice.
 * It is CommonJS; Node's ESM loader exposes its named exports. It is loaded lazily (dynamic import) so an
 * agent that uses no D-Bus source or action never pays for its memory.
 *
 * Only the low-level API is used (Message, MessageBus.call/send and the "message" event): no proxy objects,
 * so no Introspect round trip and no XML parsing on the hot path.
 */
import type { Socket } from 'node:net';
import type { MessageBus } from 'dbus-next';
import { formatBusAddress, parseBusAddress } from './address.ts';

type DBusNext = typeof import('dbus-next');
let loading: Promise<DBusNext> | undefined;
function loadDBusNext(): Promise<DBusNext> {
  loading ??= import('dbus-next');
  return loading;
}

export const DBUS_NAME = 'org.freedesktop.DBus';
export const DBUS_PATH = '/org/freedesktop/DBus';
export const DBUS_INTERFACE = 'org.freedesktop.DBus';

/** Error names a client meets when the remote service is not (or no longer) there. */
export const DBusErrorName = {
  serviceUnknown: 'org.freedesktop.DBus.Error.ServiceUnknown',
  nameHasNoOwner: 'org.freedesktop.DBus.Error.NameHasNoOwner',
  noReply: 'org.freedesktop.DBus.Error.NoReply',
  disconnected: 'org.freedesktop.DBus.Error.Disconnected',
} as const;

/** A failed call: `errorName` is the D-Bus error name when there is one. */
export class DBusCallError extends Error {
  readonly errorName: string | undefined;
  constructor(message: string, errorName?: string) {
    super(message);
    this.name = 'DBusCallError';
    this.errorName = errorName;
  }
}

export interface MethodCall {
  destination: string;
  path: string;
  interface: string;
  member: string;
  /** D-Bus signature of `body`, e.g. "b". */
  signature?: string;
  body?: unknown[];
  timeoutMs?: number;
}

export interface Signal {
  sender: string;
  path: string;
  interface: string;
  member: string;
  body: unknown[];
}

export interface SignalFilter {
  sender?: string;
  path?: string;
  interface?: string;
  member?: string;
}

export interface ConnectOptions {
  connectTimeoutMs?: number;
  callTimeoutMs?: number;
}

/** Human-readable text for anything thrown by dbus-next, node:net or this module. */
export function describeError(err: unknown): string {
  if (err instanceof DBusCallError) return err.message;
  if (err && typeof err === 'object' && 'type' in err && 'text' in err) {
    const e = err as { type: unknown; text: unknown };
    return `${String(e.type)}: ${String(e.text)}`;
  }
  if (err instanceof Error) return err.message;
  return String(err);
}

function quoteMatchValue(value: string): string {
  // Match rule values are single-quoted; a quote inside is written '\'' (close, escaped quote, reopen).
  return `'${value.replaceAll("'", "'\\''")}'`;
}

/** A D-Bus match rule, e.g. type='signal',sender='…',member='…'. */
export function matchRule(fields: {
  type?: 'signal' | 'method_call' | 'method_return' | 'error';
  sender?: string;
  path?: string;
  interface?: string;
  member?: string;
  arg0?: string;
}): string {
  return Object.entries(fields)
    .filter((entry): entry is [string, string] => entry[1] !== undefined)
    .map(([key, value]) => `${key}=${quoteMatchValue(value)}`)
    .join(',');
}

interface DBusNextInternals {
  _connection?: { stream?: Socket };
  _methodReturnHandlers?: Record<number, unknown>;
}

interface Pending {
  fail(err: Error): void;
}

export class BusConnection {
  readonly address: string;
  /** Resolves, with the reason, once the connection is gone (closed, failed or dropped by the bus). */
  readonly closed: Promise<string>;
  readonly #dbus: DBusNext;
  readonly #bus: MessageBus;
  readonly #stream: Socket | undefined;
  readonly #callTimeoutMs: number;
  readonly #pending = new Set<Pending>();
  readonly #signalHandlers = new Set<{ filter: SignalFilter; handler: (signal: Signal) => void }>();
  #closeReason: string | undefined;
  #resolveClosed!: (reason: string) => void;

  private constructor(dbus: DBusNext, bus: MessageBus, address: string, callTimeoutMs: number) {
    this.#dbus = dbus;
    this.#bus = bus;
    this.address = address;
    this.#callTimeoutMs = callTimeoutMs;
    this.closed = new Promise((resolve) => {
      this.#resolveClosed = resolve;
    });
    // dbus-next forwards socket and protocol errors as "error" (which would crash the process without a
    // listener) but not the end of the stream; the socket is reached through its internals for that.
    this.#stream = (bus as unknown as DBusNextInternals)._connection?.stream;
    bus.on('error', (err: unknown) =>
      this.#fail(`D-Bus connection to ${address} failed: ${describeError(err)}`),
    );
    this.#stream?.on('close', () => this.#fail(`D-Bus connection to ${address} closed`));
    bus.on('message', (msg) => this.#dispatch(msg));
    // dbus-next answers incoming method calls itself; on a closing stream that answer throws inside its
    // own error handler, which would be an uncaught exception. Claim such calls so nothing is sent.
    bus.addMethodHandler(() => this.isClosed || this.#stream?.writable === false);
  }

  /** Connects and says Hello; rejects with the reason (socket missing, refused, auth failed, timeout). */
  static async open(address: string, options: ConnectOptions = {}): Promise<BusConnection> {
    const parsed = parseBusAddress(address);
    const connectTimeoutMs = options.connectTimeoutMs ?? 5_000;
    const dbus = await loadDBusNext();
    let bus: MessageBus;
    try {
      bus = dbus.sessionBus({
        busAddress: formatBusAddress(parsed),
        authMethods: parsed.transport === 'unix' ? ['EXTERNAL'] : ['EXTERNAL', 'ANONYMOUS'],
      });
    } catch (err) {
      throw new Error(`cannot connect to D-Bus at ${address}: ${describeError(err)}`);
    }
    const conn = new BusConnection(dbus, bus, address, options.callTimeoutMs ?? 10_000);
    await conn.#ready(connectTimeoutMs);
    return conn;
  }

  #ready(timeoutMs: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#fail(`timed out after ${timeoutMs} ms connecting to D-Bus at ${this.address}`);
      }, timeoutMs);
      this.#bus.once('connect', () => {
        clearTimeout(timer);
        resolve();
      });
      void this.closed.then((reason) => {
        clearTimeout(timer);
        reject(new Error(reason));
      });
    });
  }

  get isClosed(): boolean {
    return this.#closeReason !== undefined;
  }

  /** This connection's unique name on the bus, e.g. ":1.42". */
  get uniqueName(): string | undefined {
    return (this.#bus as unknown as { name: string | null }).name ?? undefined;
  }

  /** Keeps the process alive while this connection is open (true) or not (false). */
  setKeepAlive(keepAlive: boolean): void {
    if (keepAlive) this.#stream?.ref();
    else this.#stream?.unref();
  }

  #fail(reason: string): void {
    if (this.#closeReason !== undefined) return;
    this.#closeReason = reason;
    for (const pending of this.#pending) pending.fail(new DBusCallError(reason, DBusErrorName.disconnected));
    this.#pending.clear();
    this.#signalHandlers.clear();
    try {
      this.#bus.disconnect();
    } catch {
      // already torn down
    }
    this.#stream?.destroy();
    this.#resolveClosed(reason);
  }

  /** Closes the connection; pending calls fail. Idempotent. */
  close(reason = 'closed by the agent'): void {
    this.#fail(reason);
  }

  /** Calls a method and resolves with the reply's body; rejects with a DBusCallError. */
  call(call: MethodCall): Promise<unknown[]> {
    const what = `${call.interface}.${call.member} on ${call.destination} ${call.path}`;
    if (this.#closeReason !== undefined) {
      return Promise.reject(new DBusCallError(`${what}: ${this.#closeReason}`, DBusErrorName.disconnected));
    }
    let msg: InstanceType<DBusNext['Message']>;
    try {
      msg = new this.#dbus.Message({
        destination: call.destination,
        path: call.path,
        interface: call.interface,
        member: call.member,
        signature: call.signature ?? '',
        body: call.body ?? [],
      });
    } catch (err) {
      return Promise.reject(new DBusCallError(`${what}: invalid call: ${describeError(err)}`));
    }
    const timeoutMs = call.timeoutMs ?? this.#callTimeoutMs;
    return new Promise((resolve, reject) => {
      let settled = false;
      const pending: Pending = {
        fail: (err) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          reject(
            new DBusCallError(
              `${what}: ${err.message}`,
              err instanceof DBusCallError ? err.errorName : undefined,
            ),
          );
        },
      };
      const timer = setTimeout(() => {
        // dbus-next keeps a reply handler per serial forever; drop it so a lost reply does not leak.
        const handlers = (this.#bus as unknown as DBusNextInternals)._methodReturnHandlers;
        if (handlers && msg.serial !== null) delete handlers[msg.serial];
        this.#pending.delete(pending);
        pending.fail(new DBusCallError(`no reply within ${timeoutMs} ms`, DBusErrorName.noReply));
      }, timeoutMs);
      this.#pending.add(pending);
      this.#bus.call(msg).then(
        (reply) => {
          this.#pending.delete(pending);
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          resolve(reply?.body ?? []);
        },
        (err: unknown) => {
          this.#pending.delete(pending);
          const errorName =
            err && typeof err === 'object' && 'type' in err && typeof err.type === 'string'
              ? err.type
              : undefined;
          pending.fail(new DBusCallError(describeError(err), errorName));
        },
      );
    });
  }

  async addMatch(rule: string): Promise<void> {
    await this.call({
      destination: DBUS_NAME,
      path: DBUS_PATH,
      interface: DBUS_INTERFACE,
      member: 'AddMatch',
      signature: 's',
      body: [rule],
    });
  }

  async removeMatch(rule: string): Promise<void> {
    await this.call({
      destination: DBUS_NAME,
      path: DBUS_PATH,
      interface: DBUS_INTERFACE,
      member: 'RemoveMatch',
      signature: 's',
      body: [rule],
    });
  }

  /** The unique name owning `name`, or undefined when nobody owns it. */
  async getNameOwner(name: string): Promise<string | undefined> {
    try {
      const [owner] = await this.call({
        destination: DBUS_NAME,
        path: DBUS_PATH,
        interface: DBUS_INTERFACE,
        member: 'GetNameOwner',
        signature: 's',
        body: [name],
      });
      return typeof owner === 'string' && owner !== '' ? owner : undefined;
    } catch (err) {
      if (err instanceof DBusCallError && err.errorName === DBusErrorName.nameHasNoOwner) return undefined;
      throw err;
    }
  }

  /**
   * Calls `handler` for each received signal matching `filter`. The bus only routes signals this connection
   * asked for with addMatch; this only picks them out. Returns a function that removes the handler.
   */
  onSignal(filter: SignalFilter, handler: (signal: Signal) => void): () => void {
    const entry = { filter, handler };
    if (this.#closeReason === undefined) this.#signalHandlers.add(entry);
    return () => {
      this.#signalHandlers.delete(entry);
    };
  }

  #dispatch(msg: InstanceType<DBusNext['Message']>): void {
    if (msg.type !== this.#dbus.MessageType.SIGNAL) return;
    const signal: Signal = {
      sender: msg.sender,
      path: msg.path,
      interface: msg.interface,
      member: msg.member,
      body: Array.isArray(msg.body) ? msg.body : [],
    };
    for (const { filter, handler } of [...this.#signalHandlers]) {
      if (filter.sender !== undefined && filter.sender !== signal.sender) continue;
      if (filter.path !== undefined && filter.path !== signal.path) continue;
      if (filter.interface !== undefined && filter.interface !== signal.interface) continue;
      if (filter.member !== undefined && filter.member !== signal.member) continue;
      try {
        handler(signal);
      } catch {
        // A handler's bug must not break dispatch to the others (nor make dbus-next answer with an error).
      }
    }
  }
}
