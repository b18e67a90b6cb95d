import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Node } from '@kubernetes/client-node';
import { undoesAdminCordon } from '../../src/sim/checker.ts';

const node = (resourceVersion: string, unschedulable: boolean): V1Node => ({
  metadata: { name: 'node-0', resourceVersion },
  spec: { unschedulable },
});

test('an admin cordon is undone only by an update from a version that showed it', () => {
  const cases: [string, string | undefined, V1Node, V1Node, boolean][] = [
    ['no admin cordon recorded', undefined, node('10', true), node('11', false), false],
    ['told before the write: any uncordon undoes it', '', node('10', true), node('11', false), true],
    ['an uncordon from the cordon on', '20', node('20', true), node('21', false), true],
    ['an uncordon from later versions', '20', node('25', true), node('26', false), true],
    [
      "nuo's own uncordon, delivered late, from before the cordon",
      '20',
      node('10', true),
      node('11', false),
      false,
    ],
    ['still cordoned', '20', node('20', true), node('21', true), false],
    ['was not cordoned', '20', node('20', false), node('21', false), false],
  ];
  for (const [what, since, old, now, want] of cases) {
    assert.equal(undoesAdminCordon(since, now, old), want, what);
  }
});
