import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  type KubeObject,
  manifestDifferences,
  objectKey,
  parseManifests,
  valueDifferences,
} from '../integration/manifests.ts';

const obj = (kind: string, name: string, namespace?: string, spec: unknown = {}): KubeObject => ({
  apiVersion: 'v1',
  kind,
  metadata: { name, ...(namespace ? { namespace } : {}) },
  spec,
});

describe('valueDifferences', () => {
  const cases: [string, unknown, unknown, boolean, string[]][] = [
    ['equal scalars', 1, 1, false, []],
    ['a changed scalar', { a: 1 }, { a: 2 }, false, ['.a: 1 vs 2']],
    ['a string is not a number', { port: 8080 }, { port: '8080' }, false, ['.port: 8080 vs "8080"']],
    ['a field only actual has', { a: 1 }, { a: 1, b: 2 }, false, ['.b: (absent) vs 2']],
    ['... allowed in a subset', { a: 1 }, { a: 1, b: 2 }, true, []],
    ['a field actual lacks, even in a subset', { a: { b: 1 } }, { a: {} }, true, ['.a.b: 1 vs (absent)']],
    [
      'nested arrays by index',
      { c: [{ x: 1 }, { x: 2 }] },
      { c: [{ x: 1 }, { x: 3 }] },
      false,
      ['.c[1].x: 2 vs 3'],
    ],
    ['defaults inside array items in a subset', { c: [{ x: 1 }] }, { c: [{ x: 1, y: 0 }] }, true, []],
    ['arrays of other lengths', { c: [1] }, { c: [1, 2] }, true, ['.c: 1 items, not 2: [1] vs [1,2]']],
    ['an empty map is not an absent one', { s: {} }, {}, false, ['.s: {} vs (absent)']],
  ];
  for (const [what, expected, actual, subset, want] of cases) {
    test(what, () => assert.deepEqual(valueDifferences(expected, actual, subset), want));
  }
});

describe('manifestDifferences', () => {
  test('the same objects in another order: none', () => {
    const a = [obj('Service', 'm', 'ns'), obj('ClusterRole', 'r')];
    assert.deepEqual(manifestDifferences(a, [...a].reverse()), []);
  });

  test('missing, unexpected and differing objects, each named by kind, namespace and name', () => {
    const expected = [obj('Service', 'm', 'ns', { port: 1 }), obj('ClusterRole', 'r')];
    const actual = [obj('Service', 'm', 'ns', { port: 2 }), obj('Namespace', 'ns')];
    assert.deepEqual(manifestDifferences(expected, actual), [
      'Service ns/m .spec.port: 1 vs 2',
      'ClusterRole r: missing',
      'Namespace ns: not expected',
    ]);
  });

  test('a key twice in one set is an error, not a silent overwrite', () => {
    assert.throws(() => manifestDifferences([obj('Service', 'm', 'ns'), obj('Service', 'm', 'ns')], []), {
      message: 'Service ns/m twice in one set',
    });
  });
});

describe('parseManifests', () => {
  test('every document, empty ones skipped, keyed by kind, namespace and name', () => {
    const text =
      '---\n# Source: nuo/templates/x.yaml\n---\nkind: Service\napiVersion: v1\nmetadata: {name: m, namespace: ns}\n---\nkind: ClusterRole\napiVersion: v1\nmetadata: {name: r}\n';
    assert.deepEqual(parseManifests(text).map(objectKey), ['Service ns/m', 'ClusterRole r']);
  });

  test('a document that is not an object of the API fails, naming it', () => {
    assert.throws(() => parseManifests('a: 1\n'), /not a Kubernetes object.*"a":1/);
  });
});
