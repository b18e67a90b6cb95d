/**
 * The checker's rules on a node's own gates, its boot and its refreshes, each replaying the case it was
 * made for (issue 47's audit and the campaign).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Node } from '@kubernetes/client-node';
import { Annotations, AutoscalerTaints, Labels } from '../../src/api/keys.ts';
import {
  endedBeforeNewBoot,
  gatesPassedBy,
  type NodeGateSettings,
  refreshNotCounted,
  remember,
  writtenAt,
} from '../../src/sim/checker-node-gates.ts';

const settings: NodeGateSettings = {
  retryBackoffMs: 5000,
  retryBackoffMaxMs: 60_000,
  maxIneffectiveReboots: 3,
};
const T = Date.parse('2026-12-07T10:00:00Z');
const at = (s: number) => T + s * 1000;
const node = (
  o: {
    annotations?: Record<string, string>;
    labels?: Record<string, string>;
    tainted?: boolean;
    bootId?: string;
    times?: number[];
  } = {},
): V1Node => ({
  metadata: {
    name: 'n',
    annotations: o.annotations ?? {},
    labels: o.labels ?? {},
    managedFields: (o.times ?? []).map((t) => ({ manager: 'm', operation: 'Update', time: new Date(t) })),
  },
  spec: o.tainted ? { taints: [{ key: AutoscalerTaints.clusterAutoscaler, effect: 'NoSchedule' }] } : {},
  status: { nodeInfo: { bootID: o.bootId ?? 'b1' } as never },
});

test('writtenAt: the latest time the managed fields record, the write that made this version', () => {
  assert.equal(writtenAt(node({ times: [at(1), at(7), at(3)] })), at(7));
  assert.equal(writtenAt(node()), undefined);
});

test('remember: a count seen rising is timed from that write, kept while it stands, forgotten at zero', () => {
  const failed = node({ annotations: { [Annotations.failures]: '1' } });
  const m1 = remember({}, failed, at(10));
  assert.deepEqual(m1.failed, { count: 1, at: at(10) });
  assert.deepEqual(remember(m1, failed, at(20)).failed, { count: 1, at: at(10) }, 'the same failure');
  assert.deepEqual(remember(m1, node({ annotations: { [Annotations.failures]: '2' } }), at(30)).failed, {
    count: 2,
    at: at(30),
  });
  assert.equal(remember(m1, node(), at(40)).failed, undefined, 'completed: reset');
  const tainted = remember({}, node({ tainted: true }), at(5));
  assert.equal(remember(tainted, node({ tainted: true }), at(9)).removedSince, at(5));
  assert.equal(remember(tainted, node(), at(9)).removedSince, undefined);
});

test('an attempt restarted past its node gates is named, gate by gate; one through them is not', () => {
  const fresh = { failed: { count: 1, at: at(10) } };
  const table: Array<[string, V1Node, Parameters<typeof gatesPassedBy>[1], number, RegExp | undefined]> = [
    // The audit's case: an aborted drain redone at once by a leader that read the ended attempt as unstarted.
    [
      'redone 0.4 s after its failure',
      node({ annotations: { [Annotations.failures]: '1' } }),
      fresh,
      at(10.4),
      /within its retry backoff of 5s/,
    ],
    [
      'admitted once the backoff is over',
      node({ annotations: { [Annotations.failures]: '1' } }),
      fresh,
      at(15),
      undefined,
    ],
    [
      'a need that survived its reboot, admitted again at once',
      node({ annotations: { [Annotations.ineffectiveReboots]: '1' } }),
      { ineffective: { count: 1, at: at(20) } },
      at(20.2),
      /after its ineffective reboot 1 in a row was seen, within its retry backoff/,
    ],
    [
      'past maxIneffectiveReboots',
      node({ annotations: { [Annotations.ineffectiveReboots]: '3' } }),
      { ineffective: { count: 3, at: at(0) } },
      at(500),
      /survived 3 reboots \(maxIneffectiveReboots 3\)/,
    ],
    [
      'labelled skipped',
      node({ labels: { [Labels.skipped]: 'true' } }),
      {},
      at(1),
      /labelled nuo.dev\/skipped/,
    ],
    [
      'tainted for deletion long before',
      node({ tainted: true }),
      { removedSince: at(0) },
      at(30),
      /deletion taint had been on it for 30s/,
    ],
    [
      'tainted as it was admitted: a coincidence',
      node({ tainted: true }),
      { removedSince: at(30) },
      at(31),
      undefined,
    ],
  ];
  for (const [what, n, memory, now, want] of table) {
    const got = gatesPassedBy(n, memory, settings, now, 2000);
    if (want) assert.match(got.join('; '), want, what);
    else assert.deepEqual(got, [], what);
  }
  assert.deepEqual(
    gatesPassedBy(node({ annotations: { [Annotations.failures]: '1' } }), fresh, undefined, at(10.4), 2000),
    [],
    'without the pool settings, no backoff to hold it to',
  );
});

test("an attempt ended while the node still showed the boot its host rebooted out of: the FleetLock client's steady-state taken for a withdrawal", () => {
  assert.match(
    endedBeforeNewBoot(node({ bootId: 'b1' }), 'b1') ?? '',
    /still showed boot b1.*no health gate/,
  );
  assert.equal(
    endedBeforeNewBoot(node({ bootId: 'b2' }), 'b1'),
    undefined,
    'the kubelet posted the new boot',
  );
  assert.equal(endedBeforeNewBoot(node({ bootId: 'b1' }), undefined), undefined, 'no reboot');
});

test('a refresh again on a boot time that did not advance across the reboot must count that reboot as ineffective', () => {
  const stuck = '2026-12-01T00:00:00.000Z';
  const refreshed = (extra: Record<string, string> = {}) =>
    node({ annotations: { [Annotations.bootTime]: stuck, ...extra } });
  assert.match(refreshNotCounted(refreshed(), stuck) ?? '', /did not advance across its reboot/);
  assert.equal(refreshNotCounted(refreshed({ [Annotations.ineffectiveReboots]: '1' }), stuck), undefined);
  assert.equal(refreshNotCounted(refreshed(), '2026-11-01T00:00:00.000Z'), undefined, 'it advanced');
  assert.equal(refreshNotCounted(refreshed(), undefined), undefined, 'no reboot seen');
});
