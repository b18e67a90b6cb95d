import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import type { Rebooter } from '../../src/agent/os.ts';
import { DeadlineState, type MissedReboot, RebootDeadline } from '../../src/agent/reboot/deadline.ts';

function fakeRebooter(fail?: Error): Rebooter & { calls: number } {
  const r = {
    name: 'fake',
    calls: 0,
    async reboot() {
      r.calls++;
      if (fail) throw fail;
    },
  };
  return r;
}

function missedReports() {
  const reports: MissedReboot[] = [];
  let wake: (() => void) | undefined;
  return {
    reports,
    onMissed: (m: MissedReboot) => {
      reports.push(m);
      wake?.();
    },
    next: () =>
      new Promise<void>((resolve) => {
        wake = resolve;
      }),
  };
}

test('a reboot that did not happen is reported once, and not retried', async () => {
  const inner = fakeRebooter();
  const missed = missedReports();
  const deadline = new RebootDeadline(inner, { timeoutMs: 50, onMissed: missed.onMissed });
  const reported = missed.next();
  const before = Date.now();
  await deadline.reboot();
  assert.equal(deadline.state, DeadlineState.pending);
  await reported;
  assert.ok(Date.now() - before >= 45, 'not before the deadline');
  assert.equal(missed.reports.length, 1);
  const [m] = missed.reports;
  assert.equal(m?.rebooter, 'fake');
  assert.equal(m?.timeoutMs, 50);
  assert.equal(m?.requestedAt.getTime(), deadline.requestedAt?.getTime());
  assert.match(m?.message ?? '', /reboot requested through fake at .* did not happen within 50 ms/);
  assert.equal(deadline.state, DeadlineState.missed);

  await assert.rejects(deadline.reboot(), /did not happen within 50 ms; not retrying/);
  assert.equal(inner.calls, 1, 'the inner rebooter was not asked again');

  deadline.reset();
  assert.equal(deadline.state, DeadlineState.idle);
  await deadline.reboot();
  assert.equal(inner.calls, 2, 'after reset() a new attempt is allowed');
  deadline.reset();
});

test('a second reboot() while one is pending is refused', async () => {
  const inner = fakeRebooter();
  const deadline = new RebootDeadline(inner, { timeoutMs: 60_000, onMissed: () => {} });
  await deadline.reboot();
  await assert.rejects(deadline.reboot(), /already requested at .* and is pending/);
  assert.equal(inner.calls, 1);
  deadline.reset();
});

test('a refused reboot propagates, arms no deadline and can be retried', async () => {
  const inner = fakeRebooter(new Error('logind said no'));
  const deadline = new RebootDeadline(inner, {
    timeoutMs: 10,
    onMissed: () => assert.fail('nothing was accepted'),
  });
  await assert.rejects(deadline.reboot(), /logind said no/);
  assert.equal(deadline.state, DeadlineState.idle);
  await assert.rejects(deadline.reboot(), /logind said no/);
  assert.equal(inner.calls, 2);
});

test('reset() cancels a pending deadline', async () => {
  const missed = missedReports();
  const deadline = new RebootDeadline(fakeRebooter(), { timeoutMs: 40, onMissed: missed.onMissed });
  await deadline.reboot();
  deadline.reset();
  await deadline.reboot();
  const second = deadline.requestedAt;
  await missed.next();
  assert.equal(missed.reports.length, 1);
  assert.equal(missed.reports[0]?.requestedAt, second, 'only the second request was reported');
});

test('an onMissed that throws or rejects does not escape', async () => {
  let calls = 0;
  let wake: () => void = () => {};
  const called = new Promise<void>((resolve) => {
    wake = resolve;
  });
  const deadline = new RebootDeadline(fakeRebooter(), {
    timeoutMs: 5,
    onMissed: async () => {
      calls++;
      wake();
      throw new Error('API down');
    },
  });
  await deadline.reboot();
  await called;
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(calls, 1);
  assert.equal(deadline.state, DeadlineState.missed);
});

test('configuration is validated', () => {
  const inner = fakeRebooter();
  assert.throws(
    () => new RebootDeadline(inner, { timeoutMs: 0, onMissed: () => {} }),
    /timeoutMs must be a positive integer, got 0/,
  );
  assert.throws(() => new RebootDeadline(inner, { timeoutMs: 1.5, onMissed: () => {} }), /got 1\.5/);
  assert.throws(
    () => new RebootDeadline(inner, { timeoutMs: 10, onMissed: undefined as unknown as () => void }),
    /onMissed must be a function/,
  );
  assert.throws(
    () => new RebootDeadline(undefined as unknown as Rebooter, { timeoutMs: 10, onMissed: () => {} }),
    /a rebooter is required/,
  );
});

test('a pending deadline never keeps a stopping agent alive: the process exits with its reboot still pending', () => {
  const deadline = new URL('../../src/agent/reboot/deadline.ts', import.meta.url).href;
  const script = `const { RebootDeadline } = await import(${JSON.stringify(deadline)});
const d = new RebootDeadline({ name: 'fake', reboot: async () => {} }, { timeoutMs: 600000, onMissed: () => {} });
await d.reboot();
console.log(d.state);`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  assert.equal(r.signal, null, `the process was still running after 30 s: ${r.stderr}`);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, 'pending\n');
});
