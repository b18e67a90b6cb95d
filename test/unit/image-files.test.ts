import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  imagePackageJson,
  parseLdd,
  productionPackages,
  shipsPackageFile,
  userFiles,
} from '../../tools/image/files.ts';

test('production packages: every lock entry but the root, dev-only ones and links, sorted', () => {
  const lock = {
    packages: {
      '': {},
      'node_modules/yaml': {},
      'node_modules/typescript': { dev: true },
      'node_modules/a/node_modules/b': {},
      'node_modules/usocket': { optional: true },
      'node_modules/local': { link: true },
      'packages/local': {},
    },
  };
  assert.deepEqual(productionPackages(lock), [
    'node_modules/a/node_modules/b',
    'node_modules/usocket',
    'node_modules/yaml',
  ]);
});

test("a package's files ship except nested packages, declarations, source maps, Markdown and other platforms' prebuilds; licences always", () => {
  const table: Array<[string, boolean]> = [
    ['package.json', true],
    ['dist/index.js', true],
    ['dist/index.mjs', true],
    ['lib/data.json', true],
    ['dist/index.d.ts', false],
    ['dist/index.d.mts', false],
    ['dist/index.d.cts', false],
    ['dist/index.js.map', false],
    ['README.md', false],
    ['docs/guide.markdown', false],
    ['LICENSE', true],
    ['LICENSE.md', true],
    ['licence.txt', true],
    ['NOTICE', true],
    ['node_modules/x/index.js', false],
    ['src/index.ts', true],
    ['prebuilds/linux-arm64/bare-fs.bare', true],
    ['prebuilds/linux-arm64/LICENSE', true],
    ['lib/prebuilds/linux-arm64+glibc/addon.node', true],
    ['prebuilds/linux-x64/bare-fs.bare', false],
    ['prebuilds/android-arm64/bare-fs.bare', false],
    ['prebuilds/darwin-arm64/LICENSE', false],
    ['lib/prebuilds/linux-x64+musl/addon.node', false],
    ['prebuilds.js', true],
  ];
  for (const [path, ships] of table) assert.equal(shipsPackageFile(path, 'linux-arm64'), ships, path);
});

test('ldd: the libraries with a file, the loader included; a missing library is an error', () => {
  const out = [
    '\tlinux-vdso.so.1 (0x00007ffd0a7f2000)',
    '\tlibdl.so.2 => /lib/x86_64-linux-gnu/libdl.so.2 (0x00007f50f5c4e000)',
    '\tlibstdc++.so.6 => /lib/x86_64-linux-gnu/libstdc++.so.6 (0x00007f50f5a00000)',
    '\t/lib64/ld-linux-x86-64.so.2 (0x00007f50f5c66000)',
    '',
  ].join('\n');
  assert.deepEqual(parseLdd(out), [
    '/lib/x86_64-linux-gnu/libdl.so.2',
    '/lib/x86_64-linux-gnu/libstdc++.so.6',
    '/lib64/ld-linux-x86-64.so.2',
  ]);
  assert.throws(() => parseLdd('\tlibfoo.so.1 => not found\n'), /ldd: libfoo.so.1 => not found/);
});

test('the users: root and 65532 without a home or a shell', () => {
  const { passwd, group } = userFiles();
  assert.match(passwd, /^nonroot:x:65532:65532:nonroot:\/nonexistent:\/usr\/sbin\/nologin$/m);
  assert.match(group, /^nonroot:x:65532:$/m);
  assert.equal(passwd.split('\n').filter(Boolean).length, 2);
});

test("the image's package.json keeps what Node and nuo read, nothing to install or run", () => {
  const pkg = {
    name: 'nuo',
    version: '1.2.3',
    type: 'module',
    license: 'Apache-2.0',
    scripts: { test: 'x' },
    dependencies: { yaml: '^2' },
    devDependencies: { typescript: '^7' },
  };
  assert.deepEqual(JSON.parse(imagePackageJson(pkg)), {
    name: 'nuo',
    version: '1.2.3',
    type: 'module',
    license: 'Apache-2.0',
  });
  assert.throws(() => imagePackageJson({ name: 'nuo', version: '1' }), /"type": "module"/);
});
