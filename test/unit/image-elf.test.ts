import assert from 'node:assert/strict';
import { test } from 'node:test';
import { elfMachine, machineName } from '../../tools/image/elf.ts';

/** An ELF header's first 20 bytes: magic, class, byte order, version, padding, type, machine. */
function header(byteOrder: number, machine: number): Uint8Array {
  const h = new Uint8Array(64);
  h.set([0x7f, 0x45, 0x4c, 0x46, 2, byteOrder, 1]);
  const view = new DataView(h.buffer);
  view.setUint16(16, 2, byteOrder === 1);
  view.setUint16(18, machine, byteOrder === 1);
  return h;
}

test("an ELF file's machine, in the byte order its header names; not ELF, undefined", () => {
  const table: Array<[string, Uint8Array, number | undefined]> = [
    ['x86-64, little-endian', header(1, 62), 62],
    ['aarch64, little-endian', header(1, 183), 183],
    ['aarch64, big-endian', header(2, 183), 183],
    ['s390x, big-endian', header(2, 22), 22],
    ['a script', new TextEncoder().encode('#!/bin/sh\necho not elf at all\n'), undefined],
    ['a JavaScript file', new TextEncoder().encode('export const x = 1;\n'.repeat(3)), undefined],
    ['the magic alone, too short for the field', new Uint8Array([0x7f, 0x45, 0x4c, 0x46, 2, 1]), undefined],
    ['empty', new Uint8Array(0), undefined],
  ];
  for (const [what, head, machine] of table) assert.equal(elfMachine(head), machine, what);
});

test('a header inside a larger buffer is read at its own offset', () => {
  const buffer = new Uint8Array(100);
  buffer.set(header(1, 183), 10);
  assert.equal(elfMachine(buffer.subarray(10)), 183);
});

test('an ELF header naming neither byte order is refused, saying which it named', () => {
  assert.throws(() => elfMachine(header(3, 62)), /byte order 3/);
});

test('machine names: the image architectures by their OCI names, any other by number', () => {
  assert.equal(machineName(62), 'amd64');
  assert.equal(machineName(183), 'arm64');
  assert.equal(machineName(40), 'machine 40');
});
