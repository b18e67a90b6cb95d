import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Node } from '@kubernetes/client-node';
import { Annotations as A, LifecycleConditions as C, ScaleDownProtection as P } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import { lifecycleLeft, protectionLeft } from '../../src/sim/checker-phases.ts';

const node = (annotations: Record<string, string>, ...conditions: [string, string][]): V1Node => ({
  metadata: { name: 'node-0', annotations },
  status: {
    conditions: [
      { type: 'Ready', status: 'True', reason: 'KubeletReady' },
      ...conditions.map(([type, reason]) => ({ type, status: 'True', reason })),
    ],
  },
});

test("the checker finds nuo's lifecycle conditions left outside an attempt, and nothing else", () => {
  const cases: [string, V1Node, string[]][] = [
    ['in an attempt: any', node({ [A.state]: Phase.rebooting }, [C.drained, 'NuoRebootNeeded']), []],
    ['Idle, none', node({ [A.state]: Phase.idle }), []],
    [
      'Idle after the attempt: left behind',
      node({ [A.state]: Phase.idle }, [C.drained, 'NuoRebootNeeded'], [C.maintenanceInProgress, 'NuoPlan']),
      ['Drained=True (NuoRebootNeeded)', 'MaintenanceInProgress=True (NuoPlan)'],
    ],
    ['Pending, planned', node({ [A.state]: Phase.pending }, [C.maintenancePlanned, 'NuoRebootNeeded']), []],
    [
      'Pending after an abort, still draining: left behind',
      node({ [A.state]: Phase.pending }, [C.drainInProgress, 'NuoRebootNeeded']),
      ['DrainInProgress=True (NuoRebootNeeded)'],
    ],
    [
      'Idle but needing a reboot: planned',
      node({ [A.state]: Phase.idle, [A.rebootNeeded]: 'true' }, [C.maintenancePlanned, 'NuoRebootNeeded']),
      [],
    ],
    [
      'Idle, needing nothing: planned is left behind',
      node({ [A.state]: Phase.idle }, [C.maintenancePlanned, 'NuoRebootNeeded']),
      ['MaintenancePlanned=True (NuoRebootNeeded)'],
    ],
    [
      "an admin's: not nuo's to remove",
      node({ [A.state]: Phase.idle }, [C.maintenancePlanned, 'AdminRequested']),
      [],
    ],
  ];
  for (const [what, n, want] of cases) assert.deepEqual(lifecycleLeft(n), want, what);
});

test("the checker finds the autoscalers' protection nuo set left outside an attempt, and nothing else", () => {
  const ca = P.clusterAutoscaler;
  const both = { [ca]: 'true', [P.karpenter]: 'true', [A.scaleDownProtection]: `${ca},${P.karpenter}` };
  const cases: [string, Record<string, string>, Set<string>, string[]][] = [
    ['in an attempt: nuo protects it', { [A.state]: Phase.draining, ...both }, new Set(), []],
    ['Idle, none', { [A.state]: Phase.idle }, new Set(), []],
    [
      'Idle after the attempt: left behind, with the record',
      { [A.state]: Phase.idle, ...both },
      new Set(),
      [A.scaleDownProtection, ca, P.karpenter],
    ],
    [
      'Pending after an abort: an annotation left without its record',
      { [A.state]: Phase.pending, [P.karpenter]: 'true' },
      new Set(),
      [P.karpenter],
    ],
    [
      "a person's, there before the rollout: not nuo's",
      { [A.state]: Phase.idle, [ca]: 'true' },
      new Set([ca]),
      [],
    ],
  ];
  for (const [what, annotations, before, want] of cases)
    assert.deepEqual(protectionLeft(node(annotations), before), want, what);
});
