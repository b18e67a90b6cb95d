/**
 * What nuo relies on in @kubernetes/client-node beyond its documented API (src/kube/client-node-internals.ts
 * lists it), exercised against the installed release and a local HTTP server: after an upgrade that
 * breaks one, the test named for it fails here.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { after, before, test } from 'node:test';
import {
  type Cluster,
  type ConfigurationOptions,
  CoreV1Api,
  type DispatcherOptions,
  HttpMethod,
  KubeConfig,
  Observable,
  RequestContext,
  type ResponseContext,
  V1Node,
  Watch,
} from '@kubernetes/client-node';
import { Agent } from 'undici';
import {
  deserializeModel,
  setWatchInactivityTimeout,
  watchFailureStatus,
} from '../../src/kube/client-node-internals.ts';

const upgrade = (what: string) =>
  `@kubernetes/client-node ${what}: nuo relies on it (src/kube/client-node-internals.ts)`;

/** The paths of the test server: what a watch or a request there gets. */
const routes: Record<string, (req: IncomingMessage, res: ServerResponse) => void> = {
  // One event, then the server ends the watch (as at its timeoutSeconds).
  '/end': (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(
      `${JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'a', resourceVersion: '5' } } })}\n`,
    );
  },
  // An ERROR event, the stream left open.
  '/error': (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.write(
      `${JSON.stringify({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired' } })}\n`,
    );
  },
  '/gone': (_req, res) => {
    res.writeHead(410, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ kind: 'Status', code: 410 }));
  },
  // Headers, then nothing: a watch with no event for as long as the client waits.
  '/silent': (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.flushHeaders();
  },
  '/api/v1/nodes': (req, res) => {
    if (new URL(req.url ?? '/', 'http://x').searchParams.get('watch') === 'true') {
      routes['/end']?.(req, res);
      return;
    }
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(
      JSON.stringify({
        kind: 'NodeList',
        apiVersion: 'v1',
        metadata: {},
        items: [{ metadata: { name: 'a' } }],
      }),
    );
  },
  // Never answers.
  '/api/v1/namespaces/hang/pods': () => {},
};

let server: Server;
let base = '';

before(async () => {
  server = createServer((req, res) => {
    const route = routes[new URL(req.url ?? '/', 'http://x').pathname];
    if (route) route(req, res);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});

after(() => {
  server.closeAllConnections();
  server.close();
});

function load<K extends KubeConfig>(kc: K): K {
  kc.loadFromOptions({
    // Plain HTTP needs skipTLSVerify in the library.
    clusters: [{ name: 'c', server: base, skipTLSVerify: true }],
    users: [{ name: 'u', token: 'secret' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kc;
}

interface Watched {
  events: Array<[string, unknown]>;
  err: unknown;
  ms: number;
}

/** One watch of `path`: its events and what `done` got, or undefined if it did not end within `ms`. */
async function watchOnce(watch: Watch, path: string, ms = 5_000): Promise<Watched | undefined> {
  const started = performance.now();
  const events: Array<[string, unknown]> = [];
  let controller: AbortController | undefined;
  const result = await new Promise<Watched | undefined>((resolve) => {
    const timer = setTimeout(() => resolve(undefined), ms);
    watch
      .watch(
        path,
        {},
        (type, obj) => events.push([type, obj]),
        (err) => {
          clearTimeout(timer);
          resolve({ events, err, ms: performance.now() - started });
        },
      )
      .then((c) => {
        controller = c;
      });
  });
  controller?.abort();
  return result;
}

test('Watch: requestTimeoutMs (private) is its inactivity timeout, and setWatchInactivityTimeout sets it', async () => {
  const kc = load(new KubeConfig());
  const fresh = new Watch(kc) as unknown as { requestTimeoutMs?: unknown };
  assert.equal(typeof fresh.requestTimeoutMs, 'number', upgrade('Watch has no requestTimeoutMs any more'));

  const short = new Watch(kc);
  setWatchInactivityTimeout(short, 200);
  const cut = await watchOnce(short, '/silent');
  assert.ok(cut, upgrade('Watch ignored requestTimeoutMs: a silent watch was not ended'));
  assert.equal(
    (cut.err as Error | undefined)?.name,
    'TimeoutError',
    upgrade('Watch ends a silent watch otherwise'),
  );

  const long = new Watch(kc);
  setWatchInactivityTimeout(long, 60_000);
  assert.equal(await watchOnce(long, '/silent', 1_000), undefined, upgrade('Watch ended a watch early'));
});

test('Watch: done(null) when the server ends the watch; ERROR events reach the callback; another status is done(err) with statusCode', async () => {
  const kc = load(new KubeConfig());
  const ended = await watchOnce(new Watch(kc), '/end');
  assert.deepEqual(
    ended?.events.map(([type]) => type),
    ['ADDED'],
  );
  assert.equal(ended?.err, null, upgrade('Watch no longer calls done(null) when the server ends a watch'));

  // The stream stays open after an ERROR event: the caller ends the watch.
  const errorEvents: Array<[string, unknown]> = [];
  const w = new Watch(kc);
  const controller = await w.watch(
    '/error',
    {},
    (type, obj) => errorEvents.push([type, obj]),
    () => {},
  );
  const deadline = Date.now() + 5_000;
  while (errorEvents.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  controller.abort();
  assert.deepEqual(
    errorEvents,
    [['ERROR', { kind: 'Status', code: 410, reason: 'Expired' }]],
    upgrade('Watch no longer passes ERROR events with their Status to the callback'),
  );

  const gone = await watchOnce(new Watch(kc), '/gone');
  assert.ok(gone?.err instanceof Error);
  assert.equal(
    watchFailureStatus(gone?.err),
    410,
    upgrade("Watch's error for a non-200 answer no longer carries statusCode"),
  );
});

test('ObjectSerializer (a deep import): deserializeModel builds model classes with Date fields; unknown types pass', () => {
  const raw = {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: 'n', creationTimestamp: '2024-05-01T10:00:00Z' },
  };
  const node = deserializeModel<V1Node>(raw, 'V1Node');
  assert.ok(node instanceof V1Node, upgrade('ObjectSerializer no longer builds V1Node'));
  assert.ok(
    node.metadata?.creationTimestamp instanceof Date,
    upgrade('ObjectSerializer keeps dates as strings'),
  );
  assert.equal(node.metadata?.creationTimestamp?.toISOString(), '2024-05-01T10:00:00.000Z');
  const custom = { apiVersion: 'nuo.dev/v1alpha1', kind: 'Plan', spec: { x: 1 } };
  assert.equal(deserializeModel(custom, 'V1alpha1Plan'), custom, 'a type the library does not know is kept');
});

/** An undici Agent that counts the requests it carries. */
class CountingAgent extends Agent {
  dispatched = 0;
  override dispatch(...args: Parameters<Agent['dispatch']>): boolean {
    this.dispatched++;
    return super.dispatch(...args);
  }
}

/** Overrides both methods as PooledKubeConfig does, recording what the library hands them. */
class RecordingKubeConfig extends KubeConfig {
  readonly options: DispatcherOptions[] = [];
  readonly urls: string[] = [];
  readonly fresh: unknown[] = [];
  readonly shared = new CountingAgent();

  override createDispatcherOptions(
    cluster: Cluster | null,
    agentOptions: Parameters<KubeConfig['createDispatcherOptions']>[1],
  ): DispatcherOptions {
    const options = super.createDispatcherOptions(cluster, agentOptions);
    this.options.push(options);
    return options;
  }

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    this.fresh.push(context.getDispatcher());
    this.urls.push(context.getUrl());
    context.setDispatcher(this.shared);
  }
}

test('KubeConfig: applySecurityAuthentication and createDispatcherOptions, as PooledKubeConfig overrides them', async (t) => {
  assert.equal(
    KubeConfig.prototype.createDispatcherOptions.length,
    2,
    upgrade('createDispatcherOptions(cluster, agentOptions) changed'),
  );
  assert.equal(
    KubeConfig.prototype.applySecurityAuthentication.length,
    1,
    upgrade('applySecurityAuthentication(context) changed'),
  );
  const kc = load(new RecordingKubeConfig());
  t.after(() => kc.shared.destroy());

  const watched = await watchOnce(new Watch(kc), '/api/v1/nodes');
  assert.deepEqual(
    watched?.events.map(([type]) => type),
    ['ADDED'],
  );
  const listed = await kc.makeApiClient(CoreV1Api).listNode();
  assert.deepEqual(
    listed.items.map((n) => n.metadata?.name),
    ['a'],
  );

  assert.equal(
    kc.options.length,
    2,
    upgrade('applySecurityAuthentication no longer calls createDispatcherOptions for each request and watch'),
  );
  assert.ok(
    kc.fresh.every((d) => d !== undefined),
    upgrade('applySecurityAuthentication no longer sets a dispatcher on the RequestContext'),
  );
  assert.deepEqual(
    kc.urls.map((u) => new URL(u).searchParams.get('watch')),
    ['true', null],
    upgrade('the Watch no longer passes its URL (watch=true) to applySecurityAuthentication'),
  );
  assert.equal(
    kc.shared.dispatched,
    2,
    upgrade('the Watch or the API clients no longer use the dispatcher applySecurityAuthentication set'),
  );
});

test('KubeConfig.createDispatcherOptions: the four transport kinds PooledKubeConfig handles', async () => {
  const kc = new KubeConfig();
  const cluster = (c: Partial<Cluster>) =>
    ({ name: 'c', server: 'https://api:6443', skipTLSVerify: false, ...c }) as Cluster;
  const kinds: Array<[string, DispatcherOptions]> = [
    ['agent', kc.createDispatcherOptions(cluster({}), { ca: 'a CA' })],
    ['proxy', kc.createDispatcherOptions(cluster({ proxyUrl: 'http://proxy:3128' }), { ca: 'a CA' })],
    ['socks', kc.createDispatcherOptions(cluster({ proxyUrl: 'socks5://proxy:1080' }), { ca: 'a CA' })],
    ['none', kc.createDispatcherOptions(cluster({}), {})],
  ];
  for (const [kind, options] of kinds)
    assert.equal(options.type, kind, upgrade(`no '${kind}' transport any more`));
  const [agent, proxy, socks] = kinds.map(([, o]) => o);
  assert.equal(
    agent?.type === 'agent' && agent.connect.ca,
    'a CA',
    upgrade("'agent' keeps its TLS in connect"),
  );
  assert.equal(
    proxy?.type === 'proxy' && proxy.requestTls.ca,
    'a CA',
    upgrade("'proxy' keeps its TLS in requestTls"),
  );
  assert.equal(
    socks?.type === 'socks' && socks.requestTls.ca,
    'a CA',
    upgrade("'socks' keeps its TLS in requestTls"),
  );

  // 'none' sets no dispatcher: the request goes through undici's global one (which offers HTTP/2).
  const bare = new KubeConfig();
  bare.loadFromOptions({
    clusters: [{ name: 'c', server: 'https://api:6443' }],
    users: [{ name: 'u', token: 't' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  const context = new RequestContext('https://api:6443/api/v1/nodes', HttpMethod.GET);
  await bare.applySecurityAuthentication(context);
  assert.equal(context.getDispatcher(), undefined, upgrade("'none' now sets a dispatcher"));
});

test('RequestContext.setSignal in a middleware aborts the request (leader.ts bounds its requests so)', async () => {
  const kc = load(new KubeConfig());
  const core = kc.makeApiClient(CoreV1Api);
  const options: ConfigurationOptions = {
    middleware: [
      {
        pre: (ctx: RequestContext) => {
          ctx.setSignal(AbortSignal.timeout(200));
          return new Observable(Promise.resolve(ctx));
        },
        post: (res: ResponseContext) => new Observable(Promise.resolve(res)),
      },
    ],
    middlewareMergeStrategy: 'append',
  };
  const started = performance.now();
  await assert.rejects(core.listNamespacedPod({ namespace: 'hang' }, options));
  assert.ok(
    performance.now() - started < 5_000,
    upgrade('the API clients no longer abort with the signal a middleware set'),
  );
});
