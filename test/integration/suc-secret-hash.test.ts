/**
 * Contract: nuo's secretHash (src/plan/suc-hash.ts) against kubectl's real SecretHash
 * (k8s.io/kubectl/pkg/util/hash, at the version SUC's go.mod requires), which system-upgrade-controller
 * hashes a Plan's Secrets with: tools/suc-hash builds it from its Go module and prints its hash of each
 * Secret given as JSON. No control plane needed.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { type HashedSecret, secretHash } from '../../src/plan/suc-hash.ts';
import { ensureSecretHash } from '../../tools/suc-hash/build.ts';

const b64 = (bytes: Uint8Array | string) => Buffer.from(bytes).toString('base64');
const binary = Uint8Array.from({ length: 256 }, (_, i) => (i * 37 + 11) % 256);

const secrets: HashedSecret[] = [
  {
    name: 'bionic',
    type: 'Opaque',
    data: { curl: b64('7.58.0-2ubuntu3.14'), 'upgrade.sh': b64('#!/bin/sh\n') },
  },
  { name: 'no-type', data: { a: b64('b') } },
  { name: 'empty-data', type: 'Opaque', data: {} },
  { name: 'no-data', type: 'Opaque' },
  { name: 'binary', type: 'Opaque', data: { blob: b64(binary), zero: b64(new Uint8Array(3)) } },
  {
    name: 'key-order',
    type: 'Opaque',
    data: {
      b: b64('1'),
      a: b64('2'),
      A: b64('3'),
      _x: b64('4'),
      '.d': b64('5'),
      '-': b64('6'),
      a0: b64('7'),
    },
  },
  {
    name: 'tls.example.com',
    type: 'kubernetes.io/tls',
    data: { 'tls.crt': b64('crt'), 'tls.key': b64('key') },
  },
  {
    name: 'pull',
    type: 'kubernetes.io/dockerconfigjson',
    data: { '.dockerconfigjson': b64('{"auths":{}}') },
  },
  { name: 'odd-type', type: 'example.com/<odd>&"type"\\ \u2028\u2029 é ☃', data: { k: b64('<&>') } },
  { name: 'control-type', type: '\b\f\n\r\t\u0001\u001f\u007f', data: { k: '' } },
  { name: 'immutable', type: 'Opaque', immutable: true, data: { k: b64('v') } },
  { name: 'mutable', type: 'Opaque', immutable: false, data: { k: b64('v') } },
  { name: 'empty-value', type: 'Opaque', data: { k: '' } },
];

test("nuo's secretHash equals kubectl's SecretHash (built from k8s.io/kubectl) for every Secret of the table", async () => {
  const tool = await ensureSecretHash();
  const input = secrets.map((s) => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: s.name },
    ...(s.type === undefined ? {} : { type: s.type }),
    ...(s.data === undefined ? {} : { data: s.data }),
    ...(s.immutable === undefined ? {} : { immutable: s.immutable }),
  }));
  const child = promisify(execFile)(tool, []);
  child.child.stdin?.end(JSON.stringify(input));
  const { stdout } = await child;
  const kubectl = stdout.trim().split('\n');
  assert.equal(kubectl.length, secrets.length);
  for (const [i, s] of secrets.entries()) {
    assert.match(kubectl[i] ?? '', /^[2456789bcdfghkmt]{10}$/, `kubectl's hash of ${s.name}`);
    assert.equal(secretHash(s), kubectl[i], `Secret ${s.name}`);
  }
  // Every field counts: the table's hashes are all different.
  assert.equal(new Set(kubectl).size, secrets.length);
});
