import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { relativeImports } from '../../tools/import-cycles.ts';
import { valueImports } from '../../tools/value-imports.ts';

test('valueImports: what a module loads when run, type-only imports left out', () => {
  const cases: Array<{ name: string; source: string; want: string[] }> = [
    { name: 'named value', source: "import { a } from './a.ts';", want: ['./a.ts'] },
    { name: 'type-only statement', source: "import type { A } from './a.ts';", want: [] },
    { name: 'every name a type', source: "import { type A, type B } from './a.ts';", want: [] },
    { name: 'a value beside types', source: "import { type A, b } from './a.ts';", want: ['./a.ts'] },
    {
      name: 'a package',
      source: "import { CoreV1Api } from '@kubernetes/client-node';",
      want: ['@kubernetes/client-node'],
    },
    {
      name: 'a type from a package',
      source: "import type { V1Node } from '@kubernetes/client-node';",
      want: [],
    },
    { name: 'side effect', source: "import './run.ts';", want: ['./run.ts'] },
    { name: 'namespace', source: "import * as fs from 'node:fs';", want: ['node:fs'] },
    {
      name: 're-exports',
      source: "export { K } from './k.ts';\nexport type { T } from './t.ts';",
      want: ['./k.ts'],
    },
    { name: 'multi-line', source: "import {\n  type A,\n  b,\n} from './ab.ts';", want: ['./ab.ts'] },
    { name: 'dynamic import: not static', source: "const m = await import('node:fs');", want: [] },
    { name: 'a commented-out import', source: "// import { a } from 'node:fs';", want: [] },
  ];
  for (const { name, source, want } of cases) assert.deepEqual(valueImports(source), want, name);
});

/**
 * src/operator/decide/ is the functional core: decide() and its steps, a pure function of what the
 * shell read. The rule, so that it stays so: its modules import (types too) only modules of decide/
 * itself, src/api, src/policy and src/util; and no module they load, however deep (value imports: the
 * type-only ones are erased), loads a package or builtin that does I/O. A type from a package, such as
 * the Kubernetes client's V1Node, is fine. A decision that needs the cluster takes what was read as input.
 */
const ROOMS = ['operator/decide/', 'api/', 'policy/', 'util/'];
const IO = [
  '@kubernetes/client-node',
  'undici',
  'prom-client',
  'node:fs',
  'node:fs/promises',
  'node:net',
  'node:http',
  'node:https',
  'node:http2',
  'node:tls',
  'node:dns',
  'node:dgram',
  'node:child_process',
];

test('src/operator/decide imports only its own rooms and loads nothing that does I/O', () => {
  const root = fileURLToPath(new URL('../../src', import.meta.url));
  const read = (module: string) => readFileSync(join(root, module), 'utf8');
  const resolve = (module: string, spec: string) =>
    relative(root, normalize(join(root, dirname(module), spec)))
      .split('\\')
      .join('/');
  const decide = (readdirSync(join(root, 'operator/decide')) as string[])
    .filter((f) => f.endsWith('.ts'))
    .map((f) => `operator/decide/${f}`);
  assert.ok(decide.includes('operator/decide/decide.ts'), 'decide.ts is in src/operator/decide');
  const problems: string[] = [];
  for (const module of decide) {
    for (const target of relativeImports(read(module)).map((spec) => resolve(module, spec))) {
      if (!ROOMS.some((room) => target.startsWith(room))) {
        problems.push(`${module} imports ${target}, outside decide/, api/, policy/ and util/`);
      }
    }
  }
  const seen = new Set<string>();
  const queue = [...decide];
  while (queue.length > 0) {
    const module = queue.shift() as string;
    if (seen.has(module)) continue;
    seen.add(module);
    for (const spec of valueImports(read(module))) {
      if (spec.startsWith('.')) queue.push(resolve(module, spec));
      else if (IO.includes(spec)) problems.push(`${module} loads ${spec}`);
    }
  }
  assert.deepEqual(problems, []);
});
