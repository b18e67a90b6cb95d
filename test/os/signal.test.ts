/**
 * The signal rebooter against a child process standing in for PID 1: a shell that exits with a known
 * code when, and only when, it receives SIGRTMIN+5.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { SignalRebooter } from '../../src/agent/reboot/signal.ts';

function fakeInit(trap: string) {
  // Prints "ready" once the trap is installed; exits 42 from the trap.
  const child = spawn('bash', ['-c', `trap 'exit 42' ${trap}; echo ready; while :; do sleep 0.05; done`], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      if (chunk.includes('ready')) resolve();
    });
    child.on('exit', () => reject(new Error('the fake init exited before it was ready')));
  });
  return { child, exited, ready };
}

test('the default signal is SIGRTMIN+5, delivered to the configured PID', async (t) => {
  const init = fakeInit('RTMIN+5');
  t.after(() => init.child.kill('SIGKILL'));
  await init.ready;
  const rebooter = new SignalRebooter({ pid: init.child.pid as number });
  assert.equal(rebooter.signal, 39);
  await rebooter.reboot();
  assert.deepEqual(await init.exited, { code: 42, signal: null }, 'the trap for RTMIN+5 ran');
});

test('another signal by name reaches only a process trapping that signal', async (t) => {
  const init = fakeInit('USR1');
  t.after(() => init.child.kill('SIGKILL'));
  await init.ready;
  await new SignalRebooter({ pid: init.child.pid as number, signal: 'SIGUSR1' }).reboot();
  assert.deepEqual(await init.exited, { code: 42, signal: null });
});

test('a PID that does not exist: reboot() rejects with the reason', async () => {
  const init = fakeInit('RTMIN+5');
  await init.ready;
  const pid = init.child.pid as number;
  init.child.kill('SIGKILL');
  await init.exited;
  await assert.rejects(
    new SignalRebooter({ pid }).reboot(),
    new RegExp(`cannot send SIGRTMIN\\+5 \\(39\\) to PID ${pid}: .*ESRCH`),
  );
});
