/**
 * ResilientInformer against the real control plane: events, the read-your-writes cache, relisting after
 * 410 Gone, the watchdog on a stream that went silent, a network partition during which objects change
 * and disappear, and a kube-apiserver restart.
 *
 * Partitions are made with a TCP proxy between the informer and the API server (the test's, below):
 * "blocked" resets every connection, "frozen" keeps connections open but stops forwarding (a half-open
 * connection, which no socket error reveals). The API server itself stays up, so the test can change
 * objects while the informer cannot see them.
 */
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';
import { type TestContext, test } from 'node:test';
import { CoreV1Api, type KubeConfig, type V1Node } from '@kubernetes/client-node';
import { type InformerOptions, ResilientInformer } from '../../src/kube/informer.ts';
import { mergePatch } from '../../src/kube/patch.ts';
import { PooledKubeConfig } from '../../src/kube/pooled-kubeconfig.ts';
import { pollUntil } from '../../src/util/poll.ts';
import { useCluster } from './support.ts';

const cluster = await useCluster({ nodes: 1 });
const core = cluster.kubeconfig.makeApiClient(CoreV1Api);

/** A plain Node object (no kubelet behind it), labelled into a test's group. */
async function createNode(name: string, group: string): Promise<V1Node> {
  return core.createNode({ body: { metadata: { name, labels: { 'nuo-test': group } } } });
}

interface Recorded {
  type: string;
  name: string;
  rv: string | undefined;
  oldRv: string | undefined;
  obj: V1Node;
}

/** Records an informer's events; `until` waits (event-driven, with a deadline) for a condition on them. */
function recorder(informer: ResilientInformer<V1Node>) {
  const events: Recorded[] = [];
  let wake: () => void = () => {};
  informer.onEvent((type, obj, old) => {
    events.push({
      type,
      name: obj.metadata?.name ?? '',
      rv: obj.metadata?.resourceVersion,
      oldRv: old?.metadata?.resourceVersion,
      obj,
    });
    wake();
  });
  const until = async (what: string, check: (events: Recorded[]) => boolean, timeoutMs = 60_000) => {
    const deadline = Date.now() + timeoutMs;
    while (!check(events)) {
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new Error(
          `timed out waiting for ${what}; events: ${events.map((e) => `${e.type} ${e.name}@${e.rv}`).join(', ')}; stats: ${JSON.stringify(informer.stats())}`,
        );
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  };
  const has = (type: string, name: string) => (es: Recorded[]) =>
    es.some((e) => e.type === type && e.name === name);
  return { events, until, has };
}

function nodeInformer(
  t: TestContext,
  options: Partial<InformerOptions<V1Node>> & { group: string },
): { informer: ResilientInformer<V1Node>; logs: string[] } {
  const logs: string[] = [];
  const kubeconfig = options.kubeconfig ?? cluster.kubeconfig;
  const api = kubeconfig.makeApiClient(CoreV1Api);
  const informer = new ResilientInformer<V1Node>({
    kubeconfig,
    path: '/api/v1/nodes',
    list: (opts) => api.listNode(opts),
    labelSelector: `nuo-test=${options.group}`,
    backoff: { initialMs: 100, maxMs: 1_000 },
    log: (level, msg) => logs.push(`${level}: ${msg}`),
    ...options,
  });
  t.after(() => informer.stop());
  return { informer, logs };
}

const names = (informer: ResilientInformer<V1Node>) =>
  informer
    .list()
    .map((n) => n.metadata?.name)
    .sort();

/** A TCP proxy to the API server whose link the test can cut ("blocked") or silence ("frozen"). */
class Link {
  mode: 'open' | 'blocked' | 'frozen' = 'open';
  readonly #pairs = new Set<{ client: Socket; upstream?: Socket }>();
  readonly #server: Server;
  readonly #target: URL;
  #port = 0;

  private constructor(target: URL) {
    this.#target = target;
    this.#server = createServer((client) => this.#accept(client));
  }

  static async open(t: TestContext): Promise<Link> {
    const link = new Link(new URL(cluster.server));
    await new Promise<void>((resolve) => link.#server.listen(0, '127.0.0.1', resolve));
    link.#port = (link.#server.address() as { port: number }).port;
    t.after(() => link.close());
    return link;
  }

  /** The admin kubeconfig, pointed at this proxy. */
  /** The admin kubeconfig, pointed at this proxy (pooled, as nuo's own: one connection for everything). */
  kubeconfig(): KubeConfig {
    const kc = new PooledKubeConfig();
    kc.loadFromOptions({
      clusters: cluster.kubeconfig.clusters.map((c) => ({ ...c, server: `https://127.0.0.1:${this.#port}` })),
      users: cluster.kubeconfig.users,
      contexts: cluster.kubeconfig.contexts,
      currentContext: cluster.kubeconfig.currentContext,
    });
    return kc;
  }

  /** Resets every connection and refuses new ones. */
  block(): void {
    this.mode = 'blocked';
    this.#destroyAll();
  }

  /** Stops forwarding on every connection, old and new, without closing any. */
  freeze(): void {
    this.mode = 'frozen';
    for (const { client, upstream } of this.#pairs) {
      client.unpipe();
      upstream?.unpipe();
      client.pause();
      upstream?.pause();
    }
  }

  /** Forwards again; connections that were frozen are reset, as after a network failure. */
  restore(): void {
    if (this.mode === 'frozen') this.#destroyAll();
    this.mode = 'open';
  }

  close(): void {
    this.#destroyAll();
    this.#server.close();
  }

  /** Connections accepted so far (a client that opens a new connection shows here, even when frozen). */
  accepted = 0;

  #accept(client: Socket): void {
    this.accepted++;
    if (this.mode === 'blocked') {
      client.destroy();
      return;
    }
    const pair: { client: Socket; upstream?: Socket } = { client };
    this.#pairs.add(pair);
    const drop = () => {
      this.#pairs.delete(pair);
      client.destroy();
      pair.upstream?.destroy();
    };
    client.on('error', drop).on('close', drop);
    if (this.mode === 'frozen') {
      client.pause();
      return;
    }
    const upstream = tcpConnect(Number(this.#target.port), this.#target.hostname);
    pair.upstream = upstream;
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream);
    upstream.pipe(client);
  }

  #destroyAll(): void {
    for (const { client, upstream } of this.#pairs) {
      client.destroy();
      upstream?.destroy();
    }
    this.#pairs.clear();
  }
}

test('sees adds, updates and deletes; watched objects have the listed shape; read your writes', async (t) => {
  await createNode('basic-0', 'basic');
  const { informer } = nodeInformer(t, { group: 'basic' });
  const rec = recorder(informer);
  await informer.start();
  assert.equal(informer.synced, true);
  assert.deepEqual(names(informer), ['basic-0'], 'only the selected nodes (not the KWOK node)');
  assert.ok(informer.get('basic-0')?.metadata?.creationTimestamp instanceof Date);

  await createNode('basic-1', 'basic');
  await rec.until('add basic-1', rec.has('add', 'basic-1'));
  const watched = informer.get('basic-1');
  assert.equal(watched?.kind, 'Node');
  assert.ok(watched?.metadata?.creationTimestamp instanceof Date, 'watch objects decoded like listed ones');

  await core.patchNode({ name: 'basic-1', body: { metadata: { labels: { color: 'blue' } } } }, mergePatch);
  await rec.until('the blue update', (es) =>
    es.some((e) => e.type === 'update' && e.obj.metadata?.labels?.color === 'blue'),
  );
  const update = rec.events.find((e) => e.type === 'update' && e.obj.metadata?.labels?.color === 'blue');
  assert.ok(update?.oldRv && update.oldRv !== update.rv, 'update carries the previous version');

  // Whether the write's response or its watch event comes first, the cache holds the written version
  // as soon as upsertFromWrite returns.
  const written = await core.patchNode(
    { name: 'basic-0', body: { metadata: { labels: { color: 'red' } } } },
    mergePatch,
  );
  informer.upsertFromWrite(written);
  assert.equal(informer.get('basic-0')?.metadata?.resourceVersion, written.metadata?.resourceVersion);
  assert.equal(informer.upsertFromWrite(written), false, 'the same version again is not newer');

  await core.deleteNode({ name: 'basic-1' });
  await rec.until('delete basic-1', rec.has('delete', 'basic-1'));
  assert.equal(informer.get('basic-1'), undefined);
  // Events arrive in resourceVersion order, so the watch has passed basic-0's write by now.
  const redUpdates = rec.events.filter(
    (e) => e.name === 'basic-0' && e.rv === written.metadata?.resourceVersion,
  );
  assert.equal(redUpdates.length, 1, 'the write was emitted once');
  assert.deepEqual(names(informer), ['basic-0']);
  await core.deleteNode({ name: 'basic-0' });
});

test('a transform applies to listed, watched and written objects alike', async (t) => {
  await createNode('slim-0', 'slim');
  const { informer } = nodeInformer(t, {
    group: 'slim',
    transform: (n) => {
      if (n.metadata) n.metadata.managedFields = undefined;
      return n;
    },
  });
  const rec = recorder(informer);
  await informer.start();
  assert.equal(informer.get('slim-0')?.metadata?.managedFields, undefined, 'listed');
  await createNode('slim-1', 'slim');
  await rec.until('add slim-1', rec.has('add', 'slim-1'));
  assert.equal(informer.get('slim-1')?.metadata?.managedFields, undefined, 'watched');
  const written = await core.patchNode(
    { name: 'slim-0', body: { metadata: { labels: { color: 'green' } } } },
    mergePatch,
  );
  assert.ok(written.metadata?.managedFields?.length, 'the API server does send managedFields');
  informer.upsertFromWrite(written);
  assert.equal(informer.get('slim-0')?.metadata?.labels?.color, 'green');
  assert.equal(informer.get('slim-0')?.metadata?.managedFields, undefined, 'written');
});

test('read your writes: a write is cached at once, and its watch event is not emitted again', async (t) => {
  const link = await Link.open(t);
  await createNode('ryw-0', 'ryw');
  const { informer } = nodeInformer(t, { group: 'ryw', kubeconfig: link.kubeconfig() });
  const rec = recorder(informer);
  await informer.start();
  // The informer's link is silent, so only upsertFromWrite can bring the write into the cache.
  link.freeze();
  const written = await core.patchNode(
    { name: 'ryw-0', body: { metadata: { labels: { color: 'red' } } } },
    mergePatch,
  );
  assert.equal(informer.upsertFromWrite(written), true);
  assert.equal(informer.get('ryw-0')?.metadata?.labels?.color, 'red');
  assert.equal(informer.upsertFromWrite(written), false, 'the same version again is not newer');
  const stale = await core.readNode({ name: 'ryw-0' });
  stale.metadata = { ...stale.metadata, resourceVersion: '1' };
  assert.equal(informer.upsertFromWrite(stale), false, 'an older version is refused');
  link.restore();
  await createNode('ryw-1', 'ryw');
  await rec.until('add ryw-1', rec.has('add', 'ryw-1'));
  const forWrite = rec.events.filter((e) => e.name === 'ryw-0' && e.rv === written.metadata?.resourceVersion);
  assert.equal(forWrite.length, 1, 'emitted by upsertFromWrite only, not again by the watch or the relist');
  for (const name of ['ryw-0', 'ryw-1']) await core.deleteNode({ name });
});

test('a watch answered with 410 Gone relists', async (t) => {
  // A restarted API server's watch cache starts at the current resourceVersion, so a watch from one
  // older than that (here: the first list claims 1) is answered with 410 Gone.
  await cluster.restart('kube-apiserver');
  // The first list claims a resourceVersion older than the API server's watch window.
  let first = true;
  const { informer, logs } = nodeInformer(t, {
    group: 'gone',
    list: async (opts) => {
      const page = await core.listNode(opts);
      if (first && page.metadata) {
        first = false;
        page.metadata.resourceVersion = '1';
      }
      return page;
    },
  });
  const rec = recorder(informer);
  await informer.start();
  await pollUntil('a relist after 410', () => (informer.stats().relists >= 1 ? true : undefined));
  assert.ok(
    logs.some((l) => l.includes('410')),
    `logged the 410:\n${logs.join('\n')}`,
  );
  assert.equal(informer.stats().errors, 0, 'a 410 is not an error: no backoff');
  await createNode('gone-0', 'gone');
  await rec.until('add gone-0', rec.has('add', 'gone-0'));
  await core.deleteNode({ name: 'gone-0' });
});

test('the watchdog re-watches when the stream goes silent without breaking, on a new connection', async (t) => {
  const link = await Link.open(t);
  const { informer } = nodeInformer(t, { group: 'silent', kubeconfig: link.kubeconfig(), watchdogMs: 1_500 });
  const rec = recorder(informer);
  await informer.start();
  await createNode('silent-0', 'silent');
  await rec.until('add silent-0', rec.has('add', 'silent-0'));
  const before = informer.stats();

  // Half-open connection: nothing arrives, nothing fails — for the watch and for every request on the
  // same pooled connection.
  link.freeze();
  await createNode('silent-1', 'silent');
  await pollUntil('the watchdog', () =>
    informer.stats().watchdogFires > before.watchdogFires ? true : undefined,
  );
  assert.equal(informer.get('silent-1'), undefined, 'the frozen watch delivered nothing');
  // The probe got no answer either, so the informer dropped the pooled connection and opened a new one
  // by itself (without the reset, every request would keep riding the dead one).
  const accepted = link.accepted;
  await pollUntil('a new connection while still frozen', () => (link.accepted > accepted ? true : undefined));
  link.restore();
  await rec.until('add silent-1', rec.has('add', 'silent-1'));
  for (const name of ['silent-0', 'silent-1']) await core.deleteNode({ name });
});

test('in a quiet collection the watchdog re-watches without relisting', async (t) => {
  await createNode('quiet-0', 'quiet');
  const { informer } = nodeInformer(t, { group: 'quiet', watchdogMs: 1_000 });
  await informer.start();
  await pollUntil('two re-watches after the watchdog', () =>
    informer.stats().watchdogFires >= 2 && informer.stats().watchRestarts >= 2 ? true : undefined,
  );
  assert.equal(informer.stats().relists, 0, 'silence alone never costs a relist');
  await core.deleteNode({ name: 'quiet-0' });
});

test('after a partition the cache reflects what changed meanwhile, deletions included', async (t) => {
  const link = await Link.open(t);
  for (const name of ['part-0', 'part-1', 'part-2']) await createNode(name, 'part');
  const { informer } = nodeInformer(t, { group: 'part', kubeconfig: link.kubeconfig() });
  const rec = recorder(informer);
  await informer.start();
  assert.deepEqual(names(informer), ['part-0', 'part-1', 'part-2']);

  link.block();
  await core.deleteNode({ name: 'part-0' });
  await core.patchNode({ name: 'part-1', body: { metadata: { labels: { during: 'outage' } } } }, mergePatch);
  await createNode('part-3', 'part');
  // Deleted and re-created under the same name: a different object, which the cache must not confuse.
  await core.deleteNode({ name: 'part-2' });
  const recreated = await createNode('part-2', 'part');
  assert.ok(informer.get('part-0'), 'the informer has not seen the deletion yet');

  link.restore();
  await rec.until('the changes made during the partition', (es) =>
    ['delete part-0', 'update part-1', 'add part-3'].every((want) =>
      es.some((e) => `${e.type} ${e.name}` === want),
    ),
  );
  await rec.until(
    'part-2 at its new version',
    () => informer.get('part-2')?.metadata?.uid === recreated.metadata?.uid,
  );
  assert.deepEqual(names(informer), ['part-1', 'part-2', 'part-3']);
  assert.equal(informer.get('part-1')?.metadata?.labels?.during, 'outage');
  assert.ok(informer.stats().errors >= 1, 'the partition was noticed');

  // And it keeps watching afterwards.
  await core.deleteNode({ name: 'part-3' });
  await rec.until('delete part-3', rec.has('delete', 'part-3'));
  for (const name of ['part-1', 'part-2']) await core.deleteNode({ name });
});

test('survives a kube-apiserver restart and reflects changes made afterwards', async (t) => {
  for (const name of ['restart-0', 'restart-1']) await createNode(name, 'restart');
  const { informer } = nodeInformer(t, { group: 'restart' });
  const rec = recorder(informer);
  await informer.start();
  const before = informer.stats();

  await cluster.restart('kube-apiserver');
  // Straight after the restart, while the informer may still be backing off, and again once it is back.
  await core.deleteNode({ name: 'restart-0' });
  await createNode('restart-2', 'restart');
  await rec.until(
    'the deletion and the addition',
    (es) => rec.has('delete', 'restart-0')(es) && rec.has('add', 'restart-2')(es),
  );
  await core.patchNode(
    { name: 'restart-1', body: { metadata: { labels: { after: 'restart' } } } },
    mergePatch,
  );
  await rec.until('the update after the restart', (es) =>
    es.some(
      (e) => e.type === 'update' && e.name === 'restart-1' && e.obj.metadata?.labels?.after === 'restart',
    ),
  );
  assert.deepEqual(names(informer), ['restart-1', 'restart-2']);
  const after = informer.stats();
  assert.ok(after.watchRestarts > before.watchRestarts, 'the watch was re-established');
  for (const name of ['restart-1', 'restart-2']) await core.deleteNode({ name });
});
