/**
 * A tiny protobuf encoder for test fixtures: just enough of the wire format to build
 * update_engine.StatusResult messages, including fields the decoder must skip.
 */

export const WT = { varint: 0, fixed64: 1, bytes: 2, fixed32: 5 } as const;

/** Varint bytes of an unsigned or (sign-extended to 64 bits) negative integer. */
export function varint(value: bigint | number): number[] {
  let v = BigInt.asUintN(64, BigInt(value));
  const out: number[] = [];
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v !== 0n) byte |= 0x80;
    out.push(byte);
  } while (v !== 0n);
  return out;
}

export function key(field: number, wireType: number): number[] {
  return varint((BigInt(field) << 3n) | BigInt(wireType));
}

export const field = {
  varint: (n: number, value: bigint | number) => [...key(n, WT.varint), ...varint(value)],
  double: (n: number, value: number) => {
    const b = Buffer.alloc(8);
    b.writeDoubleLE(value);
    return [...key(n, WT.fixed64), ...b];
  },
  fixed32: (n: number, value: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(value);
    return [...key(n, WT.fixed32), ...b];
  },
  bytes: (n: number, value: string | Uint8Array | number[]) => {
    const data = typeof value === 'string' ? [...Buffer.from(value, 'utf8')] : [...value];
    return [...key(n, WT.bytes), ...varint(data.length), ...data];
  },
};

export interface StatusFields {
  lastCheckedTime?: bigint | number;
  progress?: number;
  currentOperation?: number;
  newVersion?: string;
  newSize?: bigint | number;
}

/** Encodes a StatusResult as update_engine would (proto3: default values are omitted). */
export function encodeStatusResult(s: StatusFields, extra: number[][] = []): Buffer {
  const parts: number[][] = [];
  if (s.lastCheckedTime) parts.push(field.varint(1, s.lastCheckedTime));
  if (s.progress) parts.push(field.double(2, s.progress));
  if (s.currentOperation) parts.push(field.varint(3, s.currentOperation));
  if (s.newVersion) parts.push(field.bytes(4, s.newVersion));
  if (s.newSize) parts.push(field.varint(5, s.newSize));
  return Buffer.from([...parts.flat(), ...extra.flat()]);
}
