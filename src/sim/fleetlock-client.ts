/**
 * A FleetLock client as Zincati runs on a simulated host (src/sim/host.ts): at each start it asks
 * steady-state until answered 200 (its initialization releases any lock it held); once an update is staged
 * it asks pre-reboot until answered 200, and only then reboots the host. Every request is real HTTP to the
 * operator's FleetLock server, with Zincati's header, body and node ID (the app-specific ID of the host's
 * machine ID).
 */
import { appSpecificId } from '../fleetlock/node-id.ts';
import { FleetLockOp, PROTOCOL_HEADER } from '../fleetlock/request.ts';
import type { HostAgent, SimHost } from './host.ts';

export interface FleetLockClientOptions {
  /**
   * The server's base URL, e.g. http://127.0.0.1:9090; or one asked again at each try, as a Service
   * hands each request to one of its endpoints (the leading replica answers; a follower forwards to it).
   */
  url: string | (() => string);
  machineId: string;
  group: string;
  /** How long the client waits between tries (Zincati: minutes; tests: a fraction of a second). */
  retryMs: number;
  /** Each answer, for the test to read. */
  onAnswer?: (answer: { node: string; op: FleetLockOp; status: number; kind?: string }) => void;
  log?: (level: 'info' | 'warn' | 'error', message: string) => void;
}

/**
 * How long one request may go unanswered before it is tried again: Zincati's, 30 minutes
 * (DEFAULT_HTTP_COMPLETION_TIMEOUT in its src/fleet_lock/mod.rs), so a server that holds a request (a
 * follower waiting for the leader, a paused replica) is waited for as Zincati waits. Node's fetch gives up
 * first, at its own 300 s header timeout, which no run's pause reaches.
 */
const REQUEST_TIMEOUT_MS = 30 * 60_000;

const wait = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    const stop = () => {
      clearTimeout(t);
      resolve();
    };
    signal.addEventListener('abort', stop, { once: true });
  });

export class FleetLockClient implements HostAgent {
  readonly #o: FleetLockClientOptions;
  readonly #id: string;

  constructor(options: FleetLockClientOptions) {
    const id = appSpecificId(options.machineId);
    if (id === undefined) throw new Error(`machine ID ${options.machineId} is not 32 hex digits`);
    this.#o = options;
    this.#id = id;
  }

  async run(host: SimHost, signal: AbortSignal): Promise<void> {
    if (!(await this.#until200(host, FleetLockOp.steadyState, signal))) return;
    while (!signal.aborted && !host.needsReboot) await wait(this.#o.retryMs, signal);
    if (!(await this.#until200(host, FleetLockOp.preReboot, signal))) return;
    await host.reboot();
  }

  /** True once answered 200; false if stopped first. */
  async #until200(host: SimHost, op: FleetLockOp, signal: AbortSignal): Promise<boolean> {
    while (!signal.aborted) {
      try {
        const url = typeof this.#o.url === 'string' ? this.#o.url : this.#o.url();
        const res = await fetch(`${url}/v1/${op}`, {
          method: 'POST',
          headers: { [PROTOCOL_HEADER]: 'true', 'content-type': 'application/json' },
          body: JSON.stringify({ client_params: { id: this.#id, group: this.#o.group } }),
          // A server that hangs past Zincati's timeout is asked again, as Zincati's client does.
          signal: AbortSignal.any([signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]),
        });
        const text = await res.text();
        const kind = res.ok ? undefined : (JSON.parse(text) as { kind?: string }).kind;
        this.#o.onAnswer?.({ node: host.nodeName, op, status: res.status, ...(kind ? { kind } : {}) });
        if (res.status === 200) return true;
      } catch (err) {
        if (signal.aborted) return false;
        this.#o.log?.('warn', `FleetLock ${op} of ${host.nodeName}: ${(err as Error).message}`);
      }
      await wait(this.#o.retryMs, signal);
    }
    return false;
  }
}
