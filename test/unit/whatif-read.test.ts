import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiException } from '@kubernetes/client-node';
import { type ListSource, listInto, readSnapshotFrom } from '../../src/whatif/read-cluster.ts';
import { SnapshotCollector, SnapshotError } from '../../src/whatif/snapshot.ts';

/** A list served in pages of `limit`, as the API server pages it; records each request's limit and token. */
function pagedSource(kind: string, count: number, requests: { limit: number; token?: string }[]): ListSource {
  return {
    kind,
    apiVersion: 'v1',
    resource: `${kind.toLowerCase()}s`,
    async fetch(limit, token) {
      requests.push({ limit, ...(token ? { token } : {}) });
      const start = token ? Number(token) : 0;
      const items = Array.from({ length: Math.min(limit, count - start) }, (_, i) => ({
        metadata: { name: `${kind.toLowerCase()}-${start + i}`, uid: 'u', managedFields: [] },
      }));
      const next = start + limit;
      return { items, ...(next < count ? { continueToken: String(next) } : {}) };
    },
  };
}

const apiError = (code: number) => new ApiException(code, 'failed', { kind: 'Status', code }, {});

test('listInto reads every page, asking for the next with the token of the last', async () => {
  const requests: { limit: number; token?: string }[] = [];
  const c = new SnapshotCollector();
  assert.equal(await listInto(pagedSource('Node', 5_000, requests), c, 500), true);
  const snapshot = c.finish();
  assert.equal(snapshot.nodes.length, 5_000);
  assert.equal(snapshot.nodes[4_999]?.metadata.name, 'node-4999');
  assert.equal(snapshot.nodes[0]?.kind, 'Node', 'items get the kind that list answers leave out');
  assert.equal(requests.length, 10);
  assert.deepEqual(requests.slice(0, 2), [{ limit: 500 }, { limit: 500, token: '500' }]);
});

test('listInto: an empty list is one request; an exact multiple of the page ends on the empty token', async () => {
  for (const [count, pages] of [
    [0, 1],
    [1_000, 2],
  ] as const) {
    const requests: { limit: number; token?: string }[] = [];
    const c = new SnapshotCollector();
    await listInto(pagedSource('Namespace', count, requests), c, 500);
    assert.equal(c.finish().namespaces.length, count);
    assert.equal(requests.length, pages, `${count} objects`);
  }
});

test('listInto: an optional CRD that is not served reads as none; a required one fails', async () => {
  const missing = (optional: boolean): ListSource => ({
    kind: 'UpdatePolicy',
    apiVersion: 'nuo.dev/v1alpha1',
    resource: 'updatepolicies',
    optional,
    fetch: () => Promise.reject(apiError(404)),
  });
  assert.equal(await listInto(missing(true), new SnapshotCollector()), false);
  await assert.rejects(
    listInto(missing(false), new SnapshotCollector()),
    (e: ApiException<unknown>) => e.code === 404,
  );
  const { notes } = await readSnapshotFrom([missing(true), pagedSource('Node', 1, [])]);
  assert.deepEqual(notes, ['not served by this cluster (CRD not installed): updatepolicies']);
});

test('listInto: a list whose version expired mid-way (410) says to run again', async () => {
  const source = pagedSource('Pod', 2_000, []);
  const expiring: ListSource = {
    ...source,
    fetch: (limit, token) => (token === '1000' ? Promise.reject(apiError(410)) : source.fetch(limit, token)),
  };
  await assert.rejects(
    listInto(expiring, new SnapshotCollector(), 500),
    (e: Error) =>
      e instanceof SnapshotError &&
      /listing pods took longer .*410 Gone after 2 pages of 500\): run again/.test(e.message),
  );
});

test('readSnapshotFrom names the page and item of an object it cannot keep', async () => {
  const bad: ListSource = {
    kind: 'Pod',
    apiVersion: 'v1',
    resource: 'pods',
    fetch: async () => ({ items: [{ metadata: { name: 'p', namespace: 'n' }, spec: {} }] }),
  };
  await assert.rejects(readSnapshotFrom([bad]), /pods page 1 item 1 \(Pod p\): spec\.containers is missing/);
});
