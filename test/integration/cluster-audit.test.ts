/**
 * Harness options used by the footprint benchmark: the API server's audit log records a named user's
 * requests (and only that user's), and the KWOK nodes' Lease duration is configurable.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CoordinationV1Api, CoreV1Api } from '@kubernetes/client-node';
import { readAuditLog } from '../../src/sim/cluster/audit.ts';
import { pollUntil } from '../../src/util/poll.ts';
import { statusOf, useCluster } from './support.ts';

const PROBE = 'system:serviceaccount:default:audit-probe';
const cluster = await useCluster({ nodes: 1, audit: { users: [PROBE] }, nodeLeaseDurationSeconds: 60 });

test("the audit log records a named user's requests, and nobody else's", async () => {
  assert.ok(cluster.auditLogPath, 'the cluster has an audit log');
  const probe = await cluster.serviceAccountKubeconfig('default', 'audit-probe');
  const asProbe = probe.kubeconfig.makeApiClient(CoreV1Api);
  const asAdmin = cluster.kubeconfig.makeApiClient(CoreV1Api);
  // Refused (no RBAC grants it), and audited all the same.
  assert.equal(await statusOf(asProbe.listNamespacedPod({ namespace: 'kube-system' })), 403);
  await asAdmin.listNamespacedPod({ namespace: 'kube-public' });

  // The log is written in batches: wait for the probe's request to show up.
  const events = await pollUntil(
    "the probe's request in the audit log",
    async () => {
      const all = await readAuditLog(cluster.auditLogPath ?? '');
      return all.some((e) => e.user.username === PROBE && e.verb === 'list') ? all : undefined;
    },
    { timeoutMs: 15_000, intervalMs: 250 },
  );
  const list = events.find((e) => e.user.username === PROBE && e.verb === 'list');
  assert.equal(list?.objectRef?.resource, 'pods');
  assert.equal(list?.objectRef?.namespace, 'kube-system');
  assert.equal(list?.responseStatus?.code, 403);
  assert.ok(!Number.isNaN(Date.parse(list?.requestReceivedTimestamp ?? '')), 'timestamped');
  assert.deepEqual(
    [...new Set(events.map((e) => e.user.username))],
    [PROBE],
    'only the named user is logged (not the admin, KWOK or the controllers)',
  );
  assert.equal((await readAuditLog(cluster.auditLogPath ?? '', 'someone-else')).length, 0);
});

test("KWOK nodes' Leases have the configured duration", async () => {
  const coordination = cluster.kubeconfig.makeApiClient(CoordinationV1Api);
  const [node] = (await cluster.kubeconfig.makeApiClient(CoreV1Api).listNode()).items;
  const name = node?.metadata?.name ?? '';
  const lease = await pollUntil(`the Lease of ${name}`, () =>
    coordination.readNamespacedLease({ name, namespace: 'kube-node-lease' }),
  );
  assert.equal(lease.spec?.leaseDurationSeconds, 60);
});
