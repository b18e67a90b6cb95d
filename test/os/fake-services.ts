/**
 * Test services on a private bus: the update_engine and logind the simulation uses too
 * (src/sim/os/services.ts), and COS's update engine (org.chromium.UpdateEngine), which only tests need.
 */
import { Message } from 'dbus-next';
import { FakeService, type ReplyMode } from '../../src/sim/os/services.ts';
import { encodeStatusResult, type StatusFields } from './protobuf.ts';

export { FakeLogind, FakeUpdateEngine } from '../../src/sim/os/services.ts';

export class FakeCosUpdateEngine extends FakeService {
  status: StatusFields = { currentOperation: 0 };
  /** When set, sent instead of the encoded status (e.g. truncated bytes). */
  rawPayload: Buffer | undefined;
  replyMode: ReplyMode = 'normal';

  constructor(address: string) {
    super(address, 'org.chromium.UpdateEngine');
  }

  #payload(): Buffer {
    return this.rawPayload ?? encodeStatusResult(this.status);
  }

  set(status: StatusFields, { emit = true, raw }: { emit?: boolean; raw?: Buffer } = {}): void {
    this.status = { ...this.status, ...status };
    this.rawPayload = raw;
    if (emit) {
      this.emit(
        '/org/chromium/UpdateEngine',
        'org.chromium.UpdateEngineInterface',
        'StatusUpdateAdvanced',
        'ay',
        [this.#payload()],
      );
    }
  }

  protected handle(msg: Message): Message | null | undefined {
    if (msg.interface !== 'org.chromium.UpdateEngineInterface' || msg.path !== '/org/chromium/UpdateEngine') {
      return undefined;
    }
    if (msg.member !== 'GetStatusAdvanced') return undefined;
    if (this.replyMode === 'silent') return null;
    if (this.replyMode === 'garbage') return Message.newMethodReturn(msg, 's', ['not bytes']);
    return Message.newMethodReturn(msg, 'ay', [this.#payload()]);
  }
}
