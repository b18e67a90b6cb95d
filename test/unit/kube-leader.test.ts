import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import {
  decideLease,
  LeaderElector,
  type LeaderElectorOptions,
  type LeaseRecord,
  leaseRecord,
  observeLease,
} from '../../src/kube/leader.ts';

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
