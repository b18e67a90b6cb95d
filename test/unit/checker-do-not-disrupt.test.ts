/** The checker's do-not-disrupt rule, replaying the pod events it judges. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { PodAnnotations } from '../../src/api/keys.ts';
import { disruptedOptOut } from '../../src/sim/checker-do-not-disrupt.ts';

const pod = (annotated: boolean, deleting: boolean): V1Pod => ({
  metadata: {
    namespace: 'chaos',
    name: 'dnd-1',
    ...(annotated ? { annotations: { [PodAnnotations.doNotDisrupt]: 'true' } } : {}),
    ...(deleting ? { deletionTimestamp: new Date('2026-12-07T12:00:00Z') } : {}),
  },
  spec: { nodeName: 'node-09', containers: [] },
});

test('a pod going or gone while it still asks not to be disrupted breaks the rule; one its owner let go first does not', () => {
  const table: [string, string, V1Pod, boolean][] = [
    ['annotated, running', 'update', pod(true, false), false],
    ['annotated, added', 'add', pod(true, false), false],
    ['annotated, evicted (deletionTimestamp set)', 'update', pod(true, true), true],
    ['annotated, deleted', 'delete', pod(true, false), true],
    ['annotation removed, then deleting', 'update', pod(false, true), false],
    ['annotation removed, then deleted', 'delete', pod(false, false), false],
  ];
  for (const [what, type, p, breach] of table) {
    const detail = disruptedOptOut(type, p);
    assert.equal(detail !== undefined, breach, what);
    if (detail) assert.match(detail, /chaos\/dnd-1 on node-09 .*nuo\.dev\/do-not-disrupt="true"/);
  }
});
