/**
 * The node ID a FleetLock client sends as `client_params.id`. Zincati does not send the machine ID: it sends
 * systemd's app-specific ID of it (sd_id128_get_machine_app_specific), so the machine ID never leaves the
 * host. nuo derives the same ID from each Node's `status.nodeInfo.machineID` to find the node a request is for.
 */
import { createHmac } from 'node:crypto';

/** Zincati's application ID, the key its node ID is derived under. */
export const ZINCATI_APP_ID = 'de35106b6ec24688b63afddaa156679b';

const ID128 = /^[0-9a-f]{32}$/;

/** A 128-bit ID as systemd writes it (32 lower-case hex digits), from either that form or the dashed UUID form. */
export function normalizeId128(value: string): string | undefined {
  const hex = value.trim().toLowerCase().replaceAll('-', '');
  return ID128.test(hex) ? hex : undefined;
}

/**
 * systemd's app-specific ID: HMAC-SHA256 keyed with the machine ID's 16 bytes over the app ID's 16 bytes,
 * its first 16 bytes made a version-4, RFC 4122 variant UUID; written as 32 lower-case hex digits, as
 * Zincati sends it. Undefined when either input is not a 128-bit ID.
 */
export function appSpecificId(machineId: string, appId: string = ZINCATI_APP_ID): string | undefined {
  const machine = normalizeId128(machineId);
  const app = normalizeId128(appId);
  if (machine === undefined || app === undefined) return undefined;
  const mac = createHmac('sha256', Buffer.from(machine, 'hex'))
    .update(Buffer.from(app, 'hex'))
    .digest()
    .subarray(0, 16);
  mac.writeUInt8((mac.readUInt8(6) & 0x0f) | 0x40, 6);
  mac.writeUInt8((mac.readUInt8(8) & 0x3f) | 0x80, 8);
  return mac.toString('hex');
}
