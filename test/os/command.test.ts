/**
 * The command detector and the command rebooter with real scripts in a temp dir, run directly (an empty
 * host prefix) or through stand-ins for nsenter.
 */
import assert from 'node:assert/strict';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { CommandDetector, DEFAULT_HOST_PREFIX } from '../../src/agent/detect/command.ts';
import { Need } from '../../src/agent/os.ts';
import { CommandRebooter } from '../../src/agent/reboot/command.ts';
import { pollUntil } from '../../src/util/poll.ts';

const dir = await mkdtemp(join(tmpdir(), 'nuo-cmd-'));
after(() => rm(dir, { recursive: true, force: true }));

async function script(name: string, body: string, mode = 0o755): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, `#!/bin/sh\n${body}\n`);
  await chmod(path, mode);
  return path;
}

const exit0 = await script('exit0', 'echo "No core libraries or services have been updated"; exit 0');
const exit1 = await script('exit1', 'echo "Reboot is required to fully utilize these updates"; exit 1');
const exit2 = await script('exit2', 'echo "something odd" >&2; exit 2');
const selfKill = await script('self-kill', 'kill -TERM $$; sleep 5');
const notExecutable = await script('not-executable', 'exit 1', 0o644);
// Stand-ins for `nsenter -m/proc/1/ns/mnt --`: one passes the command through, one fails as nsenter does
// when it may not enter the namespace — with exit code 1, the code that means "needed".
const passThrough = await script('fake-nsenter', 'shift 2; exec "$@"');
const deniedNsenter = await script(
  'denied-nsenter',
  'echo "nsenter: cannot open /proc/1/ns/mnt: Permission denied" >&2; exit 1',
);

const direct = (command: string[], extra: Partial<ConstructorParameters<typeof CommandDetector>[0]> = {}) =>
  new CommandDetector({ command, hostPrefix: [], ...extra });

test('needs-restarting semantics by default: exit 1 = needed, exit 0 = not needed', async () => {
  const needed = await direct([exit1]).check();
  assert.equal(needed.need, Need.needed);
  assert.match(needed.reason, /exited 1: Reboot is required/);
  const notNeeded = await direct([exit0]).check();
  assert.equal(notNeeded.need, Need.notNeeded);
  assert.match(notNeeded.reason, /exited 0/);
});

test('both exit-code lists are configurable', async () => {
  const kuredStyle = { neededExitCodes: [0], notNeededExitCodes: [1, 2] };
  assert.equal((await direct([exit0], kuredStyle).check()).need, Need.needed);
  assert.equal((await direct([exit1], kuredStyle).check()).need, Need.notNeeded);
  assert.equal((await direct([exit2], kuredStyle).check()).need, Need.notNeeded);
});

test('an exit code in neither list is unknown, with the output', async () => {
  const d = await direct([exit2]).check();
  assert.equal(d.need, Need.unknown);
  assert.match(
    d.reason,
    /exited 2: something odd — an exit code in neither list \(needed: 1; not needed: 0\)/,
  );
});

test('a missing or non-executable command is unknown, never needed', async () => {
  const missing = await direct([join(dir, 'no-such-command'), '-r']).check();
  assert.equal(missing.need, Need.unknown);
  assert.match(missing.reason, /could not be started: spawn .*no-such-command ENOENT/);
  const denied = await direct([notExecutable]).check();
  assert.equal(denied.need, Need.unknown);
  assert.match(denied.reason, /could not be started: .*EACCES/);
  // Through a prefix the shell-style codes 126/127 come back: still unknown.
  const viaPrefix = await new CommandDetector({
    command: [join(dir, 'no-such-command')],
    hostPrefix: ['/bin/sh', '-c', '"$@"', 'sh'],
  }).check();
  assert.equal(viaPrefix.need, Need.unknown);
  assert.match(viaPrefix.reason, /exited 127 \(command not found\)/);
});

test('a command killed by a signal is unknown', async () => {
  const d = await direct([selfKill]).check();
  assert.equal(d.need, Need.unknown);
  assert.match(d.reason, /was killed by SIGTERM/);
});

test('a command that times out is killed, with whatever it started, and is unknown', async () => {
  const pidFile = join(dir, 'sleeper.pid');
  const slow = await script('slow', `sleep 30 & echo $! > ${pidFile}; echo started; wait`);
  const started = Date.now();
  const d = await direct([slow], { timeoutMs: 300 }).check();
  assert.ok(Date.now() - started < 5_000, 'did not wait for the command');
  assert.equal(d.need, Need.unknown);
  assert.match(d.reason, /did not finish within 300 ms and was killed: started/);
  const sleeper = Number((await readFile(pidFile, 'utf8')).trim());
  // The background sleep was in the command's process group, so it was killed too (gone, or a zombie
  // waiting for init to reap it).
  await pollUntil(
    'the background process to die',
    async () => {
      const stat = await readFile(`/proc/${sleeper}/stat`, 'utf8').catch(() => undefined);
      return stat === undefined || / Z /.test(stat) ? true : undefined;
    },
    { timeoutMs: 5_000, intervalMs: 20 },
  );
});

test('with a host prefix: the command runs through it, and a failing prefix is unknown, not "needed"', async () => {
  const through = new CommandDetector({
    command: [exit1],
    hostPrefix: [passThrough, '-m/proc/1/ns/mnt', '--'],
  });
  assert.equal((await through.check()).need, Need.needed);
  const throughNo = new CommandDetector({
    command: [exit0],
    hostPrefix: [passThrough, '-m/proc/1/ns/mnt', '--'],
  });
  assert.equal((await throughNo.check()).need, Need.notNeeded);

  const denied = new CommandDetector({
    command: [exit0],
    hostPrefix: [deniedNsenter, '-m/proc/1/ns/mnt', '--'],
  });
  const d = await denied.check();
  assert.equal(d.need, Need.unknown, 'nsenter failing with exit 1 must not read as "reboot needed"');
  assert.match(d.reason, /cannot run commands in the host's namespace: .* exited 1: nsenter: cannot open/);
  assert.deepEqual(
    new CommandDetector({ command: ['needs-restarting', '-r'] }).hostPrefix,
    DEFAULT_HOST_PREFIX,
  );
});

test('configuration is validated', () => {
  assert.throws(() => new CommandDetector({ command: [] }), /command detector: command must not be empty/);
  assert.throws(() => new CommandDetector({ command: [''] }), /invalid program name ""/);
  assert.throws(
    () => new CommandDetector({ command: 'needs-restarting -r' as unknown as string[] }),
    /must be an array of strings, got "needs-restarting -r"/,
  );
  assert.throws(
    () => direct(['x'], { neededExitCodes: [1.5] }),
    /neededExitCodes must hold integers from 0 to 255, got 1\.5/,
  );
  assert.throws(() => direct(['x'], { notNeededExitCodes: [256] }), /notNeededExitCodes .* got 256/);
  assert.throws(() => direct(['x'], { neededExitCodes: ['1' as unknown as number] }), /got "1"/);
  assert.throws(() => direct(['x'], { neededExitCodes: [] }), /neededExitCodes must be a non-empty array/);
  assert.throws(
    () => direct(['x'], { neededExitCodes: [1], notNeededExitCodes: [0, 1] }),
    /exit code\(s\) 1 listed as both/,
  );
  assert.throws(() => direct(['x'], { neededExitCodes: [1, 127] }), /must not include 127/);
  assert.throws(() => direct(['x'], { timeoutMs: 0 }), /timeoutMs must be a positive integer .* got 0/);
  assert.throws(
    () => direct(['x'], { hostPrefix: [' nsenter'] }),
    /hostPrefix: invalid program name " nsenter"/,
  );
});

test('the command rebooter runs its command (through the prefix) and resolves on exit 0', async () => {
  const record = join(dir, 'rebooted');
  const reboot = await script('reboot', `echo "$@" > ${record}`);
  const rebooter = new CommandRebooter({
    command: [reboot, '--now'],
    hostPrefix: [passThrough, '-m/proc/1/ns/mnt', '--'],
  });
  await rebooter.reboot();
  assert.equal((await readFile(record, 'utf8')).trim(), '--now');
});

test('the command rebooter rejects when the command or the prefix fails', async () => {
  await assert.rejects(
    new CommandRebooter({ command: [exit2], hostPrefix: [] }).reboot(),
    /exited 2: something odd/,
  );
  await assert.rejects(
    new CommandRebooter({ command: [exit0], hostPrefix: [deniedNsenter, '-m/proc/1/ns/mnt', '--'] }).reboot(),
    /reboot command failed: .*exited 1: nsenter: cannot open/,
  );
  await assert.rejects(
    new CommandRebooter({ command: [join(dir, 'nope')], hostPrefix: [] }).reboot(),
    /ENOENT/,
  );
  const defaults = new CommandRebooter();
  assert.deepEqual(
    [...defaults.hostPrefix, ...defaults.command],
    ['nsenter', '-m/proc/1/ns/mnt', '--', 'systemctl', 'reboot'],
  );
  assert.throws(() => new CommandRebooter({ command: [] }), /command rebooter: command must not be empty/);
});
