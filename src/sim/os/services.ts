/**
 * OS services in TypeScript with dbus-next, owning the real well-known names on a private bus: Flatcar's
 * update_engine (com.coreos.update1) and logind (org.freedesktop.login1, recording Reboot calls and
 * handing them to the simulated host). Each is its own connection, so stop() then a new instance's start()
 * is a real service restart: the name is released, then owned by a new unique name.
 */
import { Message, type MessageBus, NameFlag, RequestNameReply, sessionBus } from 'dbus-next';

const METHOD_CALL = 1;

async function connect(address: string): Promise<MessageBus> {
  const bus = sessionBus({ busAddress: address, authMethods: ['EXTERNAL'] });
  await new Promise<void>((resolve, reject) => {
    bus.once('connect', () => resolve());
    bus.once('error', reject);
  });
  bus.on('error', () => {});
  return bus;
}

/** How a fake answers its status method: normally, with a body of the wrong shape, or not at all. */
export type ReplyMode = 'normal' | 'garbage' | 'silent';

export abstract class FakeService {
  readonly address: string;
  readonly name: string;
  #bus: MessageBus | undefined;

  protected constructor(address: string, name: string) {
    this.address = address;
    this.name = name;
  }

  protected get bus(): MessageBus {
    if (!this.#bus) throw new Error(`${this.name} is not running`);
    return this.#bus;
  }

  /** Connects, installs the method handler, then owns the name (so calls never race the handler). */
  async start(): Promise<this> {
    const bus = await connect(this.address);
    bus.addMethodHandler((msg: Message) => {
      if (msg.type !== METHOD_CALL) return false;
      const reply = this.handle(msg);
      if (reply === undefined) return false;
      if (reply !== null) bus.send(reply);
      return true;
    });
    const result = await bus.requestName(this.name, NameFlag.DO_NOT_QUEUE);
    if (result !== RequestNameReply.PRIMARY_OWNER) {
      bus.disconnect();
      throw new Error(`could not own ${this.name} (RequestName returned ${result})`);
    }
    this.#bus = bus;
    return this;
  }

  /** Releases the name, then disconnects. */
  async stop(): Promise<void> {
    const bus = this.#bus;
    if (!bus) return;
    this.#bus = undefined;
    // dbus-next never settles a call whose connection died, so do not wait long for the bus to answer.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      bus.releaseName(this.name).catch(() => {}),
      new Promise((resolve) => {
        timer = setTimeout(resolve, 1_000);
      }),
    ]);
    clearTimeout(timer);
    bus.disconnect();
  }

  /** Drops the connection without releasing the name first (a crash). */
  crash(): void {
    this.#bus?.disconnect();
    this.#bus = undefined;
  }

  protected emit(path: string, iface: string, member: string, signature: string, body: unknown[]): void {
    this.bus.send(Message.newSignal(path, iface, member, signature, body));
  }

  /** A reply, null to answer nothing, or undefined for "not my method". */
  protected abstract handle(msg: Message): Message | null | undefined;
}

export interface FlatcarStatus {
  lastCheckedTime: bigint;
  progress: number;
  currentOperation: string;
  newVersion: string;
  newSize: bigint;
}

export class FakeUpdateEngine extends FakeService {
  status: FlatcarStatus = {
    lastCheckedTime: 0n,
    progress: 0,
    currentOperation: 'UPDATE_STATUS_IDLE',
    newVersion: '',
    newSize: 0n,
  };
  replyMode: ReplyMode = 'normal';
  getStatusCalls = 0;

  constructor(address: string) {
    super(address, 'com.coreos.update1');
  }

  #body(): unknown[] {
    const s = this.status;
    return [s.lastCheckedTime, s.progress, s.currentOperation, s.newVersion, s.newSize];
  }

  /** Changes the status and, like update_engine, broadcasts StatusUpdate (unless emit is false). */
  set(status: Partial<FlatcarStatus>, { emit = true } = {}): void {
    this.status = { ...this.status, ...status };
    if (emit)
      this.emit('/com/coreos/update1', 'com.coreos.update1.Manager', 'StatusUpdate', 'xdssx', this.#body());
  }

  protected handle(msg: Message): Message | null | undefined {
    if (msg.interface !== 'com.coreos.update1.Manager' || msg.path !== '/com/coreos/update1')
      return undefined;
    if (msg.member !== 'GetStatus') return undefined;
    this.getStatusCalls++;
    if (this.replyMode === 'silent') return null;
    if (this.replyMode === 'garbage') return Message.newMethodReturn(msg, 's', ['not a status']);
    return Message.newMethodReturn(msg, 'xdssx', this.#body());
  }
}

export interface RebootCall {
  signature: string;
  body: unknown[];
  sender: string;
}

export class FakeLogind extends FakeService {
  readonly calls: RebootCall[] = [];
  /** When set, Reboot is answered with this D-Bus error. */
  refuse: { name: string; text: string } | undefined;
  /** The machine going down: called for each Reboot accepted, once its reply is sent, as logind does. */
  onReboot: ((call: RebootCall) => void) | undefined;

  constructor(address: string) {
    super(address, 'org.freedesktop.login1');
  }

  protected handle(msg: Message): Message | null | undefined {
    if (msg.interface !== 'org.freedesktop.login1.Manager' || msg.path !== '/org/freedesktop/login1')
      return undefined;
    if (msg.member !== 'Reboot') return undefined;
    const call = { signature: msg.signature, body: msg.body, sender: msg.sender };
    this.calls.push(call);
    // dbus-next's typings declare newError(msg: string, …) but it takes the call being answered.
    if (this.refuse) return Message.newError(msg as unknown as string, this.refuse.name, this.refuse.text);
    const onReboot = this.onReboot;
    if (onReboot) setImmediate(() => onReboot(call));
    return Message.newMethodReturn(msg, '', []);
  }
}
