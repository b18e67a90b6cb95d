import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { generateGrantKey, signGrant } from '../../src/api/grant.ts';
import { Annotations, JobLabels } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import { inAttemptPhase } from '../../src/sim/checker-phases.ts';
import {
  isPlanReboot,
  nodeOfPlanPod,
  planAttemptOf,
  planConcurrencyBreaches,
  planNodes,
  planOfPod,
  ranAt,
} from '../../src/sim/checker-plans.ts';

const node = (name: string, annotations: Record<string, string> = {}): V1Node => ({
  metadata: { name, annotations },
});

interface PodFields {
  plan?: string;
  node?: string;
  phase?: string;
  startTime?: string;
  finishedAt?: string[];
  namespace?: string;
}

const pod = ({
  plan = 'kernel',
  node,
  phase = 'Running',
  startTime,
  finishedAt,
  namespace = 'nuo-system',
}: PodFields): V1Pod => ({
  metadata: {
    name: `${plan}-${node}`,
    namespace,
    uid: `${plan}-${node}-${phase}`,
    labels: plan ? { [JobLabels.plan]: plan } : {},
  },
  spec: { containers: [], ...(node ? { nodeName: node } : {}) },
  status: {
    phase,
    ...(startTime ? { startTime: new Date(startTime) } : {}),
    ...(finishedAt
      ? {
          containerStatuses: finishedAt.map((t, i) => ({
            name: `c${i}`,
            image: 'x',
            imageID: '',
            ready: false,
            restartCount: 0,
            state: { terminated: { exitCode: 0, finishedAt: new Date(t) } },
          })),
        }
      : {}),
  },
});

test('a pod belongs to the Plan its label names, in its own namespace', () => {
  assert.equal(planOfPod(pod({ plan: 'kernel', node: 'n' })), 'nuo-system/kernel');
  assert.equal(planOfPod(pod({ plan: 'kernel', node: 'n', namespace: 'ops' })), 'ops/kernel');
  assert.equal(planOfPod(pod({ plan: '', node: 'n' })), undefined);
});

test("a Plan's prepare pod, run before its attempt, is no attempt's: not disrupting, not counted, its reboot not the Plan's", () => {
  const prepare = (containers: string[], init: string[] = []): V1Pod => {
    const p = pod({ node: 'n' });
    return {
      ...p,
      metadata: { ...p.metadata, labels: { ...p.metadata?.labels, [JobLabels.stage]: 'prepare' } },
      spec: {
        nodeName: 'n',
        containers: containers.map((name) => ({ name })),
        ...(init.length ? { initContainers: init.map((name) => ({ name })) } : {}),
      },
    };
  };
  const alone = prepare(['prepare']);
  assert.equal(planOfPod(alone), undefined);
  assert.equal(nodeOfPlanPod(alone), undefined);
  assert.deepEqual(planNodes('nuo-system/kernel', [], [alone]), []);
  assert.equal(isPlanReboot('n', node('n'), [alone], new Date()), false, 'a reboot then is no Plan’s');
  // Labelled a prepare but running more than the prepare: taken as the attempt's (fail closed).
  for (const [what, p] of [
    ['an upgrade container', prepare(['upgrade'])],
    ['prepare beside another', prepare(['prepare', 'upgrade'])],
    ['prepare as an init container', prepare(['upgrade'], ['prepare'])],
  ] as const)
    assert.equal(nodeOfPlanPod(p), 'n', what);
});

test("a Plan Job's pod disrupts its node while bound there and not finished", () => {
  const cases: [string, V1Pod, string | undefined][] = [
    ['running', pod({ node: 'n' }), 'n'],
    ['pending, bound', pod({ node: 'n', phase: 'Pending' }), 'n'],
    ['pending, not yet scheduled', pod({ phase: 'Pending' }), undefined],
    ['succeeded', pod({ node: 'n', phase: 'Succeeded' }), undefined],
    ['failed', pod({ node: 'n', phase: 'Failed' }), undefined],
    ['not a Plan Job pod', pod({ plan: '', node: 'n' }), undefined],
  ];
  for (const [what, p, want] of cases) assert.equal(nodeOfPlanPod(p), want, what);
});

test('Upgrading is a phase of an attempt', () => {
  assert.equal(inAttemptPhase(node('n', { [Annotations.state]: Phase.upgrading })), true);
  assert.equal(inAttemptPhase(node('n', { [Annotations.state]: Phase.pending })), false);
});

test("a Plan's nodes: those its attempts name in an attempt's phase, and those running its Job's pods", () => {
  const nodes = [
    node('a', { [Annotations.plan]: 'nuo-system/kernel', [Annotations.state]: Phase.draining }),
    node('b', { [Annotations.plan]: 'nuo-system/kernel', [Annotations.state]: Phase.idle }),
    node('c', { [Annotations.plan]: 'nuo-system/other', [Annotations.state]: Phase.upgrading }),
    node('d'),
    node('e'),
  ];
  const pods = [
    pod({ node: 'a' }),
    pod({ node: 'd' }),
    pod({ node: 'e', phase: 'Succeeded' }),
    pod({ plan: 'other', node: 'e' }),
  ];
  assert.deepEqual(planNodes('nuo-system/kernel', nodes, pods), ['a', 'd']);
  assert.deepEqual(planNodes('nuo-system/other', nodes, pods), ['c', 'e']);
  assert.deepEqual(planNodes('ops/kernel', nodes, pods), []);
});

test('plan-concurrency: a Plan with more nodes in its attempts than its max, and only such a Plan', () => {
  const nodes = [
    node('a', { [Annotations.plan]: 'nuo-system/kernel', [Annotations.state]: Phase.upgrading }),
    node('b', { [Annotations.plan]: 'nuo-system/kernel', [Annotations.state]: Phase.afterReboot }),
    node('c'),
  ];
  const plans = [
    { name: 'nuo-system/kernel', max: 2 },
    { name: 'nuo-system/other', max: 1 },
  ];
  assert.deepEqual(planConcurrencyBreaches(plans, nodes, []), []);
  // A pod of its Job on a third node: three at once, over its 2.
  assert.deepEqual(planConcurrencyBreaches(plans, nodes, [pod({ node: 'c' })]), [
    { plan: { name: 'nuo-system/kernel', max: 2 }, nodes: ['a', 'b', 'c'] },
  ]);
  // Its finished pod no longer counts; another Plan's pod counts for that Plan alone.
  assert.deepEqual(
    planConcurrencyBreaches(plans, nodes, [
      pod({ node: 'c', phase: 'Succeeded' }),
      pod({ plan: 'other', node: 'c' }),
    ]),
    [],
  );
});

test("a Job's pod ran at a moment: running then, or started before it and finished no earlier than its second", () => {
  const at = new Date('2026-01-05T10:00:10.700Z');
  const cases: [string, V1Pod, boolean][] = [
    ['running', pod({ node: 'n' }), true],
    ['pending', pod({ node: 'n', phase: 'Pending' }), false],
    [
      'finished in the same second',
      pod({
        node: 'n',
        phase: 'Succeeded',
        startTime: '2026-01-05T10:00:09Z',
        finishedAt: ['2026-01-05T10:00:10Z'],
      }),
      true,
    ],
    [
      'failed later',
      pod({
        node: 'n',
        phase: 'Failed',
        startTime: '2026-01-05T10:00:09Z',
        finishedAt: ['2026-01-05T10:00:12Z'],
      }),
      true,
    ],
    [
      'finished a second before',
      pod({
        node: 'n',
        phase: 'Succeeded',
        startTime: '2026-01-05T10:00:01Z',
        finishedAt: ['2026-01-05T10:00:09Z'],
      }),
      false,
    ],
    [
      'one container finished before',
      pod({
        node: 'n',
        phase: 'Succeeded',
        startTime: '2026-01-05T10:00:01Z',
        finishedAt: ['2026-01-05T10:00:12Z', '2026-01-05T10:00:05Z'],
      }),
      false,
    ],
    [
      'started after',
      pod({
        node: 'n',
        phase: 'Succeeded',
        startTime: '2026-01-05T10:00:11Z',
        finishedAt: ['2026-01-05T10:00:12Z'],
      }),
      false,
    ],
    ['finished, no times', pod({ node: 'n', phase: 'Succeeded' }), false],
    ['not a Plan Job pod', pod({ plan: '', node: 'n' }), false],
  ];
  for (const [what, p, want] of cases) assert.equal(ranAt(p, at), want, what);
});

test("a reboot is a Plan's own when its node is Upgrading or a Plan Job's pod ran on it then", () => {
  const at = new Date();
  const upgrading = node('n', { [Annotations.state]: Phase.upgrading });
  const granted = node('n', { [Annotations.state]: Phase.rebootGranted });
  // Finished in the second of the reboot (pod times are whole seconds).
  const finishedThen = pod({
    node: 'n',
    phase: 'Succeeded',
    startTime: new Date(at.getTime() - 3000).toISOString(),
    finishedAt: [at.toISOString()],
  });
  const cases: [string, V1Node | undefined, V1Pod[], boolean][] = [
    ['Upgrading, no pod seen yet', upgrading, [], true],
    ['a Plan Job pod running on it', granted, [pod({ node: 'n' })], true],
    ['a Plan Job pod running on another node', granted, [pod({ node: 'm' })], false],
    ['its Plan Job pod only pending', granted, [pod({ node: 'n', phase: 'Pending' })], false],
    ["a reboot nuo granted, and no Plan's", granted, [], false],
    [
      "nuo's reboot for a Plan with reboot: true, in the second its Job's pod finished",
      granted,
      [finishedThen],
      false,
    ],
    [
      'a Job pod that finished as the node rebooted, the node Idle',
      node('n', { [Annotations.state]: Phase.idle }),
      [finishedThen],
      true,
    ],
    ['a node not read, a pod running on it', undefined, [pod({ node: 'n' })], true],
  ];
  for (const [what, n, pods, want] of cases) assert.equal(isPlanReboot('n', n, pods, at), want, what);
});

test('a granted reboot is for a Plan attempt when nuo.dev/plan names a Plan: the attempt its grant names', () => {
  const key = generateGrantKey().privateKey;
  const grant = signGrant(key, { node: 'n', bootId: 'b1', attempt: '2026-01-01T00:00:00.000Z' });
  const cases: [string, Record<string, string>, string | undefined][] = [
    [
      'a Plan’s attempt with its grant',
      { [Annotations.plan]: 'ops/os', [Annotations.rebootOk]: grant },
      'n 2026-01-01T00:00:00.000Z',
    ],
    ['a reboot’s attempt (no Plan named)', { [Annotations.rebootOk]: grant }, undefined],
    ['a Plan named, no grant', { [Annotations.plan]: 'ops/os' }, undefined],
    [
      'a Plan named, junk for a grant',
      { [Annotations.plan]: 'ops/os', [Annotations.rebootOk]: 'true' },
      undefined,
    ],
  ];
  for (const [what, annotations, want] of cases)
    assert.equal(planAttemptOf(node('n', annotations)), want, what);
  assert.equal(planAttemptOf(undefined), undefined, 'a node not read');
});
