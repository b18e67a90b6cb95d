import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Node } from '@kubernetes/client-node';
import { Annotations } from '../../src/api/keys.ts';
import type { DecideConfig } from '../../src/operator/decide/decide-input.ts';
import { firstWait, NODE_GATES, PASS_GATES, type PassState } from '../../src/operator/decide/gates.ts';
import { viewNode } from '../../src/operator/decide/node-view.ts';
import { decideConfig } from './operator-fixtures.ts';

const NOW = Date.parse('2026-11-24T12:00:00Z');
const config: DecideConfig = decideConfig;
const node = (annotations: Record<string, string> = {}, ready = true): V1Node => ({
  metadata: { name: 'n', annotations },
  status: { conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
});
const tainted = (taint: { key: string; value?: string; effect: string }): V1Node => ({
  ...node(),
  spec: { taints: [taint] },
});
const fresh: PassState = { lastGrant: Number.NEGATIVE_INFINITY, admitted: 0, remediated: 0 };
const since = (s: number) => new Date(NOW - s * 1000).toISOString();

test('node gates: each says why and until when, the first in order wins', () => {
  const table: Array<[string, V1Node, Partial<DecideConfig>, string | undefined, number | undefined]> = [
    ['nothing holds it', node(), {}, undefined, undefined],
    ['paused', node({ [Annotations.paused]: 'true' }), {}, 'paused', undefined],
    ['paused by a malformed value', node({ [Annotations.paused]: 'maybe' }), {}, 'paused', undefined],
    [
      'skipped after failed drains: only a person lets it try again',
      {
        ...node({ [Annotations.failures]: '4', [Annotations.drainFailures]: '3' }),
        metadata: {
          name: 'n',
          annotations: { [Annotations.failures]: '4', [Annotations.drainFailures]: '3' },
          labels: { 'nuo.dev/skipped': 'true' },
        },
      },
      {},
      'skipped: its drain failed 3 time(s) in a row; remove the label nuo.dev/skipped to try again',
      undefined,
    ],
    [
      'a grant nuo did not give',
      node({ [Annotations.rebootOk]: 'true' }),
      {},
      'waiting: a reboot grant nuo did not give is being removed',
      undefined,
    ],
    ['cluster paused', node(), { paused: true }, 'waiting: nuo is paused cluster-wide', undefined],
    ['NotReady', node({}, false), {}, 'waiting: node is NotReady', undefined],
    [
      "the cluster autoscaler's removal taint, as it writes it",
      tainted({ key: 'ToBeDeletedByClusterAutoscaler', value: '1795000000', effect: 'NoSchedule' }),
      {},
      'waiting: the cluster autoscaler (taint ToBeDeletedByClusterAutoscaler) is removing the node',
      undefined,
    ],
    [
      "Karpenter's disruption taint",
      tainted({ key: 'karpenter.sh/disrupted', effect: 'NoSchedule' }),
      {},
      'waiting: Karpenter (taint karpenter.sh/disrupted) is removing the node',
      undefined,
    ],
    [
      "the cluster autoscaler's soft candidate taint holds nothing",
      tainted({
        key: 'DeletionCandidateOfClusterAutoscaler',
        value: '1795000000',
        effect: 'PreferNoSchedule',
      }),
      {},
      undefined,
      undefined,
    ],
    [
      'backoff after 2 failures: 2 min from the last attempt',
      node({ [Annotations.failures]: '2', [Annotations.stateSince]: since(60) }),
      {},
      `waiting: retry after ${new Date(NOW + 60_000).toISOString()} (2 failure(s))`,
      NOW + 60_000,
    ],
    [
      'backoff over',
      node({ [Annotations.failures]: '1', [Annotations.stateSince]: since(61) }),
      {},
      undefined,
      undefined,
    ],
    [
      'paused and NotReady: paused is named',
      node({ [Annotations.paused]: 'true' }, false),
      { paused: true },
      'paused',
      undefined,
    ],
  ];
  for (const [what, n, cfg, reason, until] of table) {
    const wait = firstWait(NODE_GATES, {
      node: viewNode(n),
      config: { ...config, ...cfg },
      now: NOW,
      pass: fresh,
    });
    assert.equal(wait?.reason, reason, what);
    assert.equal(wait?.until, until, what);
  }
});

test('pass gates: grants spaced by minGrantSpacing, one a pass', () => {
  const spaced = { ...config, minGrantSpacingMs: 30_000 };
  const input = (pass: PassState, c = spaced) => ({ node: viewNode(node()), config: c, now: NOW, pass });
  assert.equal(firstWait(PASS_GATES, input(fresh, config)), undefined, 'no spacing configured');
  assert.equal(firstWait(PASS_GATES, input(fresh)), undefined, 'never granted');
  assert.equal(
    firstWait(PASS_GATES, input({ lastGrant: NOW - 31_000, admitted: 0, remediated: 0 })),
    undefined,
  );
  assert.deepEqual(firstWait(PASS_GATES, input({ lastGrant: NOW - 10_000, admitted: 0, remediated: 0 })), {
    reason: 'waiting: minimum spacing between grants (30s)',
    until: NOW + 20_000,
  });
  assert.equal(
    firstWait(PASS_GATES, input({ lastGrant: NOW - 31_000, admitted: 1, remediated: 0 }))?.reason,
    'waiting: minimum spacing between grants (30s)',
    'one admission a pass',
  );
});

test("pass gates: the operator's own node waits while another node of its pool went this pass", () => {
  const own = { ...config, ownNode: 'n' };
  const input = (c: DecideConfig, admitted: number) => ({
    node: viewNode(node()),
    config: c,
    now: NOW,
    pass: { ...fresh, admitted },
  });
  const table: Array<[string, DecideConfig, number, string | undefined]> = [
    ['its own node, first of the pass', own, 0, undefined],
    [
      'its own node, after another was admitted',
      own,
      1,
      "waiting: the operator's leader runs on this node; it goes after the other nodes of its pool",
    ],
    ['another node', { ...config, ownNode: 'other' }, 1, undefined],
    ['own node unknown', config, 1, undefined],
  ];
  for (const [what, c, admitted, reason] of table)
    assert.equal(firstWait(PASS_GATES, input(c, admitted))?.reason, reason, what);
});
