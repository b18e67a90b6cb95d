import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { resolveChannel } from '../../src/plan/channel.ts';

// A real local server plays the channel: each path answers as its name says.
let server: Server;
let base = '';
const hung: import('node:http').ServerResponse[] = [];
const seen: import('node:http').IncomingHttpHeaders[] = [];
before(async () => {
  server = createServer((req, res) => {
    seen.push(req.headers);
    const path = req.url ?? '';
    if (path === '/stable') res.writeHead(302, { location: '/releases/tag/v1.2.3' }).end();
    else if (path === '/absolute')
      res.writeHead(307, { location: 'https://example.com/k3s/v1.30.1+k3s1' }).end();
    else if (path === '/nolocation') res.writeHead(302).end();
    else if (path.startsWith('/releases/')) res.writeHead(200).end('ok');
    else if (path === '/broken') res.writeHead(500).end('oops');
    else if (path === '/hang') hung.push(res);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => {
  for (const res of hung) res.destroy();
  server.close();
});

const options = { timeoutMs: 2000 };

test('a redirect names the version in its Location, relative or absolute, not followed', async () => {
  assert.equal(await resolveChannel(`${base}/stable`, options), 'v1.2.3');
  assert.equal(await resolveChannel(`${base}/absolute`, options), 'v1.30.1+k3s1');
});

test('a 2xx names it in the URL', async () => {
  assert.equal(await resolveChannel(`${base}/releases/v2.0.0`, options), 'v2.0.0');
});

test('anything else is an error naming the URL and what happened', async () => {
  await assert.rejects(resolveChannel(`${base}/broken`, options), {
    message: `channel ${base}/broken: unexpected response 500 Internal Server Error`,
  });
  await assert.rejects(resolveChannel(`${base}/nolocation`, options), /302 without a Location header/);
  await assert.rejects(resolveChannel(`${base}/hang`, { timeoutMs: 200 }), {
    message: `channel ${base}/hang: no answer within 200 ms`,
  });
  // A port nothing listens on: the server's port, once it is closed, from a second server.
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const port = (closed.address() as AddressInfo).port;
  await new Promise((resolve) => closed.close(resolve));
  await assert.rejects(
    resolveChannel(`http://127.0.0.1:${port}/stable`, options),
    new RegExp(`^Error: channel http://127\\.0\\.0\\.1:${port}/stable: connect ECONNREFUSED`),
  );
});

test("the caller's signal aborts it", async () => {
  const controller = new AbortController();
  const pending = resolveChannel(`${base}/hang`, { signal: controller.signal, timeoutMs: 5000 });
  controller.abort();
  await assert.rejects(pending, /^Error: channel .*\/hang: /);
});

test("the request carries SUC's headers: the cluster's ID and the Plan's latest version, each when known", async () => {
  seen.length = 0;
  await resolveChannel(`${base}/stable`, { ...options, clusterId: 'uid-1', latestVersion: 'v1.2.2' });
  await resolveChannel(`${base}/stable`, options);
  assert.equal(seen[0]?.['x-suc-cluster-id'], 'uid-1');
  assert.equal(seen[0]?.['x-suc-latest-version'], 'v1.2.2');
  assert.equal(seen[1]?.['x-suc-cluster-id'], undefined, 'no cluster ID known: none sent');
  assert.equal(seen[1]?.['x-suc-latest-version'], undefined, 'no version yet: none sent');
});
