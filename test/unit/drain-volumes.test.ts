import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Pod, V1VolumeAttachment } from '@kubernetes/client-node';
import { claimsOf, describeAttached, stillAttached } from '../../src/drain/volumes.ts';

const pod = (namespace: string, claims: string[], emptyDir = false): V1Pod => ({
  metadata: { name: 'p', namespace },
  spec: {
    containers: [],
    volumes: [
      ...claims.map((claimName) => ({ name: claimName, persistentVolumeClaim: { claimName } })),
      ...(emptyDir ? [{ name: 'tmp', emptyDir: {} }] : []),
    ],
  },
});

const va = (name: string, node: string, pv?: string): V1VolumeAttachment => ({
  metadata: { name },
  spec: {
    attacher: 'csi.example.com',
    nodeName: node,
    source: pv ? { persistentVolumeName: pv } : { inlineVolumeSpec: {} },
  },
});

test('claimsOf: each claim the pods mount once, with its namespace; other volumes ignored', () => {
  assert.deepEqual(claimsOf([]), []);
  assert.deepEqual(claimsOf([pod('a', [], true)]), []);
  assert.deepEqual(claimsOf([pod('b', ['data', 'logs']), pod('a', ['data']), pod('b', ['data'], true)]), [
    'a/data',
    'b/data',
    'b/logs',
  ]);
});

test("claimsOf: a generic ephemeral volume's claim, named <pod>-<volume> as Kubernetes names it", () => {
  const withEphemeral: V1Pod = {
    metadata: { name: 'db-0', namespace: 'a' },
    spec: {
      containers: [],
      volumes: [
        { name: 'scratch', ephemeral: { volumeClaimTemplate: { spec: { accessModes: ['ReadWriteOnce'] } } } },
        { name: 'data', persistentVolumeClaim: { claimName: 'data' } },
      ],
    },
  };
  assert.deepEqual(claimsOf([withEphemeral]), ['a/data', 'a/db-0-scratch']);
});

test("stillAttached: the node's attachments of the evicted pods' volumes only", () => {
  const all = [
    va('va-1', 'n1', 'pv-1'),
    va('va-2', 'n2', 'pv-1'),
    va('va-3', 'n1', 'pv-9'),
    va('va-4', 'n1'),
  ];
  const table: Array<[string, ReadonlySet<string>, string[]]> = [
    ['no volumes to wait for', new Set(), []],
    ["one of the pods' volumes, on this node only", new Set(['pv-1']), ['va-1']],
    ['a volume no longer attached anywhere', new Set(['pv-2']), []],
    ['several', new Set(['pv-1', 'pv-9']), ['va-1', 'va-3']],
  ];
  for (const [name, volumes, want] of table)
    assert.deepEqual(
      stillAttached(all, 'n1', volumes).map((a) => a.metadata?.name),
      want,
      name,
    );
  assert.equal(describeAttached([all[0] as V1VolumeAttachment]), 'pv-1 (VolumeAttachment va-1)');
});
