import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { parseMaxUnavailable } from '../../src/operator/decide/budget.ts';
import { doNotDisrupt, evictable } from '../../src/operator/read/do-not-disrupt.ts';
import { needs, node, ofType, run } from './operator-fixtures.ts';

const NOW = Date.parse('2026-11-25T12:00:00Z');
const pod = (
  name: string,
  value: string | undefined,
  start = '2026-11-25T10:00:00Z',
  phase = 'Running',
): V1Pod => ({
  metadata: {
    name,
    namespace: 'app',
    annotations: value === undefined ? {} : { 'nuo.dev/do-not-disrupt': value },
  },
  status: { phase, startTime: new Date(start) },
});

test('nuo.dev/do-not-disrupt: "true" holds while the pod runs, a duration from its start, a bad value like "true"', () => {
  const table: [string, V1Pod[], string | undefined, number | undefined][] = [
    ['no annotation', [pod('a', undefined)], undefined, undefined],
    ['"true"', [pod('a', 'true')], 'waiting: pod app/a has nuo.dev/do-not-disrupt="true"', undefined],
    [
      '"4h" from a start 2 h ago: 2 h to go',
      [pod('a', '4h')],
      'waiting: pod app/a has nuo.dev/do-not-disrupt="4h" until 2026-11-25T14:00:00.000Z',
      Date.parse('2026-11-25T14:00:00Z'),
    ],
    ['"1h" from a start 2 h ago: over', [pod('a', '1h')], undefined, undefined],
    ['a finished pod asks nothing', [pod('a', 'true', undefined, 'Succeeded')], undefined, undefined],
    [
      'a bad value holds like "true", and is shown',
      [pod('a', 'forever-ish')],
      'waiting: pod app/a has nuo.dev/do-not-disrupt="forever-ish"',
      undefined,
    ],
    [
      'the longest hold wins',
      [pod('a', '3h'), pod('b', '5h'), pod('c', '1h')],
      'waiting: pod app/b has nuo.dev/do-not-disrupt="5h" until 2026-11-25T15:00:00.000Z',
      Date.parse('2026-11-25T15:00:00Z'),
    ],
  ];
  for (const [what, pods, reason, until] of table) {
    const hold = doNotDisrupt(pods, NOW);
    assert.equal(hold?.reason, reason, what);
    assert.equal(hold?.until, until, what);
  }
});

test('a node whose pods are being read holds the line: nobody behind it is admitted ahead of it', () => {
  const nodes = [
    node('a', { annotations: needs }),
    node('b', { annotations: needs }),
    node('c', { annotations: needs }),
  ];
  const cfg = { maxUnavailable: parseMaxUnavailable('2') };
  const unread = (name: string) =>
    name === 'b' ? { reason: 'waiting: its pods are being checked', holdsLine: true as const } : undefined;
  const held = run(nodes, { cfg: { ...cfg, nodeHold: unread } });
  assert.deepEqual(ofType(held.actions, 'admit'), ['a'], 'a goes; b is read; c does not jump ahead of b');
  assert.deepEqual(
    held.actions.filter((x) => x.type === 'pending').map((x) => x.node),
    ['b'],
    'only the node being read says so this pass',
  );
  const read = run(nodes, { cfg: { ...cfg, nodeHold: () => undefined } });
  assert.deepEqual(ofType(read.actions, 'admit'), ['a', 'b']);
});

test("a pod counts as one to evict for the first wave's order unless a DaemonSet's, a mirror or finished", () => {
  const owned = (kind: string): V1Pod => ({
    metadata: {
      name: 'p',
      ownerReferences: [{ apiVersion: 'apps/v1', kind, name: 'o', uid: 'u', controller: true }],
    },
    status: { phase: 'Running' },
  });
  const table: [string, V1Pod, boolean][] = [
    ["a ReplicaSet's", owned('ReplicaSet'), true],
    ['a bare pod', pod('a', undefined), true],
    ["a DaemonSet's", owned('DaemonSet'), false],
    ['a mirror pod', { metadata: { name: 'm', annotations: { 'kubernetes.io/config.mirror': 'x' } } }, false],
    ['Succeeded', pod('a', undefined, undefined, 'Succeeded'), false],
    ['Failed', pod('a', undefined, undefined, 'Failed'), false],
  ];
  for (const [what, p, want] of table) assert.equal(evictable(p), want, what);
});
