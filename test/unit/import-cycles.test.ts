import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { importCycles, importGraph, relativeImports } from '../../tools/import-cycles.ts';

test('relativeImports: static imports and re-exports of relative modules, type-only too', () => {
  const cases: Array<{ name: string; source: string; want: string[] }> = [
    { name: 'named', source: "import { a } from './a.ts';", want: ['./a.ts'] },
    { name: 'type-only', source: "import type { A } from '../x/a.ts';", want: ['../x/a.ts'] },
    { name: 'side effect', source: "import './run.ts';", want: ['./run.ts'] },
    {
      name: 'default and namespace',
      source: "import d from './d.ts';\nimport * as n from './n.ts';",
      want: ['./d.ts', './n.ts'],
    },
    { name: 'multi-line', source: "import {\n  a,\n  type B,\n} from './ab.ts';", want: ['./ab.ts'] },
    {
      name: 're-exports',
      source: "export { K } from './k.ts';\nexport * from './all.ts';\nexport type { T } from './t.ts';",
      want: ['./k.ts', './all.ts', './t.ts'],
    },
    {
      name: 'packages and node: builtins',
      source: "import { join } from 'node:path';\nimport { parse } from 'yaml';",
      want: [],
    },
    { name: 'dynamic import: loaded when run', source: "const m = await import('./lazy.ts');", want: [] },
    { name: 'an export that imports nothing', source: "export const from = './x.ts';", want: [] },
    {
      name: 'a commented-out import',
      source: "// import { a } from './a.ts';\n/* import b from './b.ts'; */",
      want: [],
    },
  ];
  for (const { name, source, want } of cases) assert.deepEqual(relativeImports(source), want, name);
});

test('importCycles: each set of modules that import each other, nothing else', () => {
  const graph = (edges: Record<string, string[]>) => new Map(Object.entries(edges));
  const cases: Array<{ name: string; edges: Record<string, string[]>; want: string[][] }> = [
    { name: 'a chain', edges: { a: ['b'], b: ['c'], c: [] }, want: [] },
    { name: 'a diamond', edges: { a: ['b', 'c'], b: ['d'], c: ['d'], d: [] }, want: [] },
    { name: 'two modules', edges: { a: ['b'], b: ['a'] }, want: [['a', 'b']] },
    { name: 'a self-import', edges: { a: ['a'], b: ['a'] }, want: [['a']] },
    {
      name: 'a ring of three beside a leaf',
      edges: { c: ['a'], a: ['b', 'leaf'], b: ['c'], leaf: [] },
      want: [['a', 'b', 'c']],
    },
    {
      name: 'two separate circles joined by a one-way edge',
      edges: { a: ['b'], b: ['a', 'x'], x: ['y'], y: ['x'] },
      want: [
        ['a', 'b'],
        ['x', 'y'],
      ],
    },
    {
      name: 'two rings through one module',
      edges: { m: ['a', 'b'], a: ['m'], b: ['m'] },
      want: [['a', 'b', 'm']],
    },
  ];
  for (const { name, edges, want } of cases) assert.deepEqual(importCycles(graph(edges)), want, name);
});

test('importGraph resolves relative paths and keeps only edges between the given modules', () => {
  const files = new Map([
    ['cli/a.ts', "import { b } from '../util/b.ts';\nimport { z } from './gone.ts';"],
    ['util/b.ts', "import type { A } from '../cli/a.ts';"],
  ]);
  assert.deepEqual(
    importGraph(files),
    new Map([
      ['cli/a.ts', ['util/b.ts']],
      ['util/b.ts', ['cli/a.ts']],
    ]),
  );
});

test('no import circle in src/', () => {
  const root = fileURLToPath(new URL('../../src', import.meta.url));
  const files = new Map<string, string>();
  for (const path of readdirSync(root, { recursive: true }) as string[]) {
    if (path.endsWith('.ts')) files.set(path.split('\\').join('/'), readFileSync(join(root, path), 'utf8'));
  }
  const cycles = importCycles(importGraph(files));
  assert.deepEqual(
    cycles,
    [],
    `import circles (break each: a shared type in a leaf module):\n${cycles.map((c) => c.join(' ↔ ')).join('\n')}`,
  );
});
