import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { SimJobLabels } from '../../src/sim/job-keys.ts';
import { hostToReboot } from '../../src/sim/job-reboots.ts';

const pod = (phase: string, { label = 'true', node = 'node-0', deleting = false } = {}): V1Pod => ({
  metadata: {
    uid: 'u1',
    labels: { [SimJobLabels.rebootsHost]: label },
    ...(deleting ? { deletionTimestamp: new Date() } : {}),
  },
  spec: { containers: [], nodeName: node },
  status: { phase },
});

test("a Job pod reboots its node's host once, when it is first seen running", () => {
  const cases: [string, V1Pod, ReadonlySet<string>, string | undefined][] = [
    ['running', pod('Running'), new Set(), 'node-0'],
    ['running, its reboot done', pod('Running'), new Set(['u1']), undefined],
    ['pending', pod('Pending'), new Set(), undefined],
    ['finished', pod('Succeeded'), new Set(), undefined],
    ['being deleted', pod('Running', { deleting: true }), new Set(), undefined],
    ['not labelled "true"', pod('Running', { label: 'false' }), new Set(), undefined],
    ['not bound', pod('Running', { node: '' }), new Set(), undefined],
  ];
  for (const [what, p, done, want] of cases) assert.equal(hostToReboot(p, done), want, what);
});
