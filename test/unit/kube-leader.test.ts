import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { ApiException, KubeConfig, type V1Lease } from '@kubernetes/client-node';
import { LeaderElector, type LeaderElectorOptions } from '../../src/kube/leader.ts';
import { decideLease, type LeaseRecord, leaseRecord, observeLease } from '../../src/kube/lease-decision.ts';
import { pollUntil } from '../../src/util/poll.ts';

const ME = 'me';
const held = (holder: string, extra: Partial<LeaseRecord> = {}): LeaseRecord => ({
  holderIdentity: holder,
  leaseDurationSeconds: 15,
  acquireTime: '2030-01-01T00:00:00.000000Z',
  renewTime: '2030-01-01T00:00:10.000000Z',
  leaseTransitions: 3,
  ...extra,
});

test('decideLease: create, renew, acquire or wait (table)', () => {
  const t0 = 1_000_000;
  const cases: Array<{
    what: string;
    record: LeaseRecord | undefined;
    now: number;
    observedAt: number | undefined;
    expect: ReturnType<typeof decideLease>;
  }> = [
    { what: 'no lease', record: undefined, now: t0, observedAt: undefined, expect: { action: 'create' } },
    { what: 'we hold it', record: held(ME), now: t0, observedAt: t0, expect: { action: 'renew' } },
    {
      what: 'we hold it, even if our own renewal looks expired',
      record: held(ME),
      now: t0 + 60_000,
      observedAt: t0,
      expect: { action: 'renew' },
    },
    {
      what: 'released (holder empty)',
      record: held('', { leaseDurationSeconds: 1 }),
      now: t0,
      observedAt: t0,
      expect: { action: 'acquire', from: '' },
    },
    {
      what: 'held by another, just observed',
      record: held('other'),
      now: t0,
      observedAt: t0,
      expect: { action: 'wait', holder: 'other', expiresInMs: 15_000 },
    },
    {
      what: 'held by another, observed 14.999 s ago',
      record: held('other'),
      now: t0 + 14_999,
      observedAt: t0,
      expect: { action: 'wait', holder: 'other', expiresInMs: 1 },
    },
    {
      what: 'held by another, unchanged for the lease duration',
      record: held('other'),
      now: t0 + 15_000,
      observedAt: t0,
      expect: { action: 'acquire', from: 'other' },
    },
    {
      what: 'the record’s duration counts, not ours',
      record: held('other', { leaseDurationSeconds: 2 }),
      now: t0 + 2_000,
      observedAt: t0,
      expect: { action: 'acquire', from: 'other' },
    },
    {
      what: 'never observed before counts as observed now',
      record: held('other'),
      now: t0,
      observedAt: undefined,
      expect: { action: 'wait', holder: 'other', expiresInMs: 15_000 },
    },
    {
      what: 'a record without a duration uses the fallback',
      record: held('other', { leaseDurationSeconds: undefined }),
      now: t0 + 9_000,
      observedAt: t0,
      expect: { action: 'wait', holder: 'other', expiresInMs: 1_000 },
    },
    {
      what: 'a zero duration uses the fallback, never "expired at once"',
      record: held('other', { leaseDurationSeconds: 0 }),
      now: t0 + 10_000,
      observedAt: t0,
      expect: { action: 'acquire', from: 'other' },
    },
  ];
  for (const c of cases) {
    const observed = c.observedAt === undefined ? undefined : { fingerprint: 'x', at: c.observedAt };
    assert.deepEqual(decideLease(c.record, ME, c.now, observed, 10_000), c.expect, c.what);
  }
});

test('decideLease ignores the holder’s renewTime: a skewed clock cannot expire a live lease', () => {
  // The holder's clock runs an hour behind: its renewTime looks long expired by ours.
  const skewed = held('other', { renewTime: '2000-01-01T00:00:00.000000Z' });
  const now = Date.parse('2030-06-01T00:00:00Z');
  const observed = observeLease(undefined, skewed, now);
  assert.equal(decideLease(skewed, ME, now + 1_000, observed, 15_000).action, 'wait');
  // Its clock runs an hour ahead: the lease still expires after the duration we observed.
  const ahead = held('other', { renewTime: '2099-01-01T00:00:00.000000Z' });
  const seen = observeLease(observed, ahead, now);
  assert.equal(decideLease(ahead, ME, now + 15_000, seen, 15_000).action, 'acquire');
});

test('observeLease keeps the first sighting until the record changes', () => {
  const r1 = held('other');
  const o1 = observeLease(undefined, r1, 100);
  assert.equal(o1.at, 100);
  const o2 = observeLease(o1, { ...r1 }, 5_000);
  assert.equal(o2, o1, 'same record: the observation is kept, so the lease can expire');
  const o3 = observeLease(o2, { ...r1, renewTime: '2030-01-01T00:00:12.000000Z' }, 6_000);
  assert.equal(o3.at, 6_000, 'a renewal restarts the clock');
  const o4 = observeLease(
    o3,
    { ...r1, renewTime: '2030-01-01T00:00:12.000000Z', holderIdentity: 'x' },
    7_000,
  );
  assert.equal(o4.at, 7_000, 'a new holder restarts the clock');
  const o5 = observeLease(o4, undefined, 8_000);
  assert.equal(o5.at, 8_000);
});

test('leaseRecord reads a Lease whether times are strings (as read) or Dates', () => {
  assert.deepEqual(
    leaseRecord({
      spec: {
        holderIdentity: 'a',
        leaseDurationSeconds: 15,
        renewTime: '2030-01-01T00:00:00.123456Z' as unknown as Date,
        acquireTime: new Date('2030-01-01T00:00:00Z'),
      },
    }),
    {
      holderIdentity: 'a',
      leaseDurationSeconds: 15,
      acquireTime: '2030-01-01T00:00:00.000Z',
      renewTime: '2030-01-01T00:00:00.123456Z',
      leaseTransitions: 0,
    },
  );
  assert.deepEqual(leaseRecord({}), {
    holderIdentity: '',
    leaseDurationSeconds: undefined,
    acquireTime: undefined,
    renewTime: undefined,
    leaseTransitions: 0,
  });
});

test('LeaderElector validates its options', () => {
  const kubeconfig = new KubeConfig();
  kubeconfig.loadFromOptions({
    clusters: [{ name: 'c', server: 'https://127.0.0.1:1' }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  const base: LeaderElectorOptions = {
    kubeconfig,
    namespace: 'nuo-system',
    name: 'nuo-operator',
    identity: 'pod-a',
    onStartedLeading: () => {},
    onStoppedLeading: () => {},
  };
  assert.doesNotThrow(() => new LeaderElector(base));
  const bad: Array<[Partial<LeaderElectorOptions>, RegExp]> = [
    [{ identity: '' }, /identity/],
    [{ identity: '  ' }, /identity/],
    [{ namespace: '' }, /namespace/],
    [{ name: 'Bad_Name' }, /name/],
    [{ leaseDurationMs: 10_000, renewDeadlineMs: 10_000 }, /renewDeadlineMs.*less than leaseDurationMs/],
    [{ renewDeadlineMs: 2_000, retryPeriodMs: 2_000 }, /retryPeriodMs.*less than renewDeadlineMs/],
    [{ retryPeriodMs: 0 }, /retryPeriodMs/],
    [{ leaseDurationMs: Number.NaN }, /leaseDurationMs/],
    [{ leaseDurationMs: 500, renewDeadlineMs: 400, retryPeriodMs: 100 }, /at least 1000/],
    [{ onStoppedLeading: undefined as unknown as () => void }, /onStoppedLeading/],
  ];
  for (const [override, message] of bad) {
    assert.throws(() => new LeaderElector({ ...base, ...override }), message, JSON.stringify(override));
  }
});

// ---- the elector's timing against an in-memory Lease API ------------------------------------------

// Wide enough that a loaded machine's event-loop lag (tens of ms) stays well inside every margin.
const LEASE_MS = 2_400;
const RENEW_MS = 1_800;
const RETRY_MS = 400;
/** Longer than RENEW_MS - RETRY_MS, shorter than RENEW_MS (the request timeout). */
const SLOW_MS = 1_600;

type Verb = 'read' | 'write';
/** What the fake does with the `index`-th call of a kind: answer after `delayMs`, or fail with `fail`. */
type Plan = (verb: Verb, index: number) => { delayMs?: number; fail?: number };

/**
 * A Lease API in memory: writes conditional on resourceVersion, each call answered after the delay the
 * plan gives it (a write commits only then, as with etcd paused), and every successful write recorded
 * with the instant it arrived.
 */
class FakeLeases {
  plan: Plan = () => ({});
  writes: Array<{ holder: string; sentAt: number; doneAt: number }> = [];
  #lease: V1Lease | undefined;
  #version = 0;
  #count = { read: 0, write: 0 };

  readNamespacedLease = async (): Promise<V1Lease> => {
    await this.#call('read');
    if (!this.#lease) throw new ApiException(404, 'not found', {}, {});
    return structuredClone(this.#lease);
  };

  createNamespacedLease = async (param: { body: V1Lease }): Promise<V1Lease> => this.#write(param.body, true);

  replaceNamespacedLease = async (param: { body: V1Lease }): Promise<V1Lease> =>
    this.#write(param.body, false);

  async #write(body: V1Lease, create: boolean): Promise<V1Lease> {
    const sentAt = performance.now();
    await this.#call('write');
    const current = this.#lease?.metadata?.resourceVersion;
    if (create ? this.#lease : body.metadata?.resourceVersion !== current) {
      throw new ApiException(409, 'conflict', {}, {});
    }
    this.#version++;
    this.#lease = structuredClone({
      ...body,
      metadata: { ...body.metadata, resourceVersion: String(this.#version) },
    });
    this.writes.push({ holder: body.spec?.holderIdentity ?? '', sentAt, doneAt: performance.now() });
    return structuredClone(this.#lease);
  }

  async #call(verb: Verb): Promise<void> {
    const { delayMs = 0, fail } = this.plan(verb, this.#count[verb]++);
    await new Promise((resolve) => setTimeout(resolve, delayMs));
    if (fail !== undefined) throw new ApiException(fail, `injected ${fail}`, {}, {});
  }
}

interface Run {
  fake: FakeLeases;
  elector: LeaderElector;
  /** performance.now() of each onStartedLeading / onStoppedLeading. */
  started: number[];
  stopped: number[];
  logs: string[];
  /** Ends the run and returns what the safety poller saw. */
  stop: () => Promise<string[]>;
}

/**
 * Runs one candidate against `fake`. A poller checks every 2 ms that isLeader() is true only while a
 * write of ours, sent less than RENEW_MS ago, has succeeded: never once a rival could take over.
 */
function runElector(t: TestContext, fake: FakeLeases): Run {
  const run = { fake, started: [] as number[], stopped: [] as number[], logs: [] as string[] } as Run;
  run.elector = new LeaderElector({
    kubeconfig: { makeApiClient: () => fake } as unknown as KubeConfig,
    namespace: 'nuo-system',
    name: 'nuo-operator',
    identity: ME,
    leaseDurationMs: LEASE_MS,
    renewDeadlineMs: RENEW_MS,
    retryPeriodMs: RETRY_MS,
    log: (level, msg) => run.logs.push(`${level}: ${msg}`),
    onStartedLeading: () => {
      run.started.push(performance.now());
    },
    onStoppedLeading: () => {
      run.stopped.push(performance.now());
    },
  });
  const violations: string[] = [];
  const poller = setInterval(() => {
    if (!run.elector.isLeader()) return;
    const last = fake.writes.findLast((w) => w.holder === ME);
    const age = last ? performance.now() - last.sentAt : Number.POSITIVE_INFINITY;
    if (age >= RENEW_MS) violations.push(`isLeader() ${Math.round(age)} ms after its last write was sent`);
  }, 2);
  const abort = new AbortController();
  const running = run.elector.run(abort.signal);
  run.stop = async () => {
    abort.abort();
    await running;
    clearInterval(poller);
    return violations;
  };
  // A failed assertion must not leave the elector running (the file would never end).
  t.after(run.stop);
  return run;
}

/** Polls a condition on the fake every 5 ms (timings here are a few seconds at most). */
const until = <T>(what: string, check: () => T | undefined, timeoutMs = 10_000) =>
  pollUntil(what, check, { timeoutMs, intervalMs: 5 });

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test('an acquire whose write takes longer than renewDeadline - retryPeriod, then renewals that succeed: no step-down', async (t) => {
  const fake = new FakeLeases();
  fake.plan = (verb, i) => (verb === 'write' && i === 0 ? { delayMs: SLOW_MS } : {});
  const run = runElector(t, fake);
  await until('leading', () => run.started[0]);
  const acquire = fake.writes[0];
  assert.ok(acquire && acquire.doneAt - acquire.sentAt > RENEW_MS - RETRY_MS, 'the acquiring write was slow');
  // Two full renew deadlines of successful renewals.
  await pause(2 * RENEW_MS);
  assert.equal(run.elector.isLeader(), true);
  assert.equal(run.stopped.length, 0);
  const violations = await run.stop();
  assert.ok(
    !run.logs.some((l) => l.includes('no successful renewal')),
    `stepped down for want of a renewal: ${run.logs.join('\n')}`,
  );
  assert.equal(run.started.length, 1);
  assert.ok(run.elector.stats().renewals >= 5, `renewed ${run.elector.stats().renewals} times`);
  assert.deepEqual(violations, []);
});

test('a slow read before the acquiring write does not count against the renew deadline', async (t) => {
  const fake = new FakeLeases();
  fake.plan = (verb, i) => (verb === 'read' && i === 0 ? { delayMs: SLOW_MS } : {});
  const run = runElector(t, fake);
  await until('leading', () => run.started[0]);
  assert.equal(fake.writes.length, 1, 'led on its first write: the slow read left the deadline whole');
  await pause(2 * RENEW_MS);
  assert.equal(run.elector.isLeader(), true);
  const violations = await run.stop();
  assert.ok(!run.logs.some((l) => l.includes('no successful renewal')), run.logs.join('\n'));
  assert.equal(run.started.length, 1);
  assert.deepEqual(violations, []);
});

test('after a slow acquire the first renewal goes out at once, not a retryPeriod later', async (t) => {
  const fake = new FakeLeases();
  // The acquiring write leaves 1.5 retry periods of the deadline; every renewal takes 0.75 of one.
  const acquireMs = RENEW_MS - 1.5 * RETRY_MS;
  fake.plan = (verb, i) => (verb === 'write' ? { delayMs: i === 0 ? acquireMs : 0.75 * RETRY_MS } : {});
  const run = runElector(t, fake);
  const startedAt = await until('leading', () => run.started[0]);
  await pause(2 * RENEW_MS);
  assert.equal(run.elector.isLeader(), true);
  const violations = await run.stop();
  assert.ok(!run.logs.some((l) => l.includes('no successful renewal')), run.logs.join('\n'));
  assert.equal(run.started.length, 1);
  const [acquire, first] = fake.writes;
  assert.ok(acquire && first);
  assert.ok(first.sentAt - startedAt < RETRY_MS / 4, 'the first renewal followed the slow acquire at once');
  assert.deepEqual(violations, []);
});

test('a slow acquire whose renewals then fail never starts leading', async (t) => {
  const fake = new FakeLeases();
  // The first read (404) and the creating write (slow) succeed, everything after fails.
  fake.plan = (verb, i) => (i === 0 ? (verb === 'write' ? { delayMs: SLOW_MS } : {}) : { fail: 500 });
  const run = runElector(t, fake);
  await until('the slow write', () => (fake.writes.length === 1 ? true : undefined));
  await pause(2 * RENEW_MS);
  const violations = await run.stop();
  assert.deepEqual(run.started, [], 'it held the Lease too briefly to start anything');
  assert.ok(
    run.logs.some((l) => l.includes('renewing before leading')),
    run.logs.join('\n'),
  );
  assert.deepEqual(violations, []);
});

test('renewals that truly fail: step-down renewDeadline after the last good write was sent, not answered', async (t) => {
  const fake = new FakeLeases();
  let failing = false;
  let slowNext = false;
  fake.plan = (verb) => {
    if (failing) return { fail: 500 };
    if (verb !== 'write' || !slowNext) return {};
    // This renewal succeeds, slowly; every call after it fails.
    slowNext = false;
    failing = true;
    return { delayMs: RENEW_MS / 2 };
  };
  const run = runElector(t, fake);
  await until('leading', () => run.started[0]);
  await until('a renewal', () => (fake.writes.length >= 2 ? true : undefined));
  slowNext = true;
  const stoppedAt = await until('the step-down', () => run.stopped[0]);
  const last = fake.writes.at(-1);
  assert.ok(last && last.doneAt - last.sentAt >= RENEW_MS / 2 - 5, 'the last good write was the slow one');
  assert.equal(run.elector.isLeader(), false);
  const violations = await run.stop();
  assert.ok(
    stoppedAt - last.sentAt >= RENEW_MS - 5 && stoppedAt - last.sentAt < RENEW_MS + 2 * RETRY_MS,
    `stepped down ${Math.round(stoppedAt - last.sentAt)} ms after the last good write was sent`,
  );
  assert.ok(
    run.logs.some((l) => l.includes('no successful renewal')),
    run.logs.join('\n'),
  );
  assert.deepEqual(violations, []);
});
