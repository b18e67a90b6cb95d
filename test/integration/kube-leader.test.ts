/**
 * LeaderElector against the real control plane, with short durations (lease 4 s, renew deadline 2 s,
 * retry 0.5 s). Safety rule 3: only the leader acts, and a lost lease stops actuation before the lease
 * could expire for anyone else. A poller checks across every test that no two candidates of one Lease
 * ever lead at the same instant, both by isLeader() and by their onStarted/onStoppedLeading windows.
 *
 * A leader is cut off from the API either by stopping kube-apiserver or, so that its rival stays
 * connected, by a TCP proxy between it and the API server that the test closes.
 */
import assert from 'node:assert/strict';
import { createServer, type Socket, connect as tcpConnect } from 'node:net';
import { after, afterEach, type TestContext, test } from 'node:test';
import {
  CoordinationV1Api,
  CoreV1Api,
  KubeConfig,
  RbacAuthorizationV1Api,
  type V1Lease,
} from '@kubernetes/client-node';
import { LeaderElector } from '../../src/kube/leader.ts';
import { pollUntil } from '../../src/util/poll.ts';
import { useCluster } from './support.ts';

const LEASE_MS = 4_000;
const RENEW_MS = 2_000;
const RETRY_MS = 500;
const NS = 'leader-test';

const cluster = await useCluster();
const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
const coordination = cluster.kubeconfig.makeApiClient(CoordinationV1Api);
await core.createNamespace({ body: { metadata: { name: NS } } });

// ---- the independent poller: never two leaders of one Lease at once -------------------------------

const candidates = new Set<Candidate>();
const violations: string[] = [];
const poller = setInterval(() => {
  const byLease = new Map<string, string[]>();
  for (const c of candidates) {
    if (c.elector.isLeader()) byLease.set(c.lease, [...(byLease.get(c.lease) ?? []), c.id]);
  }
  for (const [lease, ids] of byLease) {
    if (ids.length > 1)
      violations.push(`${new Date().toISOString()} ${lease}: ${ids.join(' and ')} both lead`);
  }
}, 10);
after(() => clearInterval(poller));
afterEach(() => {
  assert.deepEqual(violations.splice(0), [], 'two leaders at the same instant');
});

async function readLease(name: string): Promise<V1Lease> {
  return coordination.readNamespacedLease({ name, namespace: NS });
}

/** Resolves when `check` holds, re-checked on every candidate callback and at least every 100 ms. */
async function until<T>(what: string, check: () => T | undefined, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, 100);
      function done() {
        clearTimeout(timer);
        wakers.delete(done);
        resolve();
      }
      wakers.add(done);
    });
  }
}
const wakers = new Set<() => void>();
const wake = () => {
  for (const w of [...wakers]) w();
};

interface Candidate {
  id: string;
  lease: string;
  elector: LeaderElector;
  abort: AbortController;
  running: Promise<void>;
  /** Date.now() of each onStartedLeading / onStoppedLeading. */
  started: number[];
  stopped: number[];
  /** The signal of each leadership term, and whether it was aborted when onStoppedLeading ran. */
  signals: AbortSignal[];
  abortedBeforeStop: boolean[];
  /** lastRenewTime as it was when each term ended. */
  lastRenewAtStop: Array<number | undefined>;
  logs: string[];
}

function candidate(
  t: TestContext,
  lease: string,
  id: string,
  options: { kubeconfig?: KubeConfig; releaseOnCancel?: boolean; leaseDurationMs?: number } = {},
): Candidate {
  const c = {
    id,
    lease,
    started: [] as number[],
    stopped: [] as number[],
    signals: [] as AbortSignal[],
    abortedBeforeStop: [] as boolean[],
    lastRenewAtStop: [] as Array<number | undefined>,
    logs: [] as string[],
    abort: new AbortController(),
  } as Candidate;
  c.elector = new LeaderElector({
    kubeconfig: options.kubeconfig ?? cluster.kubeconfig,
    namespace: NS,
    name: lease,
    identity: id,
    leaseDurationMs: options.leaseDurationMs ?? LEASE_MS,
    renewDeadlineMs: RENEW_MS,
    retryPeriodMs: RETRY_MS,
    releaseOnCancel: options.releaseOnCancel ?? true,
    log: (level, msg) => c.logs.push(`${level}: ${msg}`),
    onStartedLeading: (signal) => {
      // The window check: nobody else of this Lease is between its start and stop callbacks.
      for (const other of candidates) {
        if (other !== c && other.lease === lease && other.started.length > other.stopped.length) {
          violations.push(`${id} started leading ${lease} while ${other.id} had not stopped`);
        }
      }
      c.started.push(Date.now());
      c.signals.push(signal);
      wake();
    },
    onStoppedLeading: () => {
      c.stopped.push(Date.now());
      c.abortedBeforeStop.push(c.signals.at(-1)?.aborted ?? false);
      c.lastRenewAtStop.push(c.elector.stats().lastRenewTime);
      if (c.elector.isLeader()) violations.push(`${id}: isLeader() still true in onStoppedLeading`);
      wake();
    },
  });
  candidates.add(c);
  c.running = c.elector.run(c.abort.signal);
  t.after(async () => {
    c.abort.abort();
    await c.running;
    candidates.delete(c);
  });
  return c;
}

const leading = (c: Candidate) => c.started.length > c.stopped.length;

/** A TCP proxy to the API server that the test can cut. */
async function proxy(t: TestContext): Promise<{ kubeconfig: KubeConfig; cut: () => void }> {
  const target = new URL(cluster.server);
  const sockets = new Set<Socket>();
  let open = true;
  const server = createServer((client) => {
    if (!open) {
      client.destroy();
      return;
    }
    const upstream = tcpConnect(Number(target.port), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => {}).on('close', () => {
        sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  const cut = () => {
    open = false;
    for (const s of sockets) s.destroy();
  };
  t.after(() => {
    cut();
    server.close();
  });
  const kubeconfig = new KubeConfig();
  kubeconfig.loadFromOptions({
    clusters: cluster.kubeconfig.clusters.map((c) => ({ ...c, server: `https://127.0.0.1:${port}` })),
    users: cluster.kubeconfig.users,
    contexts: cluster.kubeconfig.contexts,
    currentContext: cluster.kubeconfig.currentContext,
  });
  return { kubeconfig, cut };
}

/** The Lease once its renewTime differs from `seen` (the API state has no event to await: polled). */
async function renewedSince(name: string, seen: unknown): Promise<V1Lease> {
  return pollUntil(
    `a renewal of ${name}`,
    async () => {
      const lease = await readLease(name);
      return String(lease.spec?.renewTime) !== String(seen) ? lease : undefined;
    },
    { intervalMs: RETRY_MS / 2 },
  );
}

test('of two candidates exactly one leads, and the Lease says who, for how long, since when', async (t) => {
  const a = candidate(t, 'one', 'a');
  const b = candidate(t, 'one', 'b');
  const leader = await until('a leader', () => [a, b].find(leading));
  const other = leader === a ? b : a;
  const first = await readLease('one');
  assert.equal(first.spec?.holderIdentity, leader.id);
  assert.equal(first.spec?.leaseDurationSeconds, LEASE_MS / 1000);
  assert.equal(first.spec?.leaseTransitions, 0);
  assert.ok(first.spec?.acquireTime && first.spec.renewTime);
  // Several renewals later, still the same leader, and the other never led.
  let lease = first;
  for (let i = 0; i < 3; i++) {
    lease = await renewedSince('one', lease.spec?.renewTime);
    assert.equal(lease.spec?.holderIdentity, leader.id);
    assert.equal(
      String(lease.spec?.acquireTime),
      String(first.spec?.acquireTime),
      'a renewal keeps acquireTime',
    );
  }
  assert.equal(other.started.length, 0, 'the other never led');
  assert.ok(leader.elector.isLeader());
  assert.equal(other.elector.isLeader(), false);
  assert.equal(other.elector.leader, leader.id, 'the standby knows who leads');
});

test('a leader that dies without releasing is replaced, but only once its lease has expired', async (t) => {
  const a = candidate(t, 'crash', 'a', { releaseOnCancel: false });
  await until('a leads', () => (leading(a) ? true : undefined));
  const b = candidate(t, 'crash', 'b');
  // b has seen a's lease renewed at least once before a dies.
  await until('b sees a as leader', () => (b.elector.leader === 'a' ? true : undefined));
  a.abort.abort();
  await a.running;
  const lastRenew = a.lastRenewAtStop.at(-1);
  assert.ok(lastRenew !== undefined);
  assert.equal((await readLease('crash')).spec?.holderIdentity, 'a', 'a crash releases nothing');

  const takeover = await until('b takes over', () => b.started[0]);
  assert.ok(
    takeover >= lastRenew + LEASE_MS,
    `b took over ${takeover - lastRenew} ms after a's last renewal, before the ${LEASE_MS} ms lease expired`,
  );
  const lease = await readLease('crash');
  assert.equal(lease.spec?.holderIdentity, 'b');
  assert.equal(lease.spec?.leaseTransitions, 1, 'a takeover counts as a transition');
});

test('a leader cut off from the API steps down before its lease could expire; only then the other leads', async (t) => {
  const link = await proxy(t);
  const a = candidate(t, 'cut', 'a', { kubeconfig: link.kubeconfig });
  await until('a leads', () => (leading(a) ? true : undefined));
  const b = candidate(t, 'cut', 'b');
  await until('b sees a as leader', () => (b.elector.leader === 'a' ? true : undefined));

  link.cut();
  const stoppedAt = await until('a steps down', () => a.stopped[0]);
  const lastRenew = a.lastRenewAtStop[0] as number;
  assert.ok(a.abortedBeforeStop[0], 'the leadership signal was aborted before onStoppedLeading');
  assert.ok(a.signals[0]?.aborted);
  assert.equal(a.elector.isLeader(), false);
  assert.ok(
    stoppedAt < lastRenew + LEASE_MS,
    `a stepped down ${stoppedAt - lastRenew} ms after its last renewal: not before its ${LEASE_MS} ms lease expired`,
  );

  const takeover = await until('b takes over', () => b.started[0]);
  assert.ok(takeover > stoppedAt, 'b started after a stopped');
  assert.ok(takeover >= lastRenew + LEASE_MS, 'and only after the lease expired');
  assert.equal((await readLease('cut')).spec?.holderIdentity, 'b');
  // a keeps campaigning without reaching the API, and never leads again.
  assert.equal(a.started.length, 1);
  assert.ok(a.logs.some((l) => l.startsWith('warn') && l.includes('could not')));
});

test('with kube-apiserver stopped the leader steps down within the renew deadline, then recovers', async (t) => {
  const a = candidate(t, 'outage', 'a');
  await until('a leads', () => (leading(a) ? true : undefined));
  await cluster.components['kube-apiserver'].stop();
  try {
    const stoppedAt = await until('a steps down', () => a.stopped[0]);
    const lastRenew = a.lastRenewAtStop[0] as number;
    assert.ok(
      stoppedAt < lastRenew + LEASE_MS,
      `stepped down ${stoppedAt - lastRenew} ms after the last renewal, not before the lease expired`,
    );
    assert.ok(a.abortedBeforeStop[0]);
    assert.equal(a.elector.isLeader(), false);
  } finally {
    await cluster.restart('kube-apiserver');
  }
  // The Lease still names a: once the API is back it renews it and leads again. On a loaded machine the
  // restarted API server can answer slower than the 2 s renew deadline while restart() still waits for
  // it to be ready, so a may have led, stepped down and led again by then: at least once more, not
  // exactly once (a flake seen in a full test run, reproduced beside a 1,000-node benchmark).
  await until('a leads again', () => (a.started.length >= 2 ? true : undefined));
  assert.equal((await readLease('outage')).spec?.holderIdentity, 'a');
});

test('a clean shutdown releases the Lease and the other takes over without waiting it out', async (t) => {
  // A long lease: waiting it out would take 30 s, a release lets b in within a few retry periods.
  const long = 30_000;
  const a = candidate(t, 'release', 'a', { leaseDurationMs: long });
  await until('a leads', () => (leading(a) ? true : undefined));
  const b = candidate(t, 'release', 'b', { leaseDurationMs: long });
  await until('b sees a as leader', () => (b.elector.leader === 'a' ? true : undefined));
  a.abort.abort();
  await a.running;
  assert.equal(a.stopped.length, 1);
  assert.ok(a.logs.some((l) => l.includes('released')));
  const lastRenew = a.lastRenewAtStop[0] as number;
  const takeover = await until('b takes over', () => b.started[0], long);
  assert.ok(takeover < lastRenew + long, 'b did not have to wait for the lease to expire');
  const lease = await readLease('release');
  assert.equal(lease.spec?.holderIdentity, 'b');
  assert.equal(lease.spec?.leaseTransitions, 1);
});

test('a leader that hands over steps down at once and releases: the standby leads without waiting the lease out', async (t) => {
  const long = 30_000;
  const a = candidate(t, 'handover', 'a', { leaseDurationMs: long });
  await until('a leads', () => (leading(a) ? true : undefined));
  const b = candidate(t, 'handover', 'b', { leaseDurationMs: long });
  await until('b sees a as leader', () => (b.elector.leader === 'a' ? true : undefined));
  assert.equal(b.elector.handOver('not leading'), false, 'a standby has nothing to hand over');
  assert.equal(a.elector.handOver('its node is drained next'), true);
  assert.equal(a.elector.isLeader(), false, 'stepped down before handOver returned');
  assert.equal(a.stopped.length, 1);
  assert.ok(a.abortedBeforeStop[0], 'the leadership signal was aborted');
  const lastRenew = a.lastRenewAtStop[0] as number;
  const takeover = await until('b takes over', () => b.started[0], long);
  assert.ok(takeover < lastRenew + long, 'b did not wait for the lease to expire');
  assert.equal((await readLease('handover')).spec?.holderIdentity, 'b');
  assert.ok(a.logs.some((l) => l.includes('stopped leading: handing over: its node is drained next')));
  assert.ok(a.logs.some((l) => l.includes('released')));
  assert.equal(a.started.length, 1, 'a waits its pause out and does not lead again');
});

test('a leader that hands over with no standby leads again once its pause is over', async (t) => {
  const pauseMs = 1_000;
  const a = candidate(t, 'handover-alone', 'a');
  await until('a leads', () => (leading(a) ? true : undefined));
  assert.equal(a.elector.handOver('its node is drained next', pauseMs), true);
  const stoppedAt = a.stopped[0] as number;
  const again = await until('a leads again', () => a.started[1]);
  assert.ok(again >= stoppedAt + pauseMs, `led again ${again - stoppedAt} ms after handing over`);
  assert.equal((await readLease('handover-alone')).spec?.holderIdentity, 'a');
});

test('RBAC: get/update on its one Lease is enough; without rights it reports why and never leads', async (t) => {
  const rbac = cluster.kubeconfig.makeApiClient(RbacAuthorizationV1Api);
  // create cannot be limited by resourceNames, so the Lease exists beforehand (as a deployment would
  // create it) and the Role grants only get and update on it.
  await coordination.createNamespacedLease({
    namespace: NS,
    body: { metadata: { name: 'rbac', namespace: NS } },
  });
  await rbac.createNamespacedRole({
    namespace: NS,
    body: {
      metadata: { name: 'rbac-lease' },
      rules: [
        {
          apiGroups: ['coordination.k8s.io'],
          resources: ['leases'],
          resourceNames: ['rbac'],
          verbs: ['get', 'update'],
        },
      ],
    },
  });
  await rbac.createNamespacedRoleBinding({
    namespace: NS,
    body: {
      metadata: { name: 'rbac-lease' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'rbac-lease' },
      subjects: [{ kind: 'ServiceAccount', name: 'granted', namespace: NS }],
    },
  });
  const granted = await cluster.serviceAccountKubeconfig(NS, 'granted');
  const denied = await cluster.serviceAccountKubeconfig(NS, 'denied');

  const nobody = candidate(t, 'rbac', 'denied', { kubeconfig: denied.kubeconfig });
  await until('the refusal to be reported', () =>
    nobody.logs.find((l) => l.startsWith('error') && l.includes('forbidden')),
  );
  const ok = candidate(t, 'rbac', 'granted', { kubeconfig: granted.kubeconfig });
  await until('granted leads', () => (leading(ok) ? true : undefined));
  await renewedSince('rbac', (await readLease('rbac')).spec?.renewTime);
  assert.equal((await readLease('rbac')).spec?.holderIdentity, 'granted');

  // The one without rights kept trying, logged the cause once (not every retry), and never led.
  await until('more failed attempts', () => (nobody.elector.stats().failures >= 5 ? true : undefined));
  assert.equal(nobody.started.length, 0);
  assert.equal(nobody.elector.isLeader(), false);
  const reports = nobody.logs.filter((l) => l.startsWith('error'));
  assert.equal(reports.length, 1, reports.join('\n'));
  assert.match(reports[0] as string, /403/);
  assert.match(reports[0] as string, /leases\.coordination\.k8s\.io "rbac" in namespace leader-test/);
});
