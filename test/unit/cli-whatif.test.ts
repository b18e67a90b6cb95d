import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { rawNode, rawPod } from './whatif-fixtures.ts';

const bin = fileURLToPath(new URL('../../bin/nuo.js', import.meta.url));
const nuo = (...args: string[]) =>
  spawnSync(process.execPath, [bin, 'whatif', ...args], { encoding: 'utf8', timeout: 20_000 });

const dir = mkdtempSync(join(tmpdir(), 'nuo-cli-whatif-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('nuo whatif: bad input exits 2 with a message that names the problem', () => {
  const cases: { args: string[]; message: RegExp }[] = [
    { args: [], message: /nuo whatif: missing subcommand: snapshot, twin or run/ },
    { args: ['predict'], message: /unknown subcommand "predict": use snapshot, twin or run/ },
    { args: ['run', '--from', dir, '-o', 'yaml'], message: /--output must be table or json, got "yaml"/ },
    { args: ['run', '--from', dir, '--reboot-time', 'soon'], message: /--reboot-time: / },
    {
      args: ['run', '--from', dir, '--timeout', '2h'],
      message: /--timeout divided by --speed must be at most 50m/,
    },
    { args: ['run', '--from', dir, '--return-time', 'later'], message: /--return-time: / },
    {
      args: ['run', '--from', dir, '--speed', 'fast'],
      message: /--speed must be a number from 1 to 100, got "fast"/,
    },
    { args: ['run', '--from', dir, '--speed', '0.5'], message: /--speed must be a number from 1 to 100/ },
    {
      args: ['run', '--from', dir, '--start', 'Monday'],
      message: /--start must be an RFC 3339 time \(2026-11-30T01:00:00Z\), got "Monday"/,
    },
    {
      args: ['run', '--from', dir, '--speed', '10', '--timeout', '10h'],
      message: /--timeout divided by --speed must be at most 50m/,
    },
    {
      args: ['run', '--from', dir, '--kubeconfig', 'k'],
      message: /--from reads files: --kubeconfig and --context name a cluster/,
    },
    { args: ['run', '--from', dir, '--suggest-max', '3'], message: /--suggest-max go with --suggest/ },
    {
      args: ['run', '--from', dir, '--window', '1h', '--suggest-policy', 'a'],
      message: /--suggest-policy, --window go with --suggest/,
    },
    {
      args: ['run', '--from', dir, '--suggest', '--suggest-max', '0'],
      message: /--suggest-max must be a whole number from 1 to 100, got "0"/,
    },
    { args: ['run', '--from', dir, '--suggest', '--window', 'soon'], message: /--window: / },
    { args: ['snapshot', '--from', dir, '--suggest'], message: /--suggest goes with run/ },
    { args: ['twin'], message: /twin needs --from PATH: the snapshot to make again/ },
    { args: ['twin', '--from', dir, '--timeout', 'soon'], message: /--timeout: / },
    { args: ['snapshot', 'extra'], message: /unexpected arguments: extra/ },
    { args: ['snapshot', '-o', 'xml', '--from', dir], message: /--output must be yaml or json, got "xml"/ },
    {
      args: ['snapshot', '--from', dir, '--context', 'prod'],
      message: /--from reads files: --kubeconfig and --context name a cluster/,
    },
  ];
  for (const c of cases) {
    const r = nuo(...c.args);
    assert.equal(r.status, 2, `${c.args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, c.message);
    assert.equal(r.stdout, '');
  }
});

test('nuo whatif run --suggest asks which policy to vary when the snapshot holds several, before starting anything', () => {
  const dump = join(dir, 'two-policies');
  mkdirSync(dump);
  const policy = (name: string) => ({
    apiVersion: 'nuo.dev/v1alpha1',
    kind: 'UpdatePolicy',
    metadata: { name },
    spec: { nodeSelector: { matchLabels: { pool: name } } },
  });
  writeFileSync(
    join(dump, 'all.json'),
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'List',
      items: [rawNode('n1', 'a'), policy('web'), policy('db')],
    }),
  );
  const r = nuo('run', '--from', dump, '--suggest');
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /2 UpdatePolicies \(web, db\): name the one to vary with --suggest-policy NAME/);
  const empty = nuo('run', '--from', dump, '--suggest', '--suggest-policy', 'db');
  assert.equal(empty.status, 2, empty.stderr);
  assert.match(empty.stderr, /UpdatePolicy db holds no node of the snapshot: there is nothing to roll/);
  assert.doesNotMatch(`${r.stderr}${empty.stderr}`, /trying/);
  assert.equal(r.stdout + empty.stdout, '');
});

test('nuo whatif snapshot --from a kubectl dump writes the cut-down snapshot, drops Secrets and says so', () => {
  const dump = join(dir, 'dump');
  mkdirSync(dump);
  const secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'db', namespace: 'shop' },
    data: { pw: 'aHVudGVyMg==' },
  };
  writeFileSync(
    join(dump, 'all.json'),
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'List',
      items: [rawNode('n1', 'a'), rawPod('p1', 'n1'), secret],
    }),
  );
  const r = nuo('snapshot', '--from', dump);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^# nuo whatif snapshot of .*dump, \d{4}-\d\d-\d\dT/);
  const list = parse(r.stdout) as { kind: string; items: { kind: string }[] };
  assert.equal(list.kind, 'List');
  assert.deepEqual(
    list.items.map((i) => i.kind),
    ['Node', 'Pod'],
  );
  assert.ok(!r.stdout.includes('hunter2') && !r.stdout.includes('aHVudGVyMg'), 'no secret value');
  assert.match(r.stderr, /note: 1 Secret dropped unread/);
  assert.match(r.stderr, /1 nodes, 1 pods/);
  const json = nuo('snapshot', '--from', dump, '-o', 'json');
  assert.equal(json.status, 0, json.stderr);
  assert.deepEqual((JSON.parse(json.stdout) as { items: unknown[] }).items, list.items);
});

test('nuo whatif snapshot --from a file with bad objects exits 1 and names each, writing nothing', () => {
  const file = join(dir, 'bad.yaml');
  writeFileSync(
    file,
    'apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: p}\n',
  );
  const r = nuo('snapshot', '--from', file);
  assert.equal(r.status, 1);
  assert.equal(r.stdout, '');
  assert.match(
    r.stderr,
    /^nuo whatif: 1 object could not be read:\n {2}.*bad\.yaml item 1 \(Pod p\): metadata\.namespace is missing\n$/,
  );
});
