import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { parse } from 'yaml';
import { planCrd, updatePolicyCrd } from '../../src/api/crd.ts';
import { crdFiles } from '../../tools/crd/files.ts';

test('the CRD files under deploy/ are what the types generate (npm run generate:crds)', () => {
  for (const { path, text } of crdFiles()) {
    assert.equal(readFileSync(path, 'utf8'), text, `${path} is stale: run npm run generate:crds`);
  }
});

/** Every schema node of the CRD, with its path. */
function* nodes(schema: unknown, path = ''): Generator<[string, Record<string, unknown>]> {
  if (typeof schema !== 'object' || schema === null) return;
  const s = schema as Record<string, unknown>;
  yield [path, s];
  for (const [key, child] of Object.entries((s.properties as object) ?? {}))
    yield* nodes(child, `${path}.${key}`);
  if (s.items) yield* nodes(s.items, `${path}[]`);
  if (typeof s.additionalProperties === 'object') yield* nodes(s.additionalProperties, `${path}{}`);
  for (const [i, branch] of ((s.anyOf as unknown[]) ?? []).entries()) yield* nodes(branch, `${path}|${i}`);
}

test('the schemas are structural: no keyword the API server refuses, every string and list bounded for CEL', () => {
  const files = crdFiles().filter((f) => f.path.includes('/deploy/base/'));
  assert.equal(files.length, 2, 'the UpdatePolicy and the Plan');
  for (const { path: file } of files) {
    const crd = parse(readFileSync(file, 'utf8'));
    const schema = crd.spec.versions[0].schema.openAPIV3Schema;
    checkStructural(schema);
  }
});

function checkStructural(schema: { properties: { spec: unknown } }) {
  for (const [path, node] of nodes(schema.properties.spec, 'spec')) {
    for (const banned of ['patternProperties', 'const', '$id', '$ref', 'additionalItems']) {
      assert.equal(node[banned], undefined, `${path} uses ${banned}, which structural schemas do not allow`);
    }
    if (node.type === 'string' && node.enum === undefined && node.pattern === undefined) {
      assert.ok(
        typeof node.maxLength === 'number' || path.includes('|'),
        `${path}: a string without maxLength`,
      );
    }
    if (node.type === 'array')
      assert.ok(typeof node.maxItems === 'number', `${path}: a list without maxItems`);
  }
}

test('int-or-string fields are the two-branch form the API server accepts', () => {
  const spec = JSON.parse(
    JSON.stringify(updatePolicyCrd().spec.versions[0]?.schema.openAPIV3Schema.properties.spec),
  ) as {
    properties: Record<string, Record<string, unknown>>;
  };
  for (const field of ['maxUnavailable', 'maxUnavailablePerZone']) {
    const f = spec.properties[field] ?? {};
    assert.equal(f['x-kubernetes-int-or-string'], true, field);
    assert.deepEqual(f.anyOf, [{ type: 'integer' }, { type: 'string' }], field);
  }
});

test('no field is named a word YAML 1.1 readers (kubectl) take for a boolean, so no key changes on the way', () => {
  // kubectl reads `on:` as the key true: a field `on` would be installed as a field "true".
  const words = /^(y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$/;
  const names: string[] = [];
  const walk = (schema: unknown): void => {
    if (!schema || typeof schema !== 'object') return;
    const s = schema as { properties?: Record<string, unknown> };
    for (const [name, sub] of Object.entries(s.properties ?? {})) {
      names.push(name);
      walk(sub);
    }
    for (const v of Object.values(schema)) if (v && typeof v === 'object' && v !== s.properties) walk(v);
  };
  walk(updatePolicyCrd());
  walk(planCrd());
  assert.ok(names.includes('events'), 'the walk reaches nested fields');
  assert.ok(names.includes('deleteEmptydirData'), "the walk reaches the Plan's fields");
  assert.deepEqual(
    names.filter((n) => words.test(n)),
    [],
  );
});
