import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { pollUntil } from '../../src/util/poll.ts';

const bin = fileURLToPath(new URL('../../bin/nuo.js', import.meta.url));
const nuo = (...args: string[]) => spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8' });

test('nuo --help lists the commands and exits 0', () => {
  const r = nuo('--help');
  assert.equal(r.status, 0);
  assert.match(r.stdout, /Commands:/);
  assert.match(r.stdout, /demo/);
});

test('bad input exits 2 with a message that names the problem', () => {
  const cases: Array<{ args: string[]; message: RegExp }> = [
    { args: ['frobnicate'], message: /unknown command "frobnicate"/ },
    { args: ['demo', '--nodes', 'many'], message: /--nodes must be an integer ≥ 1, got "many"/ },
    { args: ['demo', '--zones', '0'], message: /--zones must be an integer ≥ 1, got "0"/ },
    { args: ['demo', '--bogus'], message: /Unknown option '--bogus'/ },
    { args: ['demo', '--vms', 'two'], message: /--vms must be an integer ≥ 0, got "two"/ },
    { args: ['demo', '--vms', '9'], message: /--vms: at most 5 \(each VM takes 1\.5 GiB\), got 9/ },
    {
      args: ['demo', '--vms', '1', '--plan'],
      message: /--plan and --vms: the demo Plan's Jobs run only on KWOK's nodes/,
    },
    { args: ['cluster', 'down'], message: /expected the subcommand "up"/ },
    { args: ['reboot'], message: /nuo reboot: expected exactly one NODE, got 0/ },
    { args: ['uncordon', 'a', 'b'], message: /nuo uncordon: expected exactly one NODE, got 2/ },
    { args: ['drain'], message: /nuo drain: expected a NODE, or --selector to choose nodes by their labels/ },
    {
      args: ['drain', 'a', '-l', 'pool=a'],
      message: /nuo drain: cannot specify both a NODE and a --selector/,
    },
    { args: ['drain', 'a', '--chunk-size', '0'], message: /--chunk-size must be an integer ≥ 1, got "0"/ },
    { args: ['pause', '--bogus', 'a'], message: /Unknown option '--bogus'/ },
    { args: ['release', 'a'], message: /nuo release: --reason is required: say why the slot is freed/ },
    { args: ['release', '--reason', 'gone'], message: /nuo release: expected exactly one NODE, got 0/ },
    { args: ['operator', '--bogus'], message: /Unknown option '--bogus'/ },
    { args: ['operator', '--node-name=Node_1'], message: /--node-name: "Node_1" is not a node name/ },
    {
      args: ['operator', '--max-unavailable=3'],
      message: /--max-unavailable: "max-unavailable" is an UpdatePolicy setting now \(spec\.maxUnavailable\)/,
    },
    {
      args: ['operator', '--soak', '1m'],
      message: /--soak: "soak" is an UpdatePolicy setting now \(spec\.reboot\.soak\)/,
    },
    { args: ['operator', '--drain-concurrency=0'], message: /drain-concurrency: must be at least 1/ },
    {
      args: ['demo', '--max-unavailable-per-zone', '0'],
      message: /--max-unavailable-per-zone must be an integer ≥ 1/,
    },
    { args: ['policy', 'resume'], message: /nuo policy: expected exactly one UpdatePolicy NAME, got 0/ },
    { args: ['policy', 'frob'], message: /nuo policy: unknown subcommand "frob": use explain or resume/ },
    {
      args: ['resume', 'a', '--kubeconfig', '/nonexistent/kc'],
      message: /nuo resume: kubeconfig \/nonexistent\/kc does not exist/,
    },
  ];
  for (const { args, message } of cases) {
    const r = nuo(...args);
    assert.equal(r.status, 2, `${args.join(' ')} exits 2`);
    assert.match(r.stderr, message, args.join(' '));
  }
});

test("nuo agent --proc: the host's procfs read where it is mounted, refused at start-up without a boot ID there", () => {
  const dir = mkdtempSync(join(tmpdir(), 'nuo-agent-proc-'));
  try {
    const proc = (bootId: string | undefined) => {
      const p = join(dir, String(bootId));
      if (bootId !== undefined) {
        mkdirSync(join(p, 'sys/kernel/random'), { recursive: true });
        writeFileSync(join(p, 'sys/kernel/random/boot_id'), `${bootId}\n`);
        writeFileSync(join(p, 'stat'), 'cpu  1 2 3\nbtime 1764241200\n');
      }
      return p;
    };
    const agent = (p: string) =>
      nuo('agent', '--node-name=node-0', `--proc=${p}`, '--kubeconfig=/nonexistent/kc');
    const missing = agent(proc(undefined));
    assert.equal(missing.status, 2, missing.stderr);
    assert.match(
      missing.stderr,
      /--proc \S+\/undefined: ENOENT.*sys\/kernel\/random\/boot_id.*point --proc at the host's procfs/,
    );
    const malformed = agent(proc('not-a-boot-id'));
    assert.equal(malformed.status, 2, malformed.stderr);
    assert.match(
      malformed.stderr,
      /--proc \S+: \S+\/boot_id holds no boot ID: "not-a-boot-id"; point --proc/,
    );
    // A boot ID there: the agent goes on to its kubeconfig, the next thing it needs.
    const good = agent(proc('0f6a2b8e-4b1c-4d5e-9f00-1234567890ab'));
    assert.notEqual(good.status, 0);
    assert.doesNotMatch(good.stderr, /--proc/);
    assert.match(good.stderr, /\/nonexistent\/kc/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('every node command shows its usage: one NODE and the kubeconfig flags', () => {
  for (const command of ['reboot', 'pause', 'resume', 'uncordon']) {
    const r = nuo(command, '--help');
    assert.equal(r.status, 0, command);
    assert.match(r.stdout, new RegExp(`^Usage: nuo ${command} NODE \\[flags\\]\n\n\\S`), command);
    assert.match(r.stdout, /\n\nFlags:\n {2}--kubeconfig FILE .*\n {2}--context NAME/, command);
  }
});

test("nuo operator --help shows every flag it takes, the leader election's timings among them", () => {
  const r = nuo('operator', '--help');
  assert.equal(r.status, 0);
  for (const flag of [
    '--identity',
    '--lease-duration',
    '--renew-deadline',
    '--retry-period',
    '--fleetlock-port',
  ])
    assert.match(r.stdout, new RegExp(`\\n {2}${flag} `), flag);
});

test('an operator that cannot reach its API server exits at once on SIGTERM, before its cache ever synced', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'nuo-cli-test-'));
  try {
    // Port 1 on loopback refuses every connection: the node list fails and is retried with backoff.
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(
      kubeconfig,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'c', cluster: { server: 'https://127.0.0.1:1' } }],
        users: [{ name: 'u', user: { token: 't' } }],
        contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
        'current-context': 'x',
      }),
    );
    const child = spawn(
      process.execPath,
      [bin, 'operator', `--kubeconfig=${kubeconfig}`, '--metrics-port=0'],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.stderr.on('data', (d) => {
      out += d;
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    await pollUntil(
      'the operator to fail its first list',
      () => (out.includes('listing again') ? true : undefined),
      {
        timeoutMs: 30_000,
      },
    );
    child.kill('SIGTERM');
    const code = await Promise.race([exited, delay(20_000).then(() => 'still running' as const)]);
    if (code === 'still running') child.kill('SIGKILL');
    assert.equal(code, 0, `exit after SIGTERM:\n${out}`);
    assert.match(out, /stopped before the node cache synced/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
