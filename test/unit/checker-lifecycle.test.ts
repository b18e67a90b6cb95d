import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Node } from '@kubernetes/client-node';
import { Annotations as A, LifecycleConditions as C } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import { lifecycleLeft } from '../../src/sim/checker-phases.ts';

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
