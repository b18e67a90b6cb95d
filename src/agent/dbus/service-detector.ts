/**
 * Common ground of detectors that read a D-Bus service (the update engines): check() asks the service now,
 * and any failure — no bus, no service, a timeout, a reply of the wrong shape — is "unknown" with the
 * reason, never "needed" (safety rule 6); watch() follows the service through SystemBusClient.watch and
 * calls onChange whenever the verdict may have changed.
 */
import { type Detection, type Detector, Need } from '../os.ts';
import { type ServiceSpec, SystemBusClient, type SystemBusClientOptions, type WatchEvent } from './client.ts';
import { describeError } from './connection.ts';

export interface DBusDetectorOptions extends SystemBusClientOptions {
  /** Shares a client (and its one connection) with other components; default: a client of its own. */
  client?: SystemBusClient;
  /** Observes the watch (subscriptions, owner changes, signals, losses and retry delays), e.g. for logs. */
  onEvent?: (event: WatchEvent) => void;
}

export abstract class DBusServiceDetector implements Detector {
  abstract readonly name: string;
  readonly client: SystemBusClient;
  readonly service: ServiceSpec;
  readonly #ownsClient: boolean;
  readonly #onEvent: ((event: WatchEvent) => void) | undefined;

  protected constructor(service: ServiceSpec, options: DBusDetectorOptions) {
    this.service = service;
    this.#ownsClient = options.client === undefined;
    this.client = options.client ?? new SystemBusClient(options);
    this.#onEvent = options.onEvent;
  }

  /** Reads the service's current state; may throw, check() turns that into "unknown". */
  protected abstract read(): Promise<Detection>;

  async check(): Promise<Detection> {
    try {
      return await this.read();
    } catch (err) {
      return { need: Need.unknown, reason: `${this.service.name} unavailable: ${describeError(err)}` };
    }
  }

  watch(onChange: () => void): () => void {
    let subscribed = false;
    return this.client.watch(this.service, (event) => {
      try {
        this.#onEvent?.(event);
      } catch {
        // an observer's problem
      }
      if (event.kind === 'lost') {
        // The first loss after a subscription changes the verdict (to unknown); further retries do not.
        if (!subscribed) return;
        subscribed = false;
      } else if (event.kind === 'subscribed') {
        subscribed = true;
      }
      onChange();
    });
  }

  /** Stops watches and closes the connection, unless the client was shared. */
  close(): void {
    if (this.#ownsClient) this.client.close();
  }
}
