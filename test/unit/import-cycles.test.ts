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

/**
 * Today's circles, each allowed until it is broken: src/operator's pure decisions and the step modules
 * import each other (the steps take Action/DecideConfig from decide.ts, which imports them back) until
 * that folder is laid out by role. An entry may only shrink: a module added to a circle, or a new circle,
 * fails; an entry no longer needed fails too, so the list stays what is true.
 */
const ALLOWED: Record<string, string[]> = {
  'operator decisions and their steps': [
    'operator/admission.ts',
    'operator/agent-protocol.ts',
    'operator/decide.ts',
    'operator/foreign-grants.ts',
    'operator/gates.ts',
    'operator/health-gate.ts',
    'operator/kured-lock.ts',
    'operator/ledger.ts',
    'operator/need.ts',
    'operator/node-view.ts',
    'operator/own-node.ts',
    'operator/phase-steps.ts',
    'operator/plan-prepare.ts',
    'operator/plan-steps.ts',
    'operator/plan-work.ts',
    'operator/policy-need.ts',
    'operator/reason-budgets.ts',
    'operator/slots.ts',
    'operator/step-context.ts',
    'operator/taints.ts',
    'operator/waves.ts',
    'operator/zones.ts',
    'policy/resolve.ts',
  ],
};

test('no import circle in src/ beyond the allowed ones, and each allowed one still exists', () => {
  const root = fileURLToPath(new URL('../../src', import.meta.url));
  const files = new Map<string, string>();
  for (const path of readdirSync(root, { recursive: true }) as string[]) {
    if (path.endsWith('.ts')) files.set(path.split('\\').join('/'), readFileSync(join(root, path), 'utf8'));
  }
  const cycles = importCycles(importGraph(files));
  const allowedBy = (cycle: string[]) =>
    Object.keys(ALLOWED).find((name) => cycle.every((m) => ALLOWED[name]?.includes(m)));
  const unexpected = cycles.filter((c) => allowedBy(c) === undefined);
  assert.deepEqual(
    unexpected,
    [],
    `import circles (break each: a shared type in a leaf module):\n${unexpected.map((c) => c.join(' ↔ ')).join('\n')}`,
  );
  const used = new Set(cycles.map(allowedBy));
  for (const [name, modules] of Object.entries(ALLOWED)) {
    assert.ok(used.has(name), `the allowed circle "${name}" is gone: remove it from ALLOWED`);
    const now = cycles.find((c) => allowedBy(c) === name) ?? [];
    assert.deepEqual(
      now,
      [...modules].sort(),
      `the allowed circle "${name}" shrank: list only its modules now`,
    );
  }
});
