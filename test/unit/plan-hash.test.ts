import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PlanSpec } from '../../src/api/plan.ts';
import { canonicalJson, type HashInput, planHash } from '../../src/plan/hash.ts';

const spec: PlanSpec = {
  concurrency: 1,
  version: 'v1.2.3',
  serviceAccountName: 'system-upgrade',
  secrets: [{ name: 'kernel', path: '/host/run/kernel' }],
  upgrade: { image: 'ubuntu', command: ['chroot', '/host'], args: ['sh', 'upgrade.sh'] },
};
const base: HashInput = { spec, version: 'v1.2.3', secrets: { kernel: { version: 'NC4xNQ==' } } };
const hash = planHash(base);

test('sha224 in hex, the same for the same input and for keys in another order', () => {
  assert.match(hash, /^[0-9a-f]{56}$/);
  assert.equal(planHash(structuredClone(base)), hash);
  const reordered: PlanSpec = {
    upgrade: { args: ['sh', 'upgrade.sh'], command: ['chroot', '/host'], image: 'ubuntu' },
    secrets: [{ path: '/host/run/kernel', name: 'kernel' }],
    serviceAccountName: 'system-upgrade',
    version: 'v1.2.3',
    concurrency: 1,
  };
  assert.equal(planHash({ ...base, spec: reordered }), hash);
  assert.equal(canonicalJson({ b: 1, a: [{ d: undefined, c: 'x' }] }), '{"a":[{"c":"x"}],"b":1}');
});

test('what runs on the node changes the hash', () => {
  const changed: [string, Partial<HashInput>][] = [
    ['the resolved version', { version: 'v1.2.4' }],
    ['the secret data', { secrets: { kernel: { version: 'NC4xNg==' } } }],
    ['a missing secret', { secrets: {} }],
    ['the service account', { spec: { ...spec, serviceAccountName: 'other' } }],
    ['the upgrade image', { spec: { ...spec, upgrade: { image: 'ubuntu:24.04' } } }],
    ['a prepare container', { spec: { ...spec, prepare: { image: 'alpine' } } }],
    ['the secret spec', { spec: { ...spec, secrets: [{ name: 'kernel', path: '/elsewhere' }] } }],
    ['tolerations', { spec: { ...spec, tolerations: [{ operator: 'Exists' }] } }],
    ['cordon', { spec: { ...spec, cordon: true } }],
    ['drain', { spec: { ...spec, drain: { force: true } } }],
    ['reboot', { spec: { ...spec, reboot: true } }],
    ['image pull secrets', { spec: { ...spec, imagePullSecrets: [{ name: 'registry' }] } }],
    ['the priority class', { spec: { ...spec, priorityClassName: 'system-node-critical' } }],
    ['exclusive', { spec: { ...spec, exclusive: true } }],
  ];
  for (const [what, change] of changed) assert.notEqual(planHash({ ...base, ...change }), hash, what);
});

test('scheduling, the channel and ignored secrets do not', () => {
  const same: [string, Partial<HashInput>][] = [
    ['concurrency', { spec: { ...spec, concurrency: 5 } }],
    ['nodeSelector', { spec: { ...spec, nodeSelector: { matchLabels: { a: 'b' } } } }],
    ['window', { spec: { ...spec, window: { days: ['mo'], startTime: '1:00', endTime: '2:00' } } }],
    ['postCompleteDelay', { spec: { ...spec, postCompleteDelay: '5m' } }],
    ['postCompleteLabels', { spec: { ...spec, postCompleteLabels: { done: 'yes' } } }],
    ['jobActiveDeadlineSecs', { spec: { ...spec, jobActiveDeadlineSecs: 60 } }],
    ['the channel', { spec: { ...spec, channel: 'https://example.com/stable' } }],
    ['flags written false', { spec: { ...spec, cordon: false, exclusive: false, reboot: false } }],
  ];
  for (const [what, change] of same) assert.equal(planHash({ ...base, ...change }), hash, what);
  const ignoring: PlanSpec = {
    ...spec,
    secrets: [{ name: 'kernel', path: '/host/run/kernel', ignoreUpdates: true }],
  };
  assert.equal(
    planHash({ ...base, spec: ignoring, secrets: { kernel: { a: '1' } } }),
    planHash({ ...base, spec: ignoring, secrets: { kernel: { a: '2' } } }),
    'an ignoreUpdates secret',
  );
});
