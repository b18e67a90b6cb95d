/**
 * Reboot through systemd-logind on the system bus: org.freedesktop.login1.Manager.Reboot(false) on
 * /org/freedesktop/login1. `false` = not interactive: logind must not ask for authentication; the agent's
 * privileges (root, or a polkit rule) decide. Resolves once logind accepted the request.
 */
import { SystemBusClient, type SystemBusClientOptions } from '../dbus/client.ts';
import { describeError } from '../dbus/connection.ts';
import type { Rebooter } from '../os.ts';

const LOGIND = {
  name: 'org.freedesktop.login1',
  path: '/org/freedesktop/login1',
  interface: 'org.freedesktop.login1.Manager',
  reboot: 'Reboot',
} as const;

export interface LogindRebooterOptions extends SystemBusClientOptions {
  /** Shares a client (and its one connection) with other components; default: a client of its own. */
  client?: SystemBusClient;
}

export class LogindRebooter implements Rebooter {
  readonly name = 'logind';
  readonly client: SystemBusClient;
  readonly #ownsClient: boolean;

  constructor(options: LogindRebooterOptions = {}) {
    this.#ownsClient = options.client === undefined;
    this.client = options.client ?? new SystemBusClient(options);
  }

  async reboot(): Promise<void> {
    try {
      await this.client.call({
        destination: LOGIND.name,
        path: LOGIND.path,
        interface: LOGIND.interface,
        member: LOGIND.reboot,
        signature: 'b',
        body: [false],
      });
    } catch (err) {
      throw new Error(`logind did not accept Reboot(false): ${describeError(err)}`, { cause: err });
    }
  }

  /** Closes the connection, unless the client was shared. */
  close(): void {
    if (this.#ownsClient) this.client.close();
  }
}
