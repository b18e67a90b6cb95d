import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Node } from '@kubernetes/client-node';
import { Annotations, LifecycleConditions } from '../../src/api/keys.ts';
import { lifecycleColumn, policyLines, statusReason } from '../../src/cli/nodes.ts';
import { viewNode } from '../../src/operator/decide/node-view.ts';

const NOW = new Date('2026-11-24T12:00:00Z');
const node = (annotations: Record<string, string>): V1Node => ({ metadata: { name: 'n', annotations } });
const reason = (annotations: Record<string, string>) => statusReason(viewNode(node(annotations)), NOW);

test('nuo status says each thing once: the reason, then only what it does not say', () => {
  const table: Array<[string, Record<string, string>, string]> = [
    ['nothing', {}, '-'],
    ['a need the operator has not seen yet', { [Annotations.rebootNeeded]: 'true' }, 'reboot needed'],
    [
      'a pause the reason names',
      { [Annotations.paused]: 'true', [Annotations.stateReason]: 'paused' },
      'paused',
    ],
    ['a pause the reason does not name yet', { [Annotations.paused]: 'true' }, 'paused'],
    [
      'malformed values the reason names',
      {
        [Annotations.paused]: 'maybe',
        [Annotations.stateReason]:
          'paused; ignored malformed annotations: nuo.dev/paused="maybe" must be "true" or "false"; read as true',
      },
      'paused; ignored malformed annotations: nuo.dev/paused="maybe" must be "true" or "false"; read as true',
    ],
    [
      'malformed values the reason does not name yet',
      { [Annotations.failures]: 'abc', [Annotations.stateReason]: 'no reboot needed' },
      'no reboot needed; malformed: nuo.dev/failures="abc" is not a count; read as 0',
    ],
    [
      "the agent's problem",
      { [Annotations.agentProblem]: 'the host did not reboot within 10m' },
      'agent: the host did not reboot within 10m',
    ],
  ];
  for (const [what, annotations, want] of table) assert.equal(reason(annotations), want, what);
});

test('a hostile value is quoted by a bounded prefix', () => {
  const huge = 'x'.repeat(150_000);
  const said = reason({ [Annotations.rebootRequested]: huge, [Annotations.agentProblem]: huge });
  assert.ok(said.length < 600, `${said.length} characters`);
  assert.match(said, /\(150000 characters\) is not an RFC 3339 time/);
});

test('nuo status without a policy, or without the CRD, says nuo touches no node and what to apply', () => {
  const bare = {
    nodes: [],
    conditions: new Map(),
    ledger: { slots: {} },
    raw: [],
    plan: { pools: [], conflicts: new Map(), unmatched: ['node-0'] },
    decisions: new Map(),
    plans: { crdMissing: false, entries: [], jobs: new Map() },
    passPlans: [],
  };
  const none = policyLines({ ...bare, policies: { known: true, crdMissing: false, policies: [] } });
  assert.deepEqual(none, [
    'policies: none, so nuo touches no node (kubectl apply -f deploy/policies/default.yaml: every node, one at a time)',
  ]);
  const noCrd = policyLines({ ...bare, policies: { known: true, crdMissing: true, policies: [] } });
  assert.match(noCrd[0] ?? '', /CRD is not installed, so nuo touches no node \(kubectl apply -k deploy\)/);
});

test("nuo status shows the lifecycle conditions that hold, another writer's with its reason", () => {
  const c = (type: string, reason: string, status = 'True') => ({ type, status, reason });
  assert.equal(lifecycleColumn(undefined), '-');
  assert.equal(
    lifecycleColumn([c('Ready', 'KubeletReady'), c(LifecycleConditions.drained, 'NuoPlan', 'False')]),
    '-',
  );
  assert.equal(
    lifecycleColumn([
      c('Ready', 'KubeletReady'),
      c(LifecycleConditions.drained, 'NuoPlan'),
      c(LifecycleConditions.maintenanceInProgress, 'NuoPlan'),
      c(LifecycleConditions.maintenancePlanned, 'AdminRequested'),
    ]),
    'Drained,MaintenanceInProgress,MaintenancePlanned (AdminRequested)',
  );
});
