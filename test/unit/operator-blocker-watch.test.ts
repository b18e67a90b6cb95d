import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { UpdatePolicySpec } from '../../src/api/update-policy.ts';
import { blockersKey } from '../../src/operator/read/blocker-watch.ts';
import { resolvePolicy } from '../../src/policy/resolve.ts';

const keyOf = (blockers: UpdatePolicySpec['blockers']) => {
  const r = resolvePolicy({ metadata: { name: 'p', generation: 1 }, spec: { blockers } as UpdatePolicySpec });
  assert.ok(r.ok, JSON.stringify(!r.ok && r.errors));
  return blockersKey(r.policy);
};

const pods = (namespaceSelector?: Record<string, string>) => ({
  pods: [
    {
      selector: { matchLabels: { app: 'backup' } },
      ...(namespaceSelector ? { namespaceSelector: { matchLabels: namespaceSelector } } : {}),
    },
  ],
});
const prometheus = (ignoreAlerts: string[]) => ({ prometheus: { url: 'http://prom:9090', ignoreAlerts } });

test('a blocker watch is keyed on every field of the blockers: any edit starts a new watch', () => {
  const changes: [string, UpdatePolicySpec['blockers'], UpdatePolicySpec['blockers']][] = [
    ['the namespaceSelector alone', pods({ tier: 'hot' }), pods({ tier: 'cold' })],
    ['a namespaceSelector added', pods(), pods({ tier: 'cold' })],
    ['the pod selector', pods(), { pods: [{ selector: { matchLabels: { app: 'restore' } } }] }],
    ["Prometheus's ignored alerts", prometheus([]), prometheus(['Watchdog'])],
  ];
  for (const [what, before, after] of changes) {
    assert.notEqual(keyOf(before), keyOf(after), what);
  }
});

test("a health check's edit starts a new watch too", () => {
  const key = (expression: string) => {
    const r = resolvePolicy({
      metadata: { name: 'p', generation: 1 },
      spec: {
        healthChecks: [{ name: 'c', object: { apiVersion: 'v1', kind: 'ConfigMap', name: 'c', expression } }],
      },
    });
    assert.ok(r.ok, JSON.stringify(!r.ok && r.errors));
    return blockersKey(r.policy);
  };
  assert.notEqual(key('true'), key('false'));
  assert.equal(key('true'), key('true'));
});

test('the same blockers give the same key, so a pass that changes nothing keeps the running watch', () => {
  assert.equal(keyOf(pods({ tier: 'hot' })), keyOf(pods({ tier: 'hot' })));
  assert.equal(keyOf(prometheus(['Watchdog'])), keyOf(prometheus(['Watchdog'])));
});
