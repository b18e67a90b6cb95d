import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Node } from '@kubernetes/client-node';
import { Annotations, planLabel } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import type { RunPlan } from '../../src/sim/chaos-plan.ts';
import type { ChaosPools } from '../../src/sim/chaos-policies.ts';
import { progress } from '../../src/sim/chaos-progress.ts';
import { UPGRADE_NAME, UPGRADE_REF } from '../../src/sim/chaos-upgrade.ts';

const ZONE = 'topology.kubernetes.io/zone';
const node = (
  name: string,
  annotations: Record<string, string>,
  labels: Record<string, string> = {},
): V1Node => ({
  metadata: { name, annotations, labels },
});
const run = (over: Partial<RunPlan> = {}): RunPlan => ({
  seed: 1,
  nodes: ['a', 'b', 'c'],
  maxUnavailable: 2,
  updates: [
    { node: 'a', rebootMs: 300 },
    { node: 'b', rebootMs: 300 },
  ],
  faults: [],
  boundMs: 60_000,
  ...over,
});
const idle = (name: string, labels: Record<string, string> = {}) =>
  node(name, { [Annotations.state]: Phase.idle }, labels);
const once = () => 1;

test('done: every planned node rebooted once and Idle; not while one is left', () => {
  assert.equal(progress([idle('a'), idle('b'), idle('c')], run(), once, undefined).done, true);
  const waiting = node('b', { [Annotations.state]: Phase.pending, [Annotations.rebootNeeded]: 'true' });
  assert.equal(
    progress([idle('a'), waiting, idle('c')], run(), (n) => (n === 'a' ? 1 : 0), undefined).done,
    false,
  );
});

test('a node waiting for the zone the never-returning node holds is an expected stall', () => {
  const pools: ChaosPools = {
    poolOf: new Map([
      ['a', 'p'],
      ['b', 'p'],
      ['c', 'p'],
    ]),
    budgets: [],
  };
  const failed = node('a', { [Annotations.state]: Phase.failed }, { [ZONE]: 'z1' });
  const stalled = node(
    'b',
    {
      [Annotations.state]: Phase.pending,
      [Annotations.stateReason]: 'waiting for a free slot in zone z1 (maxUnavailablePerZone 1)',
    },
    { [ZONE]: 'z1' },
  );
  const p = run({ neverReturns: 'a' });
  assert.equal(progress([failed, stalled, idle('c')], p, () => 0, pools).done, true);
  const otherReason = node(
    'b',
    { [Annotations.state]: Phase.pending, [Annotations.stateReason]: 'waiting: node is NotReady' },
    { [ZONE]: 'z1' },
  );
  assert.equal(progress([failed, otherReason, idle('c')], p, () => 0, pools).done, false);
});

test('with an upgrade Plan: done once every node that returned carries its hash; a Plan whose only place the failed node holds stalls the rest', () => {
  const hash = 'h1';
  const applied = (name: string) => idle(name, { [planLabel(UPGRADE_NAME)]: hash });
  const upgrade = { hash, concurrency: 1 };
  assert.equal(
    progress([applied('a'), applied('b'), applied('c')], run(), once, undefined, upgrade).done,
    true,
  );
  assert.equal(
    progress([applied('a'), applied('b'), idle('c')], run(), once, undefined, upgrade).done,
    false,
    'c not applied',
  );
  assert.equal(
    progress([applied('a'), applied('b'), applied('c')], run(), once, undefined, {
      hash: undefined,
      concurrency: 1,
    }).done,
    false,
    'the Plan not resolved yet',
  );
  const failedInPlan = node('a', { [Annotations.state]: Phase.failed, [Annotations.plan]: UPGRADE_REF });
  const waitsForPlan = (name: string) =>
    node(name, {
      [Annotations.state]: Phase.pending,
      [Annotations.stateReason]: `waiting: Plan ${UPGRADE_REF} runs on 1 node(s), its concurrency`,
    });
  const p = run({ neverReturns: 'a' });
  assert.equal(
    progress([failedInPlan, waitsForPlan('b'), waitsForPlan('c')], p, () => 0, undefined, upgrade).done,
    true,
  );
  assert.equal(
    progress([failedInPlan, waitsForPlan('b'), waitsForPlan('c')], p, () => 0, undefined, {
      hash,
      concurrency: 2,
    }).done,
    false,
    'a concurrency of 2 leaves a place: no stall',
  );
});
