/**
 * Whether a slot's attempt has ended is read from identities (the ledger's attempt number, which the
 * node names), never by comparing times two leaders wrote. Each case is an ended attempt that an
 * admitting leader 10 minutes ahead of the finishing one left looking "not started" to the old rule
 * (slot since > the node's state-since): it is released and its node goes back through its gates.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Annotations, AutoscalerTaints, Labels } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import { decide } from '../../src/operator/decide/decide.ts';
import { type NodeView, viewNode } from '../../src/operator/decide/node-view.ts';
import type { Slot } from '../../src/operator/decide/slot.ts';
import { ago, decideConfig, NOW, needs, node } from './operator-fixtures.ts';

/** The admitting leader's clock ran 10 minutes ahead of the one that wrote the node's end. */
const AHEAD: Slot = { since: ago(-600), attempt: 5 };
const endedIn = (phase: Phase, extra: Record<string, string> = {}) => ({
  [Annotations.state]: phase,
  [Annotations.stateSince]: ago(5),
  [Annotations.attempt]: '5',
  ...extra,
});

function decideOn(n: NodeView, slot: Slot, cfg = {}) {
  const d = decide(
    {
      nodes: [n],
      ledger: { slots: { [n.name]: slot } },
      draining: new Set(),
      admitting: new Set(),
      health: new Map(),
    },
    { ...decideConfig, ...cfg },
    NOW,
  );
  const started = d.actions.filter(
    (a) => a.type === 'admit' || (a.type === 'transition' && a.to === Phase.beforeReboot),
  );
  const reason = d.actions.find((a) => a.type === 'explain' || a.type === 'pending');
  return { d, started, reason: reason && 'reason' in reason ? reason.reason : undefined };
}

test('an attempt that ended under a leader behind the admitting one is released, and its node waits at its own gates', () => {
  const rate = { maxPerHour: 1, recent: [NOW.getTime() - 10_000] };
  const table: Array<[string, NodeView, object, RegExp]> = [
    [
      'an aborted drain: the retry backoff',
      viewNode(node('a', { annotations: endedIn(Phase.pending, { ...needs, [Annotations.failures]: '1' }) })),
      {},
      /retry after/,
    ],
    [
      'a reboot whose need survived: the reboot-loop gate',
      viewNode(
        node('a', {
          annotations: endedIn(Phase.idle, { ...needs, [Annotations.ineffectiveReboots]: '3' }),
        }),
      ),
      {},
      /the need survived 3 reboots in a row/,
    ],
    [
      'a node skipped by its drain failures',
      viewNode(
        node('a', {
          annotations: endedIn(Phase.pending, { ...needs, [Annotations.drainFailures]: '2' }),
          labels: { [Labels.skipped]: 'true' },
        }),
      ),
      {},
      /skipped: its drain failed 2 time/,
    ],
    [
      'a node the cluster autoscaler deletes',
      viewNode(
        node('a', {
          annotations: endedIn(Phase.idle, needs),
          taints: [{ key: AutoscalerTaints.clusterAutoscaler, effect: 'NoSchedule', value: '1' }],
        }),
      ),
      {},
      /the cluster autoscaler .* is removing the node/,
    ],
    [
      'a remediation, at the rate limit',
      {
        ...viewNode(node('a', { annotations: endedIn(Phase.idle) })),
        policyAsks: { need: { kind: 'remediation', reason: 'remediation: KernelDeadlock=True' } },
      },
      { remediationRate: rate },
      /remediation rate limit/,
    ],
  ];
  for (const [what, n, cfg, why] of table) {
    const { d, started, reason } = decideOn(n, AHEAD, cfg);
    assert.deepEqual(
      d.actions.filter((a) => a.type === 'release').map((a) => a.node),
      ['a'],
      `${what}: its slot is freed`,
    );
    assert.deepEqual(started, [], `${what}: not redone`);
    assert.match(reason ?? '', why, what);
  }
});

test('an admission whose node write never happened is redone only while its node gates still let it; else withdrawn, naming the gate', () => {
  const unstarted = (extra: Record<string, string>, o = {}) =>
    viewNode(
      node('a', {
        annotations: { ...needs, [Annotations.state]: Phase.pending, [Annotations.attempt]: '4', ...extra },
        ...o,
      }),
    );
  const redone = decideOn(unstarted({}), AHEAD);
  assert.equal(redone.started.length, 1, 'its gates let it: redone');
  const table: Array<[string, NodeView, RegExp]> = [
    [
      'paused meanwhile',
      unstarted({ [Annotations.paused]: 'true' }),
      /a gate of the node holds it now \(paused\)/,
    ],
    ['NotReady meanwhile', unstarted({}, { ready: false }), /node is NotReady/],
    [
      'the autoscaler took it meanwhile',
      unstarted({}, { taints: [{ key: AutoscalerTaints.clusterAutoscaler, effect: 'NoSchedule' }] }),
      /is removing the node/,
    ],
  ];
  for (const [what, n, why] of table) {
    const { d, started } = decideOn(n, AHEAD);
    const release = d.actions.find((a) => a.type === 'release');
    assert.deepEqual(started, [], what);
    assert.match(release?.type === 'release' ? release.reason : '', why, what);
    assert.match(release?.type === 'release' ? release.reason : '', /admission withdrawn before it started/);
  }
});
