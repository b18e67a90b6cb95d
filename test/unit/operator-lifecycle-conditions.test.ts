import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1NodeCondition } from '@kubernetes/client-node';
import { Annotations as A, LifecycleConditions as C, Labels as L } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import { viewNode } from '../../src/operator/decide/node-view.ts';
import type { PlanSlot } from '../../src/operator/decide/plan-work.ts';
import type { Slot } from '../../src/operator/decide/slot.ts';
import {
  lifecyclePatch,
  NuoReason,
  ownedByNuo,
  sameLifecycle,
  wantedConditions,
} from '../../src/operator/write/lifecycle-conditions.ts';
import { NOW, needs, node, state } from './operator-fixtures.ts';

const plan = (prepare: PlanSlot['prepare'], reboot = false): PlanSlot => ({
  ref: 'ops/kernel',
  hash: 'h1',
  version: 'v2',
  prepare,
  reboot,
});
const slot = (p?: PlanSlot): Slot => ({ since: NOW.toISOString(), ...(p ? { plan: p } : {}) });
const view = (annotations: Record<string, string>, labels: Record<string, string> = {}) =>
  viewNode(node('n', { annotations, labels }));
const inPhase = (phase: string, extra: Record<string, string> = {}) => view(state(phase, 10, extra));

/** The condition types wanted, each with its reason. */
const wanted = (...args: Parameters<typeof wantedConditions>) =>
  Object.fromEntries(wantedConditions(...args).map((c) => [c.type, c.reason]));

test('each phase of a reboot and of a Plan publishes its lifecycle conditions, and none once it ends', () => {
  const R = NuoReason.rebootNeeded;
  const P = NuoReason.plan;
  const table: Array<[string, ReturnType<typeof view>, Slot | undefined, Record<string, string>]> = [
    ['Idle, needing nothing', inPhase(Phase.idle), undefined, {}],
    ['never touched, needing nothing', view({}), undefined, {}],
    ['Idle, needing a reboot', inPhase(Phase.idle, needs), undefined, { [C.maintenancePlanned]: R }],
    ['Pending, needing a reboot', inPhase(Phase.pending, needs), undefined, { [C.maintenancePlanned]: R }],
    [
      'Pending, a reboot requested',
      inPhase(Phase.pending, { [A.rebootRequested]: '2026-11-21T11:00:00Z' }),
      undefined,
      { [C.maintenancePlanned]: NuoReason.rebootRequested },
    ],
    [
      'Idle, a reboot requested for later: planned',
      inPhase(Phase.idle, { [A.rebootRequested]: '2026-11-22T11:00:00Z' }),
      undefined,
      { [C.maintenancePlanned]: NuoReason.rebootRequested },
    ],
    [
      'Pending but paused: nothing planned',
      inPhase(Phase.pending, { ...needs, [A.paused]: 'true' }),
      undefined,
      {},
    ],
    [
      'Pending but skipped: nothing planned',
      view({ ...state(Phase.pending, 10), ...needs }, { [L.skipped]: 'true' }),
      undefined,
      {},
    ],
    ['BeforeReboot', inPhase(Phase.beforeReboot, needs), slot(), { [C.maintenancePlanned]: R }],
    [
      'Draining',
      inPhase(Phase.draining, needs),
      slot(),
      { [C.maintenancePlanned]: R, [C.drainInProgress]: R },
    ],
    [
      'RebootGranted',
      inPhase(Phase.rebootGranted, needs),
      slot(),
      { [C.drained]: R, [C.maintenanceInProgress]: R },
    ],
    ['Rebooting', inPhase(Phase.rebooting, needs), slot(), { [C.drained]: R, [C.maintenanceInProgress]: R }],
    [
      'AfterReboot, the need gone',
      inPhase(Phase.afterReboot),
      slot(),
      { [C.drained]: R, [C.maintenanceInProgress]: R },
    ],
    ['Failed', inPhase(Phase.failed, needs), slot(), { [C.drained]: R, [C.maintenanceInProgress]: R }],
    [
      "a Plan's Draining",
      inPhase(Phase.draining, { [A.plan]: 'ops/kernel' }),
      slot(plan('drain')),
      { [C.maintenancePlanned]: P, [C.drainInProgress]: P },
    ],
    [
      "a draining Plan's Upgrading",
      inPhase(Phase.upgrading, { [A.plan]: 'ops/kernel' }),
      slot(plan('drain')),
      { [C.drained]: P, [C.maintenanceInProgress]: P },
    ],
    [
      "a cordoning Plan's Upgrading: not drained",
      inPhase(Phase.upgrading, { [A.plan]: 'ops/kernel' }),
      slot(plan('cordon')),
      { [C.maintenanceInProgress]: P },
    ],
    [
      "a Plan's reboot",
      inPhase(Phase.rebooting, { [A.plan]: 'ops/kernel' }),
      slot(plan('drain', true)),
      { [C.drained]: P, [C.maintenanceInProgress]: P },
    ],
    [
      "a Plan's health gate, not drained",
      inPhase(Phase.afterReboot, { [A.plan]: 'ops/kernel' }),
      slot(plan('none')),
      { [C.maintenanceInProgress]: P },
    ],
    [
      'after the abort: Pending, needing the reboot still',
      inPhase(Phase.pending, needs),
      undefined,
      { [C.maintenancePlanned]: R },
    ],
    [
      'a phase nuo never writes: read as outside an attempt',
      view({ [A.state]: 'Bogus', ...needs }),
      undefined,
      { [C.maintenancePlanned]: R },
    ],
  ];
  for (const [what, n, s, expected] of table) {
    assert.deepEqual(wanted(n, s, true, NOW), expected, what);
  }
  // A node no policy selects carries nothing of nuo's, whatever its phase.
  assert.deepEqual(wanted(inPhase(Phase.draining, needs), slot(), false, NOW), {});
});

test('each message stays the same through the phases that do not change what a consumer sees', () => {
  const messages = (phase: Phase) =>
    wantedConditions(inPhase(phase, needs), slot(), true, NOW).map((c) => `${c.type}: ${c.message}`);
  assert.deepEqual(messages(Phase.rebootGranted), messages(Phase.rebooting));
  assert.deepEqual(messages(Phase.rebooting), messages(Phase.afterReboot));
  assert.notDeepEqual(messages(Phase.afterReboot), messages(Phase.failed), 'Failed says so');
  const [planned] = wantedConditions(inPhase(Phase.pending, needs), undefined, true, NOW);
  assert.match(planned?.message ?? '', /^reboot needed; nuo maintains it when its pool allows/);
});

const T0 = '2026-11-21T11:00:00Z';
const cond = (type: string, reason: string, message = 'm', status = 'True'): V1NodeCondition => ({
  type,
  status,
  reason,
  message,
  lastTransitionTime: T0 as never,
  lastHeartbeatTime: T0 as never,
});
const ready = cond('Ready', 'KubeletReady');
const at = NOW.toISOString();

test("the patch sets and removes nuo's own conditions only, and only what changed", () => {
  const drain = { type: C.drainInProgress, reason: 'NuoRebootNeeded', message: 'm' } as const;
  // New: stamped now.
  assert.deepEqual(lifecyclePatch([ready], [drain], NOW), [
    { ...drain, status: 'True', lastHeartbeatTime: at, lastTransitionTime: at },
  ]);
  // The same: nothing to write (the kubelet's conditions and heartbeat times are not compared).
  assert.deepEqual(lifecyclePatch([ready, cond(C.drainInProgress, 'NuoRebootNeeded')], [drain], NOW), []);
  // Its message changed: rewritten, still True since T0.
  assert.deepEqual(lifecyclePatch([cond(C.drainInProgress, 'NuoRebootNeeded', 'old')], [drain], NOW), [
    { ...drain, status: 'True', lastHeartbeatTime: at, lastTransitionTime: T0 },
  ]);
  // Back to True from False (another nuo version's way of ending): a transition now.
  assert.deepEqual(lifecyclePatch([cond(C.drainInProgress, 'NuoRebootNeeded', 'm', 'False')], [drain], NOW), [
    { ...drain, status: 'True', lastHeartbeatTime: at, lastTransitionTime: at },
  ]);
  // A time the client library parsed into a Date is kept as the same instant.
  const parsed = { ...cond(C.drainInProgress, 'NuoRebootNeeded', 'old'), lastTransitionTime: new Date(T0) };
  assert.equal(
    (lifecyclePatch([parsed], [drain], NOW)[0] as { lastTransitionTime: string }).lastTransitionTime,
    new Date(T0).toISOString(),
  );
  // Not wanted any more: nuo's removed, the kubelet's left alone.
  assert.deepEqual(
    lifecyclePatch([ready, cond(C.drained, 'NuoPlan'), cond(C.maintenanceInProgress, 'NuoPlan')], [], NOW),
    [
      { type: C.drained, $patch: 'delete' },
      { type: C.maintenanceInProgress, $patch: 'delete' },
    ],
  );
});

test("an admin's lifecycle condition is never changed or removed, and nuo does without that one", () => {
  const admin = cond(C.maintenancePlanned, 'AdminRequested', 'hardware swap on Tuesday');
  const planned = { type: C.maintenancePlanned, reason: 'NuoRebootNeeded', message: 'm' } as const;
  assert.deepEqual(lifecyclePatch([ready, admin], [planned], NOW), [], 'not replaced by nuo');
  assert.deepEqual(lifecyclePatch([ready, admin], [], NOW), [], 'not removed by nuo');
  // Nor one without a reason, or False, or Unknown: any other writer's.
  for (const other of [cond(C.drained, ''), cond(C.drained, 'DrainCompleted', 'x', 'False')]) {
    assert.deepEqual(lifecyclePatch([other], [], NOW), []);
  }
  assert.equal(ownedByNuo({ reason: 'NuoPlan' }), true);
  assert.equal(ownedByNuo({ reason: 'AdminRequested' }), false);
  assert.equal(ownedByNuo({}), false);
});

test('a kubelet heartbeat is not a change of the lifecycle conditions; a new reason or a removal is', () => {
  const withConds = (conditions: V1NodeCondition[]) => ({ ...node('n'), status: { conditions } });
  const a = withConds([ready, cond(C.drained, 'NuoPlan')]);
  const beat = withConds([{ ...ready, lastHeartbeatTime: at as never }, cond(C.drained, 'NuoPlan')]);
  assert.equal(sameLifecycle(a, beat), true);
  assert.equal(sameLifecycle(a, withConds([ready])), false);
  assert.equal(sameLifecycle(a, withConds([ready, cond(C.drained, 'AdminRequested')])), false);
});
