/**
 * nuo's copy of SUC's Plan hash, composed as system-upgrade-controller composes it
 * (pkg/upgrade/plan/plan.go: DigestStatus writes the latest version, spec.serviceAccountName, the
 * fields of addToHashFromAnnotation and kubectl's SecretHash of each Secret not ignoreUpdates into one
 * sha224, without separators; the annotation's fields read with wrangler's data.Object.String). The
 * Secret hash itself is checked against kubectl's real code in test/integration/suc-secret-hash.test.ts.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import type { Plan } from '../../src/api/plan.ts';
import {
  digestField,
  goSprint,
  type SucHashInput,
  secretHash,
  sucPlanHash,
} from '../../src/plan/suc-hash.ts';

const sha224 = (...parts: string[]) => createHash('sha224').update(parts.join('')).digest('hex');

const bionic = { name: 'bionic', type: 'Opaque', data: { curl: 'Nw==' } };
const plan: Pick<Plan, 'metadata' | 'spec'> = {
  metadata: { name: 'bionic', namespace: 'system-upgrade' },
  spec: {
    concurrency: 2,
    serviceAccountName: 'system-upgrade',
    version: 'bionic',
    secrets: [
      { name: 'bionic', path: '/host/run/bionic' },
      { name: 'ignored', path: '/host/run/ignored', ignoreUpdates: true },
    ],
    upgrade: { image: 'ubuntu' },
  },
};
const base: SucHashInput = { plan, version: 'bionic', secrets: { bionic } };

test('sha224 of the version, the service account and each Secret hash not ignoreUpdates, in that order', () => {
  assert.equal(sucPlanHash(base), sha224('bionic', 'system-upgrade', secretHash(bionic)));
  const noSecrets = { ...plan, spec: { ...plan.spec, secrets: [] } };
  assert.equal(sucPlanHash({ ...base, plan: noSecrets }), sha224('bionic', 'system-upgrade'));
  const noAccount = { ...plan, spec: { ...plan.spec, secrets: [], serviceAccountName: undefined } };
  assert.equal(sucPlanHash({ ...base, plan: noAccount }), sha224('bionic'));
  assert.equal(
    sucPlanHash({ ...base, version: 'v1.20.11-k3s1', plan: noSecrets }),
    sha224('v1.20.11-k3s1', 'system-upgrade'),
  );
});

test('what SUC leaves out of its hash changes nothing: the image, the command, concurrency, an ignoreUpdates Secret', () => {
  const other = {
    ...plan,
    spec: { ...plan.spec, concurrency: 9, upgrade: { image: 'ubuntu:24.04', command: ['sh'] }, cordon: true },
  };
  assert.equal(sucPlanHash({ ...base, plan: other }), sucPlanHash(base));
});

test('a Secret that is not read throws, naming it', () => {
  assert.throws(() => sucPlanHash({ ...base, secrets: {} }), /secret bionic is not read/);
});

test("the upgrade.cattle.io/digest annotation's fields join the hash, after the service account", () => {
  const annotated = (paths: string) => ({
    ...plan,
    metadata: { ...plan.metadata, annotations: { 'upgrade.cattle.io/digest': paths } },
  });
  assert.equal(
    sucPlanHash({ ...base, plan: annotated('spec.upgrade.image,spec.concurrency,metadata.name') }),
    sha224('bionic', 'system-upgrade', 'ubuntu', '2', 'bionic', secretHash(bionic)),
  );
  assert.equal(
    sucPlanHash({ ...base, plan: annotated('spec.nothing') }),
    sha224('bionic', 'system-upgrade', '', secretHash(bionic)),
  );
});

test("a field as wrangler's String gives it: Go's fmt.Sprint, a list's first item, nothing through a list", () => {
  const obj = {
    s: '  padded  ',
    n: 42,
    f: 1.5,
    b: true,
    z: null,
    list: ['first', 'second'],
    empty: [],
    nested: [{ a: 'x' }],
    m: { b: [1, 'two'], a: { c: null } },
  };
  const cases: [string, string][] = [
    ['s', 'padded'],
    ['n', '42'],
    ['f', '1.5'],
    ['b', 'true'],
    ['z', ''],
    ['missing', ''],
    ['list', 'first'],
    ['empty', ''],
    ['nested.a', ''],
    ['m', 'map[a:map[c:<nil>] b:[1 two]]'],
    ['m.b', '1'],
    ['s.deeper', ''],
  ];
  for (const [path, want] of cases) assert.equal(digestField(obj, path.split('.')), want, path);
  assert.equal(goSprint({ b: 1, a: [] }), 'map[a:[] b:1]');
});

test("kubectl's SecretHash shape: 10 characters from its alphabet, every field counts", () => {
  const h = secretHash(bionic);
  assert.match(h, /^[2456789bcdfghkmt]{10}$/);
  assert.notEqual(secretHash({ ...bionic, name: 'other' }), h);
  assert.notEqual(secretHash({ ...bionic, type: 'kubernetes.io/tls' }), h);
  assert.notEqual(secretHash({ ...bionic, data: { curl: 'OA==' } }), h);
  assert.notEqual(secretHash({ ...bionic, immutable: true }), h);
  assert.notEqual(secretHash({ name: 'x', data: {} }), secretHash({ name: 'x' }));
});
