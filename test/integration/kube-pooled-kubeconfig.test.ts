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
import { pollUntil } from '../../src/util/poll.ts';
import { useCluster } from './support.ts';

const cluster = await useCluster({ nodes: 1 });

/** What undici publishes on 'undici:client:connected': the socket, TLS for the API server. */
interface Connected {
  socket: { alpnProtocol?: string | false };
}

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

test('speaks HTTP/1.1 to the API server, which would accept HTTP/2 (see pooled-kubeconfig.ts)', async () => {
  const protocols: Array<string | false | undefined> = [];
  const onConnect = (message: unknown) => protocols.push((message as Connected).socket.alpnProtocol);
  const kc = new PooledKubeConfig();
  kc.loadFromFile(cluster.kubeconfigPath);
  subscribe('undici:client:connected', onConnect);
  try {
    await kc.makeApiClient(CoreV1Api).listNode();
    assert.deepEqual(protocols, ['http/1.1']);
  } finally {
    unsubscribe('undici:client:connected', onConnect);
    await kc.close();
  }
  // The same request through the library's own KubeConfig negotiates h2: the override is what refuses it.
  const plain = new KubeConfig();
  plain.loadFromFile(cluster.kubeconfigPath);
  subscribe('undici:client:connected', onConnect);
  try {
    await plain.makeApiClient(CoreV1Api).listNode();
    assert.deepEqual(protocols, ['http/1.1', 'h2']);
  } finally {
    unsubscribe('undici:client:connected', onConnect);
  }
});

test('sequential requests reuse their connections', async () => {
  const kc = new PooledKubeConfig();
  kc.loadFromFile(cluster.kubeconfigPath);
  try {
    // HTTP/1.1: a request sent as the previous response ends may find that connection not yet released
    // and open a second; from then on the two are reused.
    const connections = await connectionsFor(kc, 20);
    assert.ok(connections >= 1 && connections <= 2, `${connections} connections for 20 requests`);
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

test('a watch and requests alongside it, each in its pool, and the watch still delivers', async () => {
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
    // HTTP/1.1: the watch holds one connection, and the requests beside it reuse one or two more.
    assert.ok(connections >= 2 && connections <= 3, `${connections} connections`);
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

test('requests share a capped pool of connections; watches have their own, so they cannot starve requests', async () => {
  const kc = new PooledKubeConfig({ requestConnections: 3 });
  kc.loadFromFile(cluster.kubeconfigPath);
  const core = kc.makeApiClient(CoreV1Api);
  let connections = 0;
  const onConnect = () => connections++;
  subscribe('undici:client:connected', onConnect);
  const watches: AbortController[] = [];
  try {
    await Promise.all(Array.from({ length: 30 }, () => core.listNode()));
    assert.ok(connections >= 1 && connections <= 3, `30 requests at once used ${connections} connections`);
    // More watches than request connections, each holding its own connection, and requests still pass.
    const delivered = new Set<number>();
    for (let i = 0; i < 5; i++) {
      watches.push(
        await new Watch(kc).watch(
          '/api/v1/nodes',
          {},
          () => delivered.add(i),
          () => {},
        ),
      );
    }
    await pollUntil('each of the 5 watches to deliver the node', () =>
      delivered.size === 5 ? true : undefined,
    );
    assert.equal((await core.listNode()).items.length, 1);
    assert.ok(connections >= 6 && connections <= 8, `${connections} connections`);
  } finally {
    unsubscribe('undici:client:connected', onConnect);
    for (const w of watches) w.abort();
    await kc.close();
  }
});

test('a request connection limit below 1 is refused', () => {
  assert.throws(
    () => new PooledKubeConfig({ requestConnections: 0 }),
    /requestConnections must be a positive integer, not 0/,
  );
});

test('a separate pool has connections of its own, the same credentials, and is reset and closed with its parent', async () => {
  const kc = new PooledKubeConfig({ requestConnections: 1 });
  kc.loadFromFile(cluster.kubeconfigPath);
  const separate = kc.separatePool({ requestConnections: 1 });
  const core = kc.makeApiClient(CoreV1Api);
  const separateCore = separate.makeApiClient(CoreV1Api);
  const sockets: Array<{ destroyed: boolean }> = [];
  const onConnect = (message: unknown) =>
    sockets.push((message as { socket: { destroyed: boolean } }).socket);
  subscribe('undici:client:connected', onConnect);
  try {
    // One connection each: two pools of one, none shared (a shared one would make it 1, no cap 20).
    await Promise.all([
      ...Array.from({ length: 10 }, () => core.listNode()),
      ...Array.from({ length: 10 }, () => separateCore.listNode()),
    ]);
    assert.equal(sockets.length, 2);
    // Authenticated as the parent's user (the admin), which may read Secrets in kube-system.
    await separateCore.listNamespacedSecret({ namespace: 'kube-system' });
    assert.equal(sockets.length, 2);

    kc.resetConnections();
    await pollUntil('both pools to drop their connections with the parent reset', () =>
      sockets.every((s) => s.destroyed) ? true : undefined,
    );
    await separateCore.listNode();
    assert.equal(sockets.length, 3, 'the separate pool opened a new connection after its parent was reset');

    await kc.close();
    assert.ok(sockets[2]?.destroyed, "the separate pool's connection closed with its parent");
  } finally {
    unsubscribe('undici:client:connected', onConnect);
    await kc.close();
  }
});
