import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { kubeconfigCredentials } from '../../src/kube/kubeconfig-credentials.ts';

const dir = mkdtempSync(join(tmpdir(), 'nuo-kc-test-'));
const doc = {
  apiVersion: 'v1',
  clusters: [
    {
      name: 'c',
      cluster: {
        server: 'https://127.0.0.1:6443',
        'certificate-authority-data': Buffer.from('CA').toString('base64'),
      },
    },
  ],
  users: [{ name: 'u', user: { token: 'secret' } }],
  contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
  'current-context': 'x',
};

test('reads JSON and YAML kubeconfigs alike: server, CA and token of the current context', () => {
  const json = join(dir, 'kc.json');
  writeFileSync(json, JSON.stringify(doc));
  const yaml = join(dir, 'kc.yaml');
  writeFileSync(
    yaml,
    `apiVersion: v1\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:6443\n    certificate-authority-data: ${Buffer.from('CA').toString('base64')}\nusers:\n- name: u\n  user: {token: secret}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n`,
  );
  for (const path of [json, yaml]) {
    const c = kubeconfigCredentials(path);
    assert.equal(c.server, 'https://127.0.0.1:6443');
    assert.equal(c.ca?.toString(), 'CA');
    assert.equal(c.token?.(), 'secret');
  }
});

test('a kubeconfig without a cluster for its context is refused with the file named', () => {
  const bad = join(dir, 'bad.json');
  writeFileSync(bad, JSON.stringify({ ...doc, 'current-context': 'missing' }));
  assert.throws(() => kubeconfigCredentials(bad), /bad\.json: no cluster for the current context/);
});
