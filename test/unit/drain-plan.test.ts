import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { DEFAULT_DRAIN_OPTIONS, drainOptions } from '../../src/drain/options.ts';
import { decidePod, evictionTiers, PodAction, planDrain, Reasons } from '../../src/drain/plan.ts';

const NOW = new Date('2026-11-21T12:00:00Z');

type Controller = 'none' | 'ReplicaSet' | 'DaemonSet' | 'OrphanDaemonSet';
interface PodShape {
  controller?: Controller;
  phase?: 'Pending' | 'Running' | 'Succeeded' | 'Failed';
  mirror?: boolean;
  emptyDir?: boolean;
  /** Seconds since deletion started; undefined = not terminating. */
  deletedSecondsAgo?: number;
}

function pod({
  controller = 'ReplicaSet',
  phase = 'Running',
  mirror,
  emptyDir,
  deletedSecondsAgo,
}: PodShape): V1Pod {
  const owner =
    controller === 'none'
      ? []
      : [
          {
            apiVersion: 'apps/v1',
            kind: controller === 'ReplicaSet' ? 'ReplicaSet' : 'DaemonSet',
            name: controller === 'OrphanDaemonSet' ? 'gone-ds' : controller === 'DaemonSet' ? 'ds' : 'rs',
            uid: 'owner-uid',
            controller: true,
          },
        ];
  return {
    metadata: {
      namespace: 'ns',
      name: 'p',
      uid: 'pod-uid',
      ownerReferences: owner,
      annotations: mirror ? { 'kubernetes.io/config.mirror': 'hash' } : {},
      ...(deletedSecondsAgo === undefined
        ? {}
        : { deletionTimestamp: new Date(NOW.getTime() - deletedSecondsAgo * 1000) }),
    },
    spec: {
      containers: [{ name: 'c' }],
      volumes: emptyDir ? [{ name: 'scratch', emptyDir: {} }] : [{ name: 'cfg', configMap: { name: 'x' } }],
    },
    status: { phase },
  };
}

type Opts = { force?: boolean; ignoreDaemonSets?: boolean; deleteEmptyDirData?: boolean; skipWait?: number };
function decide(shape: PodShape, o: Opts = {}) {
  return decidePod(pod(shape), {
    options: {
      force: o.force ?? false,
      ignoreDaemonSets: o.ignoreDaemonSets ?? false,
      deleteEmptyDirData: o.deleteEmptyDirData ?? false,
      skipWaitForDeleteTimeoutSeconds: o.skipWait ?? 0,
    },
    daemonSets: new Set(['ns/ds']),
    now: NOW,
  });
}

describe('drain planner: kubectl drain filters', () => {
  const table: Array<{ name: string; pod: PodShape; opts?: Opts; action: PodAction; reason?: string }> = [
    { name: 'ReplicaSet pod is evicted', pod: {}, action: PodAction.evict },
    {
      name: 'unmanaged pod refuses without force',
      pod: { controller: 'none' },
      action: PodAction.refuse,
      reason: Reasons.unmanagedRefused,
    },
    {
      name: 'unmanaged pod is evicted with force',
      pod: { controller: 'none' },
      opts: { force: true },
      action: PodAction.evict,
      reason: Reasons.unmanagedForced,
    },
    {
      name: 'DaemonSet pod refuses without ignoreDaemonSets',
      pod: { controller: 'DaemonSet' },
      action: PodAction.refuse,
      reason: Reasons.daemonSetRefused,
    },
    {
      name: 'DaemonSet pod is skipped with ignoreDaemonSets',
      pod: { controller: 'DaemonSet' },
      opts: { ignoreDaemonSets: true },
      action: PodAction.skip,
      reason: Reasons.daemonSet,
    },
    {
      name: 'force does not evict a live DaemonSet pod',
      pod: { controller: 'DaemonSet' },
      opts: { force: true, ignoreDaemonSets: true },
      action: PodAction.skip,
      reason: Reasons.daemonSet,
    },
    {
      name: 'orphaned DaemonSet pod refuses without force',
      pod: { controller: 'OrphanDaemonSet' },
      opts: { ignoreDaemonSets: true },
      action: PodAction.refuse,
      reason: Reasons.orphanDaemonSetRefused,
    },
    {
      name: 'orphaned DaemonSet pod is evicted with force',
      pod: { controller: 'OrphanDaemonSet' },
      opts: { force: true },
      action: PodAction.evict,
      reason: Reasons.orphanDaemonSetForced,
    },
    {
      name: 'mirror pod is skipped',
      pod: { controller: 'none', mirror: true },
      action: PodAction.skip,
      reason: Reasons.mirror,
    },
    {
      name: 'emptyDir pod refuses without deleteEmptyDirData',
      pod: { emptyDir: true },
      action: PodAction.refuse,
      reason: Reasons.localStorageRefused,
    },
    {
      name: 'emptyDir pod is evicted with deleteEmptyDirData',
      pod: { emptyDir: true },
      opts: { deleteEmptyDirData: true },
      action: PodAction.evict,
      reason: Reasons.localStorageDeleted,
    },
    {
      name: 'emptyDir is checked before the controller',
      pod: { emptyDir: true, controller: 'none' },
      opts: { force: true },
      action: PodAction.refuse,
      reason: Reasons.localStorageRefused,
    },
    {
      name: 'unmanaged emptyDir pod needs both overrides',
      pod: { emptyDir: true, controller: 'none' },
      opts: { force: true, deleteEmptyDirData: true },
      action: PodAction.evict,
      reason: Reasons.localStorageDeleted,
    },
    {
      name: 'DaemonSet emptyDir pod is skipped before emptyDir is checked',
      pod: { controller: 'DaemonSet', emptyDir: true },
      opts: { ignoreDaemonSets: true },
      action: PodAction.skip,
      reason: Reasons.daemonSet,
    },
    {
      name: 'Succeeded pod is skipped',
      pod: { phase: 'Succeeded', controller: 'none', emptyDir: true },
      action: PodAction.skip,
      reason: Reasons.finished,
    },
    {
      name: 'Failed pod is skipped',
      pod: { phase: 'Failed' },
      action: PodAction.skip,
      reason: Reasons.finished,
    },
    { name: 'Pending pod is evicted', pod: { phase: 'Pending' }, action: PodAction.evict },
    {
      name: 'terminating pod is waited for',
      pod: { deletedSecondsAgo: 5, controller: 'none' },
      action: PodAction.wait,
      reason: Reasons.terminating,
    },
    {
      name: 'terminating pod within skipWait is waited for',
      pod: { deletedSecondsAgo: 5 },
      opts: { skipWait: 10 },
      action: PodAction.wait,
      reason: Reasons.terminating,
    },
    {
      name: 'terminating pod beyond skipWait is skipped',
      pod: { deletedSecondsAgo: 30 },
      opts: { skipWait: 10 },
      action: PodAction.skip,
      reason: 'terminating for 30s, longer than skipWaitForDeleteTimeout (10s)',
    },
  ];
  for (const row of table) {
    test(row.name, () => {
      const got = decide(row.pod, row.opts);
      assert.equal(got.action, row.action);
      assert.equal(got.reason, row.reason);
    });
  }
});

describe('drain planner: invariants over every pod shape and option combination', () => {
  const shapes: PodShape[] = [];
  for (const controller of ['none', 'ReplicaSet', 'DaemonSet', 'OrphanDaemonSet'] as const)
    for (const phase of ['Pending', 'Running', 'Succeeded', 'Failed'] as const)
      for (const mirror of [false, true])
        for (const emptyDir of [false, true])
          for (const deletedSecondsAgo of [undefined, 5, 60])
            shapes.push({ controller, phase, mirror, emptyDir, deletedSecondsAgo });
  const optionSets: Opts[] = [];
  for (const force of [false, true])
    for (const ignoreDaemonSets of [false, true])
      for (const deleteEmptyDirData of [false, true])
        for (const skipWait of [0, 30])
          optionSets.push({ force, ignoreDaemonSets, deleteEmptyDirData, skipWait });

  test(`${shapes.length} pod shapes × ${optionSets.length} option sets`, () => {
    let checked = 0;
    for (const shape of shapes) {
      for (const o of optionSets) {
        const { action } = decide(shape, o);
        const where = `${JSON.stringify(shape)} ${JSON.stringify(o)} → ${action}`;
        const terminating = shape.deletedSecondsAgo !== undefined;
        const finished = shape.phase === 'Succeeded' || shape.phase === 'Failed';
        // A terminating pod is never evicted again: waited for, or skipped past skipWait.
        if (terminating) {
          const expired = (o.skipWait ?? 0) > 0 && (shape.deletedSecondsAgo ?? 0) > (o.skipWait ?? 0);
          assert.equal(action, expired ? PodAction.skip : PodAction.wait, where);
        } else if (finished || shape.mirror) {
          assert.equal(action, PodAction.skip, where);
        } else {
          // A live pod is refused exactly when one of kubectl's guards applies and its override is off.
          const dsGuard = shape.controller === 'DaemonSet' && !o.ignoreDaemonSets;
          const orphanGuard = shape.controller === 'OrphanDaemonSet' && !o.force;
          const emptyDirGuard =
            shape.emptyDir === true &&
            !o.deleteEmptyDirData &&
            !(shape.controller === 'DaemonSet' && o.ignoreDaemonSets);
          const unmanagedGuard = shape.controller === 'none' && !o.force;
          const refused = dsGuard || orphanGuard || emptyDirGuard || unmanagedGuard;
          assert.equal(action === PodAction.refuse, refused, where);
          if (!refused) {
            const skipDs = shape.controller === 'DaemonSet' && o.ignoreDaemonSets;
            assert.equal(action, skipDs ? PodAction.skip : PodAction.evict, where);
          }
        }
        // Turning an override on never turns an allowed pod into a refused one.
        if (action !== PodAction.refuse) {
          for (const key of ['force', 'ignoreDaemonSets', 'deleteEmptyDirData'] as const) {
            assert.notEqual(
              decide(shape, { ...o, [key]: true }).action,
              PodAction.refuse,
              `${where} +${key}`,
            );
          }
        }
        checked++;
      }
    }
    assert.equal(checked, shapes.length * optionSets.length);
  });
});

describe('planDrain', () => {
  test('proceeds only when no pod refuses, and keeps every decision', () => {
    const ok = planDrain({
      pods: [pod({}), pod({ controller: 'DaemonSet' })],
      options: { ...DEFAULT_DRAIN_OPTIONS, ignoreDaemonSets: true },
      daemonSets: new Set(['ns/ds']),
      now: NOW,
    });
    assert.equal(ok.canProceed, true);
    assert.deepEqual(
      ok.decisions.map((d) => d.action),
      [PodAction.evict, PodAction.skip],
    );
    const blocked = planDrain({
      pods: [pod({}), pod({ controller: 'none' })],
      options: DEFAULT_DRAIN_OPTIONS,
      daemonSets: new Set(),
      now: NOW,
    });
    assert.equal(blocked.canProceed, false);
  });
});

describe('drain planner: a pod that asks not to be disrupted (nuo.dev/do-not-disrupt)', () => {
  const asking = (value: string, start = '2026-11-21T10:00:00Z', shape: PodShape = {}): V1Pod => {
    const p = pod(shape);
    return {
      ...p,
      metadata: { ...p.metadata, name: 'db', annotations: { 'nuo.dev/do-not-disrupt': value } },
      status: { ...p.status, startTime: new Date(start) },
    };
  };
  const plan = (...pods: V1Pod[]) =>
    planDrain({ pods, options: DEFAULT_DRAIN_OPTIONS, daemonSets: new Set(['ns/ds']), now: NOW });

  test('refuses while it holds, naming it; the drain is held, not refused for its options', () => {
    const table: [string, V1Pod, string | undefined][] = [
      ['"true"', asking('true'), 'pod ns/db has nuo.dev/do-not-disrupt="true"'],
      [
        '"4h" from a start 2 h ago',
        asking('4h'),
        'pod ns/db has nuo.dev/do-not-disrupt="4h" until 2026-11-21T14:00:00.000Z',
      ],
      ['"1h" from a start 2 h ago: over, evicted', asking('1h'), undefined],
      ['a bad value holds like "true"', asking('soon'), 'pod ns/db has nuo.dev/do-not-disrupt="soon"'],
      ['a finished pod asks nothing', asking('true', undefined, { phase: 'Succeeded' }), undefined],
    ];
    for (const [what, p, reason] of table) {
      const d = plan(p);
      if (reason === undefined) {
        assert.equal(d.canProceed, true, what);
        assert.equal(d.held, false, what);
        continue;
      }
      assert.deepEqual(
        d.decisions.map(({ action, reason, doNotDisrupt }) => ({ action, reason, doNotDisrupt })),
        [{ action: PodAction.refuse, reason, doNotDisrupt: true }],
        what,
      );
      assert.equal(d.canProceed, false, what);
      assert.equal(d.held, true, what);
    }
  });

  test('a drain that the options refuse too is refused, not held: that one is a failure', () => {
    const d = plan(asking('true'), pod({ controller: 'none' }));
    assert.equal(d.canProceed, false);
    assert.equal(d.held, false);
  });
});

describe('drainOptions', () => {
  test('fills defaults: bounded by a timeout, DaemonSets left in place', () => {
    const o = drainOptions();
    assert.equal(o.timeoutSeconds, 600);
    assert.equal(o.ignoreDaemonSets, true);
    assert.equal(o.disableEviction, false);
  });
  test('rejects invalid values with every problem named', () => {
    assert.throws(
      () => drainOptions({ timeoutSeconds: -1, concurrency: 0, gracePeriodSeconds: 1.5 }),
      /gracePeriodSeconds must be an integer ≥ -1, got 1.5; timeoutSeconds must be an integer ≥ 0, got -1; concurrency must be an integer ≥ 1, got 0/,
    );
    assert.throws(() => drainOptions({ force: 'yes' as unknown as boolean }), /force must be true or false/);
  });
});

test('evictionTiers: equal priorities together, lowest first, none read as 0', () => {
  const p = (name: string, priority?: number) => ({ name, ...(priority === undefined ? {} : { priority }) });
  const table: Array<[string, ReturnType<typeof p>[], string[][]]> = [
    ['nothing to evict', [], []],
    ['one tier when no pod has a priority', [p('a'), p('b')], [['a', 'b']]],
    [
      'critical pods last, a negative priority first, no priority as 0',
      [p('dns', 2000000000), p('web'), p('batch', -10), p('api', 0), p('agent', 2000001000), p('db', 1000)],
      [['batch'], ['web', 'api'], ['db'], ['dns'], ['agent']],
    ],
  ];
  for (const [name, pods, want] of table)
    assert.deepEqual(
      evictionTiers(pods).map((tier) => tier.map((x) => x.name)),
      want,
      name,
    );
});

test("planDrain carries each pod's priority to its decision, when it has one", () => {
  const pod = (name: string, priority?: number): V1Pod => ({
    metadata: {
      name,
      namespace: 'ns',
      uid: name,
      ownerReferences: [
        { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs', uid: 'rs', controller: true },
      ],
    },
    spec: { containers: [], ...(priority === undefined ? {} : { priority }) },
  });
  const plan = planDrain({
    pods: [pod('a', 5), pod('b')],
    options: DEFAULT_DRAIN_OPTIONS,
    daemonSets: new Set(),
    now: new Date(),
  });
  assert.deepEqual(
    plan.decisions.map((d) => [d.name, d.action, d.priority]),
    [
      ['a', PodAction.evict, 5],
      ['b', PodAction.evict, undefined],
    ],
  );
  assert.equal('priority' in (plan.decisions[1] ?? {}), false);
});
