import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  type ClusterHarness,
  type DemoHarness,
  loadHarness,
  type WhatifHarness,
  type WhatifRunHarness,
} from '../../src/cli/harness.ts';
import { checkoutRevision } from '../../tools/build-info.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };

// The build into a temporary image-like directory (package.json, node_modules, dist/), not the
// checkout's dist/: other work may be running from that one, and stale files there would hide nothing.
const image = mkdtempSync(join(tmpdir(), 'nuo-build-test-'));
const dist = join(image, 'dist');
const nuo = (...args: string[]) =>
  spawnSync(process.execPath, [join(dist, 'src/cli/run.js'), ...args], {
    cwd: image,
    encoding: 'utf8',
    timeout: 20_000,
  });

before(() => {
  const tsc = spawnSync(
    process.execPath,
    [
      join(root, 'node_modules/typescript/bin/tsc'),
      '-p',
      join(root, 'tsconfig.build.json'),
      '--outDir',
      dist,
    ],
    { encoding: 'utf8' },
  );
  assert.equal(tsc.status, 0, `tsc -p tsconfig.build.json failed:\n${tsc.stdout}${tsc.stderr}`);
  const info = spawnSync(process.execPath, [join(root, 'tools/build-info.ts'), dist], { encoding: 'utf8' });
  assert.equal(info.status, 0, `tools/build-info.ts failed:\n${info.stdout}${info.stderr}`);
  copyFileSync(join(root, 'package.json'), join(image, 'package.json'));
  symlinkSync(join(root, 'node_modules'), join(image, 'node_modules'));
});

after(() => rmSync(image, { recursive: true, force: true }));

test('the build holds the commands and nothing of the harness, benchmarks, tools or tests', () => {
  const files = (readdirSync(dist, { recursive: true }) as string[]).map((f) => f.split('\\').join('/'));
  assert.ok(files.includes('src/cli/run.js'), 'the entry is built');
  const shipped = files.filter((f) => /^(src\/sim|bench|tools|test)(\/|$)/.test(f));
  assert.deepEqual(shipped, [], 'nothing of src/sim, bench, tools or test');
});

test('the built nuo prints its version, the revision recorded by the build, and the help', () => {
  const v = nuo('--version');
  assert.equal(v.status, 0, v.stderr);
  assert.equal(v.stdout, `nuo ${version} (revision ${checkoutRevision()}, Node ${process.versions.node})\n`);
  assert.doesNotMatch(v.stdout, /revision unknown/, 'this checkout has a git HEAD');
  const help = nuo('--help');
  assert.equal(help.status, 0, help.stderr);
  assert.match(help.stdout, /\n {2}demo {6}.*\(source checkout only\)\n/);
  assert.match(help.stdout, /\n {2}cluster {3}.*\(source checkout only\)\n/);
});

test('the built nuo demo and nuo cluster up fail at once, saying they need a source checkout', () => {
  for (const [args, script] of [
    [['demo', '--nodes', '3'], 'demo'],
    [['cluster', 'up'], 'cluster'],
  ] as const) {
    const r = nuo(...args);
    const line = args.join(' ');
    assert.equal(r.status, 2, `${line}: exit 2 (${r.error ?? r.stderr})`);
    assert.equal(r.stdout, '', `${line}: starts nothing`);
    assert.match(
      r.stderr,
      new RegExp(`^nuo ${args[0]} runs from a source checkout of nuo, not from the build`),
      line,
    );
    assert.match(r.stderr, new RegExp(`npm install && npm run ${script}\n$`), line);
  }
});

test('the built nuo whatif twin and run fail at once, saying it needs a source checkout', () => {
  const r = nuo('whatif', 'twin', '--from', 'cluster.yaml');
  assert.equal(r.status, 2, r.stderr);
  assert.equal(r.stdout, '');
  assert.match(r.stderr, /^nuo whatif twin runs from a source checkout of nuo, not from the build/);
  assert.match(r.stderr, /npm install && npm run nuo -- whatif twin --from PATH\n$/);
  const run = nuo('whatif', 'run', '--from', 'cluster.yaml');
  assert.equal(run.status, 2, run.stderr);
  assert.match(run.stderr, /^nuo whatif run runs from a source checkout of nuo, not from the build/);
  assert.match(run.stderr, /npm install && npm run nuo -- whatif run\n$/);
});

test('every other built command loads (its --help), so the build lacks nothing it needs', () => {
  for (const command of [
    'status',
    'reboot',
    'pause',
    'resume',
    'drain',
    'uncordon',
    'operator',
    'agent',
    'whatif',
  ]) {
    const r = nuo(command, '--help');
    assert.equal(r.status, 0, `${command}: ${r.stderr}`);
    assert.match(r.stdout, new RegExp(`^Usage: nuo ${command}\\b`), command);
  }
});

test('from the sources the harness loads, and its modules fit what src/cli declares of them', async () => {
  // src/cli cannot name src/sim's types (tsc would build src/sim), so these typed imports are the check
  // that the declarations match: tsc --noEmit -p . type-checks test/.
  const demo: DemoHarness = await import('../../src/sim/demo.ts');
  const cluster: ClusterHarness = await import('../../src/sim/cluster/cluster.ts');
  const whatif: WhatifHarness = await import('../../src/sim/whatif-twin.ts');
  assert.equal(
    (await loadHarness<WhatifHarness>('whatif-twin.ts', 'whatif twin', 'cluster'))?.startTwin,
    whatif.startTwin,
  );
  const run: WhatifRunHarness = await import('../../src/sim/whatif-run.ts');
  assert.equal(
    (await loadHarness<WhatifRunHarness>('whatif-run.ts', 'whatif run', 'cluster'))?.runWhatif,
    run.runWhatif,
  );
  assert.equal((await loadHarness<DemoHarness>('demo.ts', 'demo', 'demo'))?.runDemo, demo.runDemo);
  assert.equal(
    (await loadHarness<ClusterHarness>('cluster/cluster.ts', 'cluster', 'cluster'))?.startCluster,
    cluster.startCluster,
  );
});
