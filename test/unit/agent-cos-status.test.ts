import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  cosDetection,
  decodeStatusResult,
  Operation,
  operationName,
  ProtobufError,
  parseStatusBody,
  type StatusResult,
} from '../../src/agent/detect/cos-update-engine.ts';
import { Need } from '../../src/agent/os.ts';
import { encodeStatusResult, field, key, varint } from '../os/protobuf.ts';

const defaults: StatusResult = {
  lastCheckedTime: 0n,
  progress: 0,
  currentOperation: 0,
  newVersion: '',
  newSize: 0n,
};

test('decodeStatusResult reads the five fields and skips every other one', () => {
  const cases: Array<[string, Buffer, Partial<StatusResult>]> = [
    ['empty message = all defaults (IDLE)', Buffer.alloc(0), {}],
    [
      'all five fields',
      encodeStatusResult({
        lastCheckedTime: 1_760_000_000,
        progress: 0.75,
        currentOperation: Operation.UPDATED_NEED_REBOOT,
        newVersion: '18244.85.49',
        newSize: 2n ** 40n,
      }),
      {
        lastCheckedTime: 1_760_000_000n,
        progress: 0.75,
        currentOperation: 6,
        newVersion: '18244.85.49',
        newSize: 2n ** 40n,
      },
    ],
    [
      'ERROR = -1 as a sign-extended 10-byte varint',
      Buffer.from(field.varint(3, -1)),
      { currentOperation: -1 },
    ],
    [
      'unknown fields of every wire type, before and after, are skipped',
      Buffer.from([
        ...field.varint(6, 1), // is_enterprise_rollback
        ...field.bytes(13, [...field.bytes(1, 'feature'), ...field.varint(2, 1)]), // repeated Feature
        ...field.varint(3, Operation.DOWNLOADING),
        ...field.fixed32(99, 0xdeadbeef),
        ...field.double(1000, 1.5),
        ...field.varint(8, 20_000), // eol_date
        ...field.varint(536870911, 7), // the largest field number
        ...field.bytes(4, '1.2.3'),
      ]),
      { currentOperation: 3, newVersion: '1.2.3' },
    ],
    [
      'a repeated scalar field: the last value wins',
      Buffer.from([...field.varint(3, 1), ...field.varint(3, 6)]),
      { currentOperation: 6 },
    ],
    [
      'a non-minimal varint is accepted',
      Buffer.from([...key(3, 0), 0x86, 0x80, 0x00]),
      { currentOperation: 6 },
    ],
    ['unicode version', Buffer.from(field.bytes(4, 'v1 ✓')), { newVersion: 'v1 ✓' }],
  ];
  for (const [name, bytes, expected] of cases) {
    assert.deepEqual(decodeStatusResult(bytes), { ...defaults, ...expected }, name);
  }
});

test('truncated or malformed input throws a ProtobufError, never anything else', () => {
  const whole = encodeStatusResult({
    lastCheckedTime: 1_760_000_000,
    progress: 0.5,
    currentOperation: Operation.UPDATED_NEED_REBOOT,
    newVersion: '18244.85.49',
    newSize: 123_456,
  });
  // Every proper prefix that cuts a field in half must fail; prefixes ending on a field boundary are valid
  // (shorter) messages, which is how protobuf works.
  const boundaries = new Set<number>([0]);
  let end = 0;
  for (const part of [
    field.varint(1, 1_760_000_000),
    field.double(2, 0.5),
    field.varint(3, 6),
    field.bytes(4, '18244.85.49'),
    field.varint(5, 123_456),
  ]) {
    end += part.length;
    boundaries.add(end);
  }
  for (let n = 1; n < whole.length; n++) {
    const prefix = whole.subarray(0, n);
    if (boundaries.has(n)) {
      assert.doesNotThrow(() => decodeStatusResult(prefix), `prefix of ${n} bytes`);
    } else {
      assert.throws(() => decodeStatusResult(prefix), ProtobufError, `prefix of ${n} bytes`);
    }
  }

  const bad: Array<[string, number[], RegExp]> = [
    ['truncated varint', [...key(1, 0), 0x80], /truncated varint/],
    ['length beyond the end', [...key(4, 2), 10, 0x41], /truncated: length 10 exceeds the 3-byte message/],
    [
      'length beyond the end of a longer message',
      [...key(4, 2), 5, 0x41, ...field.varint(6, 1)],
      /truncated: 5 bytes needed at offset 2, 3 left/,
    ],
    ['huge length', [...key(4, 2), ...varint(2n ** 62n)], /truncated: length/],
    [
      'varint longer than 10 bytes',
      [...key(5, 0), ...Array(10).fill(0xff), 0x01],
      /overflows 64 bits|longer than 10/,
    ],
    ['group wire type', [...key(7, 3)], /unsupported wire type 3/],
    ['wire type 6', [...key(7, 6)], /unsupported wire type 6/],
    ['field number 0', [0x00, 0x01], /invalid field number 0/],
    ['known field with the wrong wire type', [...field.bytes(3, 'x')], /field 3 has wire type 2, expected 0/],
    ['double cut short', [...key(2, 1), 0, 0, 0], /truncated: 8 bytes needed/],
    ['invalid UTF-8 in new_version', [...key(4, 2), 2, 0xc3, 0x28], /not valid UTF-8/],
  ];
  for (const [name, bytes, message] of bad) {
    assert.throws(
      () => decodeStatusResult(Buffer.from(bytes)),
      (err: unknown) => {
        assert.ok(err instanceof ProtobufError, `${name}: ${String(err)}`);
        assert.match(err.message, message, name);
        return true;
      },
    );
  }
});

test('parseStatusBody wants a byte array', () => {
  assert.equal(parseStatusBody([encodeStatusResult({ currentOperation: 6 })]).currentOperation, 6);
  assert.equal(parseStatusBody([new Uint8Array(field.varint(3, 2))]).currentOperation, 2);
  assert.throws(() => parseStatusBody(['nope']), /expected a byte array \(ay\), got string/);
  assert.throws(() => parseStatusBody([]), /got nothing/);
});

test('cosDetection: only UPDATED_NEED_REBOOT is needed; unknown and ERROR operations are unknown', () => {
  const cases: Array<[number, Need, string]> = [
    [Operation.IDLE, Need.notNeeded, 'IDLE'],
    [Operation.DOWNLOADING, Need.notNeeded, 'DOWNLOADING'],
    [Operation.UPDATED_BUT_DEFERRED, Need.notNeeded, 'UPDATED_BUT_DEFERRED'],
    [Operation.REPORTING_ERROR_EVENT, Need.notNeeded, 'REPORTING_ERROR_EVENT'],
    [Operation.UPDATED_NEED_REBOOT, Need.needed, 'UPDATED_NEED_REBOOT'],
    [Operation.ERROR, Need.unknown, 'ERROR'],
    [42, Need.unknown, 'UNKNOWN_OPERATION_42'],
  ];
  for (const [op, need, status] of cases) {
    const d = cosDetection({
      ...defaults,
      currentOperation: op,
      newVersion: '1.2.3',
      lastCheckedTime: 1_700_000_000n,
    });
    assert.equal(d.need, need, status);
    assert.equal(d.update?.status, status);
    assert.equal(d.update?.newVersion, '1.2.3');
    assert.equal(d.update?.lastCheckedTime?.getTime(), 1_700_000_000_000);
  }
  assert.equal(cosDetection(defaults).update?.lastCheckedTime, undefined, 'never checked');
  assert.equal(operationName(12), 'UPDATED_BUT_DEFERRED');
});
