/**
 * Google Container-Optimized OS (ChromiumOS) update_engine on the system bus: GetStatusAdvanced() and the
 * StatusUpdateAdvanced signal carry a byte array (D-Bus "ay") holding a serialized protobuf
 * update_engine.StatusResult (chromiumos system_api/dbus/update_engine/update_engine.proto, proto3).
 *
 * Only five fields are needed, so they are decoded by a tiny reader below rather than a protobuf library:
 *   1 last_checked_time int64 · 2 progress double · 3 current_operation enum Operation · 4 new_version
 *   string · 5 new_size int64.
 * Every other field (and any added in later versions) is skipped by wire type. Truncated or malformed
 * input is an error, which check() reports as "unknown" — never as "needed".
 */
import { type DBusDetectorOptions, DBusServiceDetector } from '../dbus/service-detector.ts';
import { type Detection, Need, type UpdateStatus } from '../os.ts';
import { unixSeconds } from './update-engine.ts';

const COS_UPDATE_ENGINE = {
  name: 'org.chromium.UpdateEngine',
  path: '/org/chromium/UpdateEngine',
  interface: 'org.chromium.UpdateEngineInterface',
  getStatus: 'GetStatusAdvanced',
  statusUpdate: 'StatusUpdateAdvanced',
} as const;

/** update_engine.Operation. */
export const Operation = {
  IDLE: 0,
  CHECKING_FOR_UPDATE: 1,
  UPDATE_AVAILABLE: 2,
  DOWNLOADING: 3,
  VERIFYING: 4,
  FINALIZING: 5,
  UPDATED_NEED_REBOOT: 6,
  REPORTING_ERROR_EVENT: 7,
  ATTEMPTING_ROLLBACK: 8,
  DISABLED: 9,
  NEED_PERMISSION_TO_UPDATE: 10,
  CLEANUP_PREVIOUS_UPDATE: 11,
  UPDATED_BUT_DEFERRED: 12,
  ERROR: -1,
} as const;

const operationNames = new Map<number, string>(
  Object.entries(Operation).map(([name, value]) => [value, name]),
);

/** The name of an Operation value, or undefined for a value this version does not know. */
export function operationName(value: number): string | undefined {
  return operationNames.get(value);
}

export class ProtobufError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProtobufError';
  }
}

export const WireType = {
  varint: 0,
  fixed64: 1,
  lengthDelimited: 2,
  startGroup: 3,
  endGroup: 4,
  fixed32: 5,
} as const;

/** A minimal protobuf wire-format reader: varints, fixed 32/64-bit values and length-delimited bytes. */
export class ProtobufReader {
  readonly #bytes: Uint8Array;
  #pos = 0;

  constructor(bytes: Uint8Array) {
    this.#bytes = bytes;
  }

  get done(): boolean {
    return this.#pos >= this.#bytes.length;
  }

  get offset(): number {
    return this.#pos;
  }

  /** An unsigned varint of up to 64 bits. */
  varint(): bigint {
    const start = this.#pos;
    let result = 0n;
    for (let i = 0; i < 10; i++) {
      const byte = this.#bytes[this.#pos];
      if (byte === undefined) throw new ProtobufError(`truncated varint at offset ${start}`);
      this.#pos++;
      if (i === 9 && byte > 1) throw new ProtobufError(`varint at offset ${start} overflows 64 bits`);
      result |= BigInt(byte & 0x7f) << BigInt(7 * i);
      if ((byte & 0x80) === 0) return result;
    }
    throw new ProtobufError(`varint at offset ${start} is longer than 10 bytes`);
  }

  take(length: number): Uint8Array {
    if (length > this.#bytes.length - this.#pos) {
      throw new ProtobufError(
        `truncated: ${length} bytes needed at offset ${this.#pos}, ${this.#bytes.length - this.#pos} left`,
      );
    }
    const slice = this.#bytes.subarray(this.#pos, this.#pos + length);
    this.#pos += length;
    return slice;
  }

  /** Reads a field key; returns its number and wire type. */
  key(): { field: number; wireType: number } {
    const at = this.#pos;
    const key = this.varint();
    const field = Number(key >> 3n);
    const wireType = Number(key & 7n);
    if (field === 0 || field > 0x1fffffff)
      throw new ProtobufError(`invalid field number ${field} at offset ${at}`);
    return { field, wireType };
  }

  lengthDelimited(): Uint8Array {
    const length = this.varint();
    if (length > BigInt(this.#bytes.length)) {
      throw new ProtobufError(`truncated: length ${length} exceeds the ${this.#bytes.length}-byte message`);
    }
    return this.take(Number(length));
  }

  fixed64(): DataView {
    const bytes = this.take(8);
    return new DataView(bytes.buffer, bytes.byteOffset, 8);
  }

  /** Skips a value of the given wire type (for unknown fields). */
  skip(wireType: number): void {
    switch (wireType) {
      case WireType.varint:
        this.varint();
        return;
      case WireType.fixed64:
        this.take(8);
        return;
      case WireType.lengthDelimited:
        this.lengthDelimited();
        return;
      case WireType.fixed32:
        this.take(4);
        return;
      default:
        throw new ProtobufError(`unsupported wire type ${wireType} at offset ${this.#pos}`);
    }
  }
}

/** The fields of update_engine.StatusResult the agent uses; proto3 defaults for absent fields. */
export interface StatusResult {
  lastCheckedTime: bigint;
  progress: number;
  currentOperation: number;
  newVersion: string;
  newSize: bigint;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Decodes a serialized StatusResult; throws ProtobufError on truncated or malformed input. */
export function decodeStatusResult(bytes: Uint8Array): StatusResult {
  const result: StatusResult = {
    lastCheckedTime: 0n,
    progress: 0,
    currentOperation: 0,
    newVersion: '',
    newSize: 0n,
  };
  const reader = new ProtobufReader(bytes);
  const expect = (field: number, actual: number, wanted: number) => {
    if (actual !== wanted)
      throw new ProtobufError(`field ${field} has wire type ${actual}, expected ${wanted}`);
  };
  while (!reader.done) {
    const { field, wireType } = reader.key();
    switch (field) {
      case 1:
        expect(field, wireType, WireType.varint);
        result.lastCheckedTime = BigInt.asIntN(64, reader.varint());
        break;
      case 2:
        expect(field, wireType, WireType.fixed64);
        result.progress = reader.fixed64().getFloat64(0, true);
        break;
      case 3:
        // Enums are int32 on the wire; negative values are sign-extended to 10-byte varints.
        expect(field, wireType, WireType.varint);
        result.currentOperation = Number(BigInt.asIntN(32, reader.varint()));
        break;
      case 4: {
        expect(field, wireType, WireType.lengthDelimited);
        const raw = reader.lengthDelimited();
        try {
          result.newVersion = utf8.decode(raw);
        } catch {
          throw new ProtobufError('field 4 (new_version) is not valid UTF-8');
        }
        break;
      }
      case 5:
        expect(field, wireType, WireType.varint);
        result.newSize = BigInt.asIntN(64, reader.varint());
        break;
      default:
        reader.skip(wireType);
    }
  }
  return result;
}

export function cosDetection(status: StatusResult): Detection {
  const name = operationName(status.currentOperation);
  const update: UpdateStatus = { status: name ?? `UNKNOWN_OPERATION_${status.currentOperation}` };
  if (status.newVersion !== '') update.newVersion = status.newVersion;
  const checked = unixSeconds(status.lastCheckedTime);
  if (checked) update.lastCheckedTime = checked;
  if (status.currentOperation === Operation.UPDATED_NEED_REBOOT) {
    const version = status.newVersion === '' ? '' : ` (new version ${status.newVersion})`;
    return {
      need: Need.needed,
      reason: `update_engine staged an update${version}: UPDATED_NEED_REBOOT`,
      update,
    };
  }
  if (name === undefined) {
    return {
      need: Need.unknown,
      reason: `update_engine reports an operation this agent does not know: ${status.currentOperation}`,
      update,
    };
  }
  if (status.currentOperation === Operation.ERROR) {
    return { need: Need.unknown, reason: 'update_engine reports ERROR', update };
  }
  return { need: Need.notNeeded, reason: `update_engine: ${name}`, update };
}

/** Reads a GetStatusAdvanced reply or StatusUpdateAdvanced body ("ay"). */
export function parseStatusBody(body: readonly unknown[]): StatusResult {
  const [payload] = body;
  if (!(payload instanceof Uint8Array)) {
    throw new Error(`expected a byte array (ay), got ${payload === undefined ? 'nothing' : typeof payload}`);
  }
  return decodeStatusResult(payload);
}

export type CosUpdateEngineDetectorOptions = DBusDetectorOptions;

export class CosUpdateEngineDetector extends DBusServiceDetector {
  readonly name = 'cos-update-engine';

  constructor(options: CosUpdateEngineDetectorOptions = {}) {
    super(
      {
        name: COS_UPDATE_ENGINE.name,
        signals: [
          {
            path: COS_UPDATE_ENGINE.path,
            interface: COS_UPDATE_ENGINE.interface,
            member: COS_UPDATE_ENGINE.statusUpdate,
          },
        ],
      },
      options,
    );
  }

  protected async read(): Promise<Detection> {
    const body = await this.client.call({
      destination: COS_UPDATE_ENGINE.name,
      path: COS_UPDATE_ENGINE.path,
      interface: COS_UPDATE_ENGINE.interface,
      member: COS_UPDATE_ENGINE.getStatus,
    });
    let status: StatusResult;
    try {
      status = parseStatusBody(body);
    } catch (err) {
      throw new Error(`unexpected ${COS_UPDATE_ENGINE.getStatus} reply: ${(err as Error).message}`);
    }
    return cosDetection(status);
  }
}
