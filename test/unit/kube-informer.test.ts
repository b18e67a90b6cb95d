/**
 * The informer's cache logic without a server: the list is a function of the test's, and the watch
 * points at a closed port, so every watch fails and the informer backs off and relists — which is the
 * path that must turn snapshots into add/update/delete events. The watch paths (events, 410, watchdog,
 * API restarts) are tested against the real control plane in test/integration/kube-informer.test.ts.
 */
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { ApiException, KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import {
  compareResourceVersions,
  type InformerEventType,
  type InformerListOptions,
  type InformerListPage,
  objectKey,
  ResilientInformer,
} from '../../src/kube/informer.ts';
import { pollUntil } from '../../src/util/poll.ts';

function unreachableKubeconfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: 'http://127.0.0.1:1' }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kc;
}

const obj = (name: string, rv: string, namespace?: string): KubernetesObject => ({
  metadata: { name, resourceVersion: rv, ...(namespace ? { namespace } : {}) },
});

/** A list function serving `state.items` at `state.rv`, `pageSize` at a time. */
function fakeList(state: { items: KubernetesObject[]; rv: string }) {
  const calls: InformerListOptions[] = [];
  const list = async (opts: InformerListOptions): Promise<InformerListPage<KubernetesObject>> => {
    calls.push(opts);
    const start = opts._continue ? Number(opts._continue) : 0;
    const limit = opts.limit ?? 500;
    const items = state.items.slice(start, start + limit).map((o) => structuredClone(o));
    const next = start + limit < state.items.length ? String(start + limit) : undefined;
    return {
      apiVersion: 'v1',
      kind: 'ThingList',
      metadata: { resourceVersion: state.rv, ...(next ? { _continue: next } : {}) },
      items,
    };
  };
  return { list, calls };
}

function informerOver(
  t: TestContext,
  list: (opts: InformerListOptions) => Promise<InformerListPage<KubernetesObject>>,
) {
  const informer = new ResilientInformer<KubernetesObject>({
    kubeconfig: unreachableKubeconfig(),
    path: '/api/v1/things',
    list,
    labelSelector: 'app=x',
    pageSize: 2,
    backoff: { initialMs: 5, maxMs: 20 },
  });
  t.after(() => informer.stop());
  return informer;
}

test('compareResourceVersions compares decimal strings as integers, anything else not at all', () => {
  assert.equal(compareResourceVersions('9', '10'), -1);
  assert.equal(
    compareResourceVersions('123456789012345678901234567890', '123456789012345678901234567889'),
    1,
  );
  assert.equal(compareResourceVersions('42', '42'), 0);
  assert.equal(compareResourceVersions('abc', '10'), undefined);
  assert.equal(compareResourceVersions(undefined, '10'), undefined);
  assert.equal(compareResourceVersions('', '10'), undefined);
});

test('objectKey is namespace/name or name', () => {
  assert.equal(objectKey(obj('n', '1')), 'n');
  assert.equal(objectKey(obj('p', '1', 'ns')), 'ns/p');
});

test('the first list is paginated and cached; start resolves once it is in', async (t) => {
  const state = { rv: '100', items: [obj('a', '10'), obj('b', '11'), obj('c', '12'), obj('d', '13', 'ns')] };
  const { list, calls } = fakeList(state);
  const informer = informerOver(t, list);
  const seen: string[] = [];
  informer.onEvent((type, o) => seen.push(`${type} ${objectKey(o)}`));
  assert.equal(informer.synced, false);
  await informer.start();
  assert.equal(informer.synced, true);
  assert.deepEqual(
    calls.slice(0, 2).map((c) => [c.limit, c._continue, c.labelSelector]),
    [
      [2, undefined, 'app=x'],
      [2, '2', 'app=x'],
    ],
  );
  assert.deepEqual(seen, ['add a', 'add b', 'add c', 'add ns/d']);
  assert.equal(informer.list().length, 4);
  assert.equal(informer.get('d', 'ns')?.metadata?.resourceVersion, '13');
  assert.equal(informer.get('d'), undefined);
  assert.equal(informer.get('a')?.kind, 'Thing', 'kind filled in from the list kind');
  assert.equal(informer.get('a')?.apiVersion, 'v1');
  assert.equal(informer.stats().resourceVersion, '100');
  await informer.stop();
});

test('a relist emits the differences: adds, updates and the deletions that happened meanwhile', async (t) => {
  const state = { rv: '100', items: [obj('keep', '10'), obj('change', '11'), obj('gone', '12')] };
  const { list } = fakeList(state);
  const informer = informerOver(t, list);
  await informer.start();
  const seen: Array<[InformerEventType, string, string | undefined]> = [];
  informer.onEvent((type, o, old) => seen.push([type, objectKey(o), old?.metadata?.resourceVersion]));
  // Every watch fails (closed port), so the informer keeps relisting after its backoff.
  state.items = [obj('keep', '10'), obj('change', '150'), obj('new', '151')];
  state.rv = '160';
  await pollUntil('the relist events', () => (seen.length >= 3 ? true : undefined), { timeoutMs: 10_000 });
  assert.deepEqual(
    seen.sort((x, y) => x[1].localeCompare(y[1])),
    [
      ['update', 'change', '11'],
      ['delete', 'gone', undefined],
      ['add', 'new', undefined],
    ],
  );
  assert.deepEqual(informer.list().map(objectKey).sort(), ['change', 'keep', 'new']);
  const stats = informer.stats();
  assert.ok(stats.relists >= 1 && stats.errors >= 1, JSON.stringify(stats));
  await informer.stop();
});

test('upsertFromWrite takes only newer versions, and a relist does not roll them back', async (t) => {
  const state = { rv: '100', items: [obj('a', '50')] };
  const { list } = fakeList(state);
  const informer = informerOver(t, list);
  await informer.start();
  const seen: string[] = [];
  informer.onEvent((type, o) => seen.push(`${type} ${objectKey(o)}@${o.metadata?.resourceVersion}`));

  assert.equal(informer.upsertFromWrite(obj('a', '120')), true);
  assert.equal(informer.upsertFromWrite(obj('a', '120')), false, 'same version');
  assert.equal(informer.upsertFromWrite(obj('a', '99')), false, 'older version');
  assert.equal(informer.upsertFromWrite(obj('created', '121')), true);
  assert.equal(informer.get('a')?.metadata?.resourceVersion, '120');
  assert.deepEqual(seen, ['update a@120', 'add created@121']);

  // A relist whose snapshot (rv 110) predates both writes keeps them and emits nothing for them.
  const listsBefore = informer.stats().relists;
  state.rv = '110';
  await pollUntil('another relist', () => (informer.stats().relists > listsBefore + 1 ? true : undefined), {
    timeoutMs: 10_000,
  });
  assert.equal(informer.get('a')?.metadata?.resourceVersion, '120');
  assert.ok(informer.get('created'), 'written after the snapshot, so not deleted by it');
  assert.deepEqual(seen, ['update a@120', 'add created@121']);

  // A snapshot taken after the writes is authoritative again.
  state.rv = '200';
  await pollUntil('the deletion', () => (informer.get('created') ? undefined : true), { timeoutMs: 10_000 });
  assert.deepEqual(seen.at(-1), 'delete created@121');
  await informer.stop();
});

test('an expired continue token restarts the list from the beginning', async (t) => {
  const state = { rv: '100', items: [obj('a', '1'), obj('b', '2'), obj('c', '3')] };
  const { list: inner } = fakeList(state);
  let expired = false;
  const list = async (opts: InformerListOptions) => {
    if (opts._continue && !expired) {
      expired = true;
      throw new ApiException(410, 'Expired', { reason: 'Expired', code: 410 }, {});
    }
    return inner(opts);
  };
  const informer = informerOver(t, list);
  await informer.start();
  assert.ok(expired);
  assert.deepEqual(informer.list().map(objectKey).sort(), ['a', 'b', 'c']);
  assert.equal(informer.stats().relists, 0, 'one list, restarted within');
  await informer.stop();
});

test('a throwing handler is logged and does not stop the others', async (t) => {
  const state = { rv: '1', items: [obj('a', '1')] };
  const { list } = fakeList(state);
  const logs: string[] = [];
  const informer = new ResilientInformer<KubernetesObject>({
    kubeconfig: unreachableKubeconfig(),
    path: '/api/v1/things',
    list,
    backoff: { initialMs: 5, maxMs: 20 },
    log: (level, msg) => logs.push(`${level}: ${msg}`),
  });
  t.after(() => informer.stop());
  informer.onEvent(() => {
    throw new Error('handler bug');
  });
  const seen: string[] = [];
  const off = informer.onEvent((type, o) => seen.push(`${type} ${objectKey(o)}`));
  await informer.start();
  assert.deepEqual(seen, ['add a']);
  assert.ok(logs.some((l) => l.startsWith('error') && l.includes('handler bug')));
  off();
  informer.upsertFromWrite(obj('b', '2'));
  assert.deepEqual(seen, ['add a'], 'unsubscribed');
  await informer.stop();
});

test('start keeps retrying a failing first list, and rejects if stopped first', async (t) => {
  let calls = 0;
  const informer = informerOver(t, async () => {
    calls++;
    throw new Error('connection refused');
  });
  const starting = informer.start();
  assert.equal(informer.start(), starting, 'idempotent');
  await pollUntil('a few list attempts', () => (calls >= 3 ? true : undefined));
  await informer.stop();
  await assert.rejects(starting, /stopped before it synced/);
  assert.equal(informer.synced, false);
});

test('a list page that never answers counts as a failure and is retried', async (t) => {
  const state = { rv: '7', items: [obj('a', '1')] };
  const { list: inner } = fakeList(state);
  let calls = 0;
  const logs: string[] = [];
  const informer = new ResilientInformer<KubernetesObject>({
    kubeconfig: unreachableKubeconfig(),
    path: '/api/v1/things',
    list: (opts) => (++calls === 1 ? new Promise(() => {}) : inner(opts)),
    listTimeoutMs: 50,
    backoff: { initialMs: 5, maxMs: 20 },
    log: (level, msg) => logs.push(`${level}: ${msg}`),
  });
  t.after(() => informer.stop());
  await informer.start();
  assert.ok(calls >= 2);
  assert.deepEqual(informer.list().map(objectKey), ['a']);
  assert.ok(logs.some((l) => l.startsWith('warn') && l.includes('did not answer within 50 ms')));
});

test('stop ends a hanging list at once', async () => {
  const informer = informerOverNothing();
  void informer.start();
  await new Promise((r) => setTimeout(r, 10));
  const stopped = await Promise.race([
    informer.stop().then(() => 'stopped'),
    new Promise((r) => setTimeout(() => r('still running'), 5_000).unref()),
  ]);
  assert.equal(stopped, 'stopped');
});

function informerOverNothing() {
  return new ResilientInformer<KubernetesObject>({
    kubeconfig: unreachableKubeconfig(),
    path: '/api/v1/things',
    list: () => new Promise(() => {}),
  });
}

test('options are validated', () => {
  const base = {
    kubeconfig: unreachableKubeconfig(),
    path: '/api/v1/nodes',
    list: fakeList({ rv: '1', items: [] }).list,
  };
  assert.doesNotThrow(() => new ResilientInformer(base));
  const bad: Array<[Record<string, unknown>, RegExp]> = [
    [{ path: 'api/v1/nodes' }, /path/],
    [{ path: '/api/v1/nodes?watch=1' }, /path/],
    [{ watchdogMs: 0 }, /watchdogMs/],
    [{ watchdogMs: Number.POSITIVE_INFINITY }, /watchdogMs/],
    [{ backoff: { initialMs: 0, maxMs: 10 } }, /initialMs/],
    [{ backoff: { initialMs: 100, maxMs: 10 } }, /maxMs/],
    [{ watchTimeoutSeconds: { min: 10, max: 5 } }, /watchTimeoutSeconds/],
    [{ pageSize: 0 }, /pageSize/],
    [{ listTimeoutMs: 0 }, /listTimeoutMs/],
    [{ kubeconfig: new KubeConfig() }, /current cluster/],
  ];
  for (const [override, message] of bad) {
    assert.throws(
      () => new ResilientInformer({ ...base, ...override } as typeof base),
      message,
      JSON.stringify(override),
    );
  }
});
