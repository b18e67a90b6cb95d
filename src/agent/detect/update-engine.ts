/**
 * Container Linux / Flatcar update_engine on the system bus, as CLUO and FLUO read it: GetStatus() at
 * start and the StatusUpdate signal afterwards, both carrying (last_checked_time int64, progress double,
 * current_operation string, new_version string, new_size int64). UPDATE_STATUS_UPDATED_NEED_REBOOT means
 * an update is staged and a reboot is needed.
 */
import { type DBusDetectorOptions, DBusServiceDetector } from '../dbus/service-detector.ts';
import { type Detection, Need, type UpdateStatus } from '../os.ts';

const UPDATE_ENGINE = {
  name: 'com.coreos.update1',
  path: '/com/coreos/update1',
  interface: 'com.coreos.update1.Manager',
  getStatus: 'GetStatus',
  statusUpdate: 'StatusUpdate',
  /** D-Bus signature of GetStatus's reply and of StatusUpdate. */
  signature: 'xdssx',
  needReboot: 'UPDATE_STATUS_UPDATED_NEED_REBOOT',
} as const;

export interface EngineStatus {
  /** Seconds since the Unix epoch; 0 = never checked. */
  lastCheckedTime: bigint;
  progress: number;
  currentOperation: string;
  newVersion: string;
  newSize: bigint;
}

function int64(what: string, value: unknown): bigint {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number' && Number.isInteger(value)) return BigInt(value);
  throw new Error(`${what} is not an int64: ${typeof value}`);
}

/** Reads a GetStatus reply or StatusUpdate body; throws if it does not have the expected shape. */
export function parseEngineStatus(body: readonly unknown[]): EngineStatus {
  if (body.length < 5) throw new Error(`expected 5 values (${UPDATE_ENGINE.signature}), got ${body.length}`);
  const [lastChecked, progress, operation, newVersion, newSize] = body;
  if (typeof progress !== 'number') throw new Error(`progress is not a double: ${typeof progress}`);
  if (typeof operation !== 'string')
    throw new Error(`current_operation is not a string: ${typeof operation}`);
  if (typeof newVersion !== 'string') throw new Error(`new_version is not a string: ${typeof newVersion}`);
  return {
    lastCheckedTime: int64('last_checked_time', lastChecked),
    progress,
    currentOperation: operation,
    newVersion,
    newSize: int64('new_size', newSize),
  };
}

/** A time_t in seconds as a Date; undefined for 0 (never) and for values no Date can hold. */
export function unixSeconds(seconds: bigint): Date | undefined {
  if (seconds <= 0n) return undefined;
  const date = new Date(Number(seconds) * 1000);
  return Number.isNaN(date.getTime()) ? undefined : date;
}

export function engineDetection(status: EngineStatus): Detection {
  const update: UpdateStatus = { status: status.currentOperation };
  if (status.newVersion !== '') update.newVersion = status.newVersion;
  const checked = unixSeconds(status.lastCheckedTime);
  if (checked) update.lastCheckedTime = checked;
  if (status.currentOperation === UPDATE_ENGINE.needReboot) {
    const version = status.newVersion === '' ? '' : ` (new version ${status.newVersion})`;
    return {
      need: Need.needed,
      reason: `update_engine staged an update${version}: ${status.currentOperation}`,
      update,
    };
  }
  return { need: Need.notNeeded, reason: `update_engine: ${status.currentOperation}`, update };
}

export type UpdateEngineDetectorOptions = DBusDetectorOptions;

export class UpdateEngineDetector extends DBusServiceDetector {
  readonly name = 'update-engine';

  constructor(options: UpdateEngineDetectorOptions = {}) {
    super(
      {
        name: UPDATE_ENGINE.name,
        signals: [
          {
            path: UPDATE_ENGINE.path,
            interface: UPDATE_ENGINE.interface,
            member: UPDATE_ENGINE.statusUpdate,
          },
        ],
      },
      options,
    );
  }

  protected async read(): Promise<Detection> {
    const body = await this.client.call({
      destination: UPDATE_ENGINE.name,
      path: UPDATE_ENGINE.path,
      interface: UPDATE_ENGINE.interface,
      member: UPDATE_ENGINE.getStatus,
    });
    let status: EngineStatus;
    try {
      status = parseEngineStatus(body);
    } catch (err) {
      throw new Error(`unexpected ${UPDATE_ENGINE.getStatus} reply: ${(err as Error).message}`);
    }
    return engineDetection(status);
  }
}
