/**
 * PooledKubeConfig against the real API server: requests and watches share connections, where the
 * library's own KubeConfig opens a new TLS connection for every request. Connections are counted with
 * undici's diagnostics channel, i.e. what really happened on the wire.
 */
import assert from 'node:assert/strict';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { test } from 'node:test';
import { CoreV1Api, KubeConfig, Watch } from '@kubernetes/client-node';
import { loadKubeconfig } from '../../src/kube/config.ts';
import { PooledKubeConfig } from '../../src/kube/pooled-kubeconfig.ts';
import { useCluster } from './support.ts';

const cluster = await useCluster({ nodes: 1 });

async function connectionsFor(kc: KubeConfig, requests: number): Promise<number> {
  let connections = 0;
  const onConnect = () => connections++;
  subscribe('undici:client:connected', onConnect);
  try {
    const core = kc.makeApiClient(CoreV1Api);
    for (let i = 0; i < requests; i++) await core.listNode();
    return connections;
  } finally {
    unsubscribe('undici:client:connected', onConnect);
  }
}

test('sequential requests reuse one connection', async () => {
  const kc = new PooledKubeConfig();
  kc.loadFromFile(cluster.kubeconfigPath);
  try {
    assert.equal(await connectionsFor(kc, 20), 1);
  } finally {
    await kc.close();
  }
});

test("the library's own KubeConfig connects per request (why the pool exists)", async () => {
  const kc = new KubeConfig();
  kc.loadFromFile(cluster.kubeconfigPath);
  // If a release of @kubernetes/client-node pools by itself, this fails and the wrapper can go.
  assert.equal(await connectionsFor(kc, 5), 5);
});

test('a watch and requests alongside it share the pool, and the watch still delivers', async () => {
  const kc = new PooledKubeConfig();
  kc.loadFromFile(cluster.kubeconfigPath);
  const core = kc.makeApiClient(CoreV1Api);
  let connections = 0;
  const onConnect = () => connections++;
  subscribe('undici:client:connected', onConnect);
  let seen: (name: string) => void = () => {};
  const labelled = new Promise<string>((resolve) => {
    seen = resolve;
  });
  const watch = await new Watch(kc).watch(
    '/api/v1/nodes',
    {},
    (_type, node: { metadata?: { name?: string; labels?: Record<string, string> } }) => {
      if (node.metadata?.labels?.['nuo-test'] === 'pooled') seen(node.metadata.name ?? '');
    },
    () => {},
  );
  try {
    const [node] = (await core.listNode()).items;
    assert.ok(node?.metadata?.name);
    for (let i = 0; i < 10; i++) await core.readNode({ name: node.metadata.name });
    await core.patchNode({
      name: node.metadata.name,
      body: [{ op: 'add', path: '/metadata/labels/nuo-test', value: 'pooled' }],
    });
    assert.equal(await labelled, node.metadata.name);
    // The kube-apiserver speaks HTTP/2, so the watch and every request are streams of one connection
    // (HTTP/1.1 would need a second one, for the requests, opened once).
    assert.ok(connections >= 1 && connections <= 2, `${connections} connections`);
  } finally {
    unsubscribe('undici:client:connected', onConnect);
    watch.abort();
    await kc.close();
  }
});

test('close() ends open watches at once instead of waiting for them to time out', async () => {
  const kc = new PooledKubeConfig();
  kc.loadFromFile(cluster.kubeconfigPath);
  let ended: (err: unknown) => void = () => {};
  const done = new Promise<unknown>((resolve) => {
    ended = resolve;
  });
  await new Watch(kc).watch(
    '/api/v1/nodes',
    { timeoutSeconds: 600 },
    () => {},
    (err) => ended(err),
  );
  await kc.close();
  // The watch ended (with an error, as its connection went) — the harness's stop used to hang here.
  await done;
});

test('loadKubeconfig returns a pooled KubeConfig', () => {
  assert.ok(loadKubeconfig({ kubeconfig: cluster.kubeconfigPath }) instanceof PooledKubeConfig);
});
