import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { pluginArgv } from '../../src/cli/kubectl-plugin.ts';

test('a plugin argv: kubeconfig flags before the command move after it; kubectl-only flags are refused', () => {
  const cases: Array<{ name: string; argv: string[]; want: { argv: string[] } | RegExp }> = [
    { name: 'no flags', argv: ['status'], want: { argv: ['status'] } },
    { name: 'nothing', argv: [], want: { argv: [] } },
    {
      name: 'flags after the command stay',
      argv: ['drain', 'n1', '--context', 'prod', '--kubeconfig=/k'],
      want: { argv: ['drain', 'n1', '--context', 'prod', '--kubeconfig=/k'] },
    },
    {
      name: 'a leading --context NAME',
      argv: ['--context', 'prod', 'status', '--namespace', 'ops'],
      want: { argv: ['status', '--context', 'prod', '--namespace', 'ops'] },
    },
    {
      name: 'leading --kubeconfig=FILE and --context NAME',
      argv: ['--kubeconfig=/k', '--context', 'prod', 'reboot', 'n1'],
      want: { argv: ['reboot', '--kubeconfig=/k', '--context', 'prod', 'n1'] },
    },
    {
      name: 'only flags: nuo says a command is missing',
      argv: ['--context', 'prod'],
      want: { argv: ['--context', 'prod'] },
    },
    { name: '--server', argv: ['status', '--server=https://x'], want: /^--server is a kubectl flag/ },
    { name: '-s', argv: ['status', '-s', 'https://x'], want: /^-s is a kubectl flag/ },
    { name: '--as before the command', argv: ['--as', 'bob', 'status'], want: /^--as is a kubectl flag/ },
    { name: '--user', argv: ['status', '--user', 'bob'], want: /--kubeconfig FILE, --context NAME/ },
    {
      name: 'after -- nothing is read',
      argv: ['status', '--', '--token', 'x'],
      want: { argv: ['status', '--', '--token', 'x'] },
    },
  ];
  for (const { name, argv, want } of cases) {
    const got = pluginArgv(argv);
    if (want instanceof RegExp) {
      assert.ok('error' in got, name);
      assert.match(got.error, want, name);
    } else assert.deepEqual(got, want, name);
  }
});

const entry = fileURLToPath(new URL('../../bin/kubectl-nuo.js', import.meta.url));

test('the kubectl-nuo entry is executable and package.json installs it under that name', () => {
  assert.ok((statSync(entry).mode & 0o111) !== 0, 'bin/kubectl-nuo.js is executable');
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
  assert.equal(pkg.bin['kubectl-nuo'], './bin/kubectl-nuo.js');
});

test('kubectl-nuo runs nuo: its help, and a refused kubectl flag exits 2 naming the flag', () => {
  const run = (...args: string[]) => spawnSync(process.execPath, [entry, ...args], { encoding: 'utf8' });
  const help = run('--help');
  assert.equal(help.status, 0);
  assert.match(help.stdout, /Commands:\n(.*\n)*\s+status\s/);
  const refused = run('status', '--token', 'secret');
  assert.equal(refused.status, 2);
  assert.match(refused.stderr, /^kubectl nuo: --token is a kubectl flag that nuo does not take/);
});

test("krew's manifest: a v1alpha2 Plugin named nuo whose platforms select an OS and link kubectl-nuo", () => {
  const text = readFileSync(new URL('../../deploy/krew/nuo.yaml', import.meta.url), 'utf8');
  const m = parse(text);
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
  assert.equal(m.apiVersion, 'krew.googlecontainertools.github.com/v1alpha2');
  assert.equal(m.kind, 'Plugin');
  // krew requires the manifest's file name to be the plugin's name: the `kubectl nuo` it installs.
  assert.equal(m.metadata.name, 'nuo');
  assert.equal(m.spec.version, `v${pkg.version}`, 'a v-prefixed semantic version, the package version');
  assert.ok(m.spec.shortDescription && m.spec.shortDescription.length <= 60, 'a short description');
  assert.ok(m.spec.description, 'a description');
  assert.ok(Array.isArray(m.spec.platforms) && m.spec.platforms.length > 0, 'platforms');
  for (const p of m.spec.platforms) {
    const { selector } = p;
    const labels = Object.keys(selector?.matchLabels ?? {});
    const keys = (selector?.matchExpressions ?? []).map((e: { key: string }) => e.key);
    assert.ok([...labels, ...keys].includes('os'), 'each platform selects an os');
    assert.match(p.uri, new RegExp(`^https://.*/v${pkg.version}/kubectl-nuo-v${pkg.version}\\.tar\\.gz$`));
    assert.match(p.sha256, /^[0-9a-f]{64}$/, 'a sha256 krew can check');
    assert.equal(p.bin, 'dist/bin/kubectl-nuo.js', "the compiled entry (tsc's output of bin/kubectl-nuo.js)");
    assert.ok(p.files.length > 0, 'files copied from the archive');
  }
});
