import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PlanStatus } from '../../src/api/plan.ts';
import { planEvents } from '../../src/operator/plans/plan-events.ts';

const at = '2026-11-25T12:00:00Z';
const cond = (type: string, status: 'True' | 'False', message = '') => ({
  type,
  status,
  reason: 'r',
  message,
  lastTransitionTime: at,
});
const status = (o: {
  valid?: boolean;
  resolved?: boolean;
  complete?: boolean;
  version?: string;
  applying?: string[];
  failed?: Array<{ node: string; error: string; at: string }>;
}): PlanStatus => ({
  conditions: [
    cond(
      'Validated',
      o.valid === false ? 'False' : 'True',
      o.valid === false ? 'spec.upgrade: required' : '',
    ),
    cond('LatestResolved', o.resolved === false ? 'False' : 'True'),
    cond(
      'Complete',
      o.complete ? 'True' : 'False',
      o.complete ? 'applied on all 2 selected node(s)' : 'progress',
    ),
  ],
  ...(o.version ? { latestVersion: o.version, latestHash: 'h1' } : {}),
  applying: o.applying ?? [],
  failed: o.failed ?? [],
});
const reasons = (previous: PlanStatus | undefined, next: PlanStatus) =>
  planEvents(previous, next, 'Spec.Version').map((e) => `${e.type} ${e.reason}: ${e.message}`);

test("a Plan's status change tells what SUC tells on its Plans: validated, resolved, jobs synced, a job failed, complete", () => {
  const table: Array<[string, PlanStatus | undefined, PlanStatus, string[]]> = [
    [
      'first status: valid, resolved',
      undefined,
      status({ version: 'v1' }),
      ['Normal Validated: Plan is valid', 'Normal Resolved: Resolved latest version from Spec.Version: v1'],
    ],
    ['nothing changed', status({ version: 'v1' }), status({ version: 'v1' }), []],
    [
      'a new version',
      status({ version: 'v1' }),
      status({ version: 'v2' }),
      ['Normal Resolved: Resolved latest version from Spec.Version: v2'],
    ],
    [
      'the spec turned invalid',
      status({ version: 'v1' }),
      status({ valid: false, version: 'v1' }),
      ['Warning ValidateFailed: Failed to validate plan: spec.upgrade: required'],
    ],
    [
      'nodes started',
      status({ version: 'v1' }),
      status({ version: 'v1', applying: ['n1', 'n2'] }),
      ['Normal SyncJob: Jobs synced for version v1 on Nodes n1,n2. Hash: h1'],
    ],
    [
      'one of them done: the applying nodes changed',
      status({ version: 'v1', applying: ['n1', 'n2'] }),
      status({ version: 'v1', applying: ['n2'] }),
      ['Normal SyncJob: Jobs synced for version v1 on Nodes n2. Hash: h1'],
    ],
    [
      'none applying any more: no SyncJob',
      status({ version: 'v1', applying: ['n2'] }),
      status({ version: 'v1' }),
      [],
    ],
    [
      "a node's Job failed",
      status({ version: 'v1', applying: ['n1'] }),
      status({ version: 'v1', applying: ['n1'], failed: [{ node: 'n1', error: 'exit 1', at }] }),
      ['Warning JobFailed: on node n1: exit 1'],
    ],
    [
      'complete',
      status({ version: 'v1', applying: ['n1'] }),
      status({ version: 'v1', complete: true }),
      ['Normal Complete: applied on all 2 selected node(s)'],
    ],
  ];
  for (const [what, previous, next, want] of table) assert.deepEqual(reasons(previous, next), want, what);
  assert.deepEqual(
    planEvents(undefined, status({ version: 'v3' }), 'Spec.Channel').map((e) => e.message)[1],
    'Resolved latest version from Spec.Channel: v3',
  );
});
