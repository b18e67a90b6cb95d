/**
 * PooledKubeConfig refuses HTTP/2 on every transport the library can build (the integration test checks
 * the ALPN result on the wire for the direct one).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Cluster } from '@kubernetes/client-node';
import { PooledKubeConfig, withUserAgent } from '../../src/kube/pooled-kubeconfig.ts';

const ca = { ca: 'a CA bundle' };
const cases: Array<{
  name: string;
  cluster: Partial<Cluster>;
  agent: object;
  h2Off: (o: unknown) => unknown;
}> = [
  {
    name: 'direct TLS',
    cluster: { server: 'https://api:6443' },
    agent: ca,
    h2Off: (o) => (o as { connect: { allowH2?: boolean } }).connect.allowH2,
  },
  {
    name: 'through an HTTP proxy',
    cluster: { server: 'https://api:6443', proxyUrl: 'http://proxy:3128' },
    agent: ca,
    h2Off: (o) => (o as { requestTls: { allowH2?: boolean } }).requestTls.allowH2,
  },
  {
    name: 'no TLS settings of its own (the library would fall back to the h2-offering global dispatcher)',
    cluster: { server: 'https://api:6443' },
    agent: {},
    h2Off: (o) => (o as { connect: { allowH2?: boolean } }).connect.allowH2,
  },
];

for (const c of cases) {
  test(`HTTP/2 is refused: ${c.name}`, () => {
    const kc = new PooledKubeConfig();
    const cluster = { name: 'c', skipTLSVerify: false, ...c.cluster } as Cluster;
    const options = kc.createDispatcherOptions(cluster, c.agent);
    assert.equal(options.type === 'none', false, 'an agent of our own, not the global dispatcher');
    assert.equal(c.h2Off(options), false);
  });
}

test('the TLS settings the library derived are kept', () => {
  const kc = new PooledKubeConfig();
  const options = kc.createDispatcherOptions({ name: 'c', server: 'https://api:6443' } as Cluster, {
    ca: 'a CA bundle',
    servername: 'api.example',
  });
  assert.equal(options.type, 'agent');
  if (options.type !== 'agent') return;
  assert.equal(options.connect.ca, 'a CA bundle');
  assert.equal(options.connect.servername, 'api.example');
  assert.equal(options.connect.keepAlive, true);
});

test("withUserAgent replaces the library's User-Agent, whatever the case, in either header shape", () => {
  assert.deepEqual(withUserAgent({ 'user-agent': 'lib/2', accept: 'x' }, 'nuo (a)'), {
    accept: 'x',
    'user-agent': 'nuo (a)',
  });
  assert.deepEqual(withUserAgent({ 'User-Agent': 'lib/2' }, 'nuo (a)'), { 'user-agent': 'nuo (a)' });
  assert.deepEqual(withUserAgent(['accept', 'x', 'User-Agent', 'lib/2'], 'nuo (a)'), [
    'accept',
    'x',
    'user-agent',
    'nuo (a)',
  ]);
  assert.deepEqual(withUserAgent(undefined, 'nuo (a)'), { 'user-agent': 'nuo (a)' });
});
