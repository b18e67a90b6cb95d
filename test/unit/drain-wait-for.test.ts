import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { DEFAULT_DRAIN_OPTIONS, drainOptions } from '../../src/drain/options.ts';
import { PodAction, planDrain } from '../../src/drain/plan.ts';
import {
  AfterMaxWait,
  describeWait,
  type PodWait,
  type WaitFor,
  waitForProblems,
  waitOf,
  waitsDue,
} from '../../src/drain/wait-for.ts';

const SINCE = new Date('2026-11-27T12:00:00Z');
const NOW = new Date('2026-11-27T12:10:00Z');

const rule = (over: Partial<WaitFor> = {}): WaitFor => ({
  name: 'drain.waitFor[0]',
  selector: 'kind=batch',
  namespaceSelector: '',
  maxWaitSeconds: 3600,
  afterMaxWait: AfterMaxWait.evict,
  ...over,
});

interface Shape {
  labels?: Record<string, string>;
  namespace?: string;
  owner?: 'Job' | 'DaemonSet' | 'none';
  emptyDir?: boolean;
  doNotDisrupt?: boolean;
  deleting?: boolean;
  phase?: 'Running' | 'Succeeded';
}

function pod({
  labels = { kind: 'batch' },
  namespace = 'etl',
  owner = 'Job',
  emptyDir,
  doNotDisrupt,
  deleting,
  phase = 'Running',
}: Shape): V1Pod {
  return {
    metadata: {
      name: 'p',
      namespace,
      uid: 'uid-p',
      labels,
      ...(doNotDisrupt ? { annotations: { 'nuo.dev/do-not-disrupt': 'true' } } : {}),
      ...(deleting ? { deletionTimestamp: new Date(NOW.getTime() - 1000) } : {}),
      ownerReferences:
        owner === 'none' ? [] : [{ apiVersion: 'v1', kind: owner, name: 'o', uid: 'o', controller: true }],
    },
    spec: {
      containers: [{ name: 'c' }],
      ...(emptyDir ? { volumes: [{ name: 'tmp', emptyDir: {} }] } : {}),
    },
    status: { phase },
  };
}

const NAMESPACES = new Map([
  ['etl', { tier: 'data' }],
  ['web', { tier: 'front' }],
]);

describe('waitOf: the first matching rule, and until when', () => {
  const table: { name: string; pod: Shape; rules: WaitFor[]; want?: PodWait }[] = [
    {
      name: 'a pod its selector matches is waited for maxWait from the start of the drain',
      pod: {},
      rules: [rule()],
      want: { rule: 'drain.waitFor[0]', until: SINCE.getTime() + 3_600_000, afterMaxWait: 'Evict' },
    },
    { name: 'a pod it does not match is not', pod: { labels: { kind: 'web' } }, rules: [rule()] },
    {
      name: "the namespace's labels must match its namespace selector",
      pod: { namespace: 'web' },
      rules: [rule({ namespaceSelector: 'tier=data' })],
    },
    {
      name: 'a namespace whose labels were not read matches no namespace selector',
      pod: { namespace: 'unknown' },
      rules: [rule({ namespaceSelector: 'tier=data' })],
    },
    {
      name: 'the first rule that matches applies',
      pod: { namespace: 'etl' },
      rules: [
        rule({ name: 'drain.waitFor[0]', namespaceSelector: 'tier=front' }),
        rule({ name: 'drain.waitFor[1]', maxWaitSeconds: 60, afterMaxWait: 'Fail' }),
        rule({ name: 'drain.waitFor[2]' }),
      ],
      want: { rule: 'drain.waitFor[1]', until: SINCE.getTime() + 60_000, afterMaxWait: 'Fail' },
    },
  ];
  for (const row of table)
    test(row.name, () => {
      const got = waitOf(pod(row.pod), { rules: row.rules, namespaceLabels: NAMESPACES, since: SINCE });
      assert.deepEqual(got, row.want);
    });
});

describe('planDrain with waitFor: only pods it would evict are waited for', () => {
  const table: { name: string; pod: Shape; force?: boolean; action: PodAction }[] = [
    { name: 'a Job pod the rule matches is left running', pod: {}, action: PodAction.waitFor },
    { name: 'a pod the rule does not match is evicted', pod: { labels: {} }, action: PodAction.evict },
    {
      name: 'a pod the options refuse still refuses (it may have to be evicted after its wait)',
      pod: { emptyDir: true },
      action: PodAction.refuse,
    },
    {
      name: 'an unmanaged pod is waited for with force',
      pod: { owner: 'none' },
      force: true,
      action: PodAction.waitFor,
    },
    {
      name: 'a pod that asks not to be disrupted still holds',
      pod: { doNotDisrupt: true },
      action: PodAction.refuse,
    },
    { name: 'a DaemonSet pod is left as ever', pod: { owner: 'DaemonSet' }, action: PodAction.skip },
    {
      name: 'a pod already terminating is waited for as ever',
      pod: { deleting: true },
      action: PodAction.wait,
    },
    { name: 'a pod that finished is skipped', pod: { phase: 'Succeeded' }, action: PodAction.skip },
  ];
  for (const row of table)
    test(row.name, () => {
      const plan = planDrain({
        pods: [pod(row.pod)],
        options: { ...DEFAULT_DRAIN_OPTIONS, force: row.force ?? false },
        daemonSets: new Set(['etl/o']),
        now: NOW,
        waitFor: { rules: [rule()], namespaceLabels: NAMESPACES, since: SINCE },
      });
      const [d] = plan.decisions;
      assert.equal(d?.action, row.action);
      assert.equal(d?.wait !== undefined, row.action === PodAction.waitFor);
    });
});

describe('waitsDue: which waits ended, and the next end', () => {
  const at = (minutes: number) => SINCE.getTime() + minutes * 60_000;
  const w = (uid: string, minutes: number, afterMaxWait: 'Evict' | 'Fail' = 'Evict') => ({
    uid,
    wait: { rule: 'r', until: at(minutes), afterMaxWait },
  });
  const table = [
    { name: 'nothing waited for', waited: [], now: 0, want: { evict: [], fail: [] } },
    {
      name: 'a wait still running',
      waited: [w('a', 30)],
      now: 10,
      want: { evict: [], fail: [], nextAt: at(30) },
    },
    { name: 'a wait ending now is due', waited: [w('a', 10)], now: 10, want: { evict: ['a'], fail: [] } },
    {
      name: 'Evict and Fail apart; the next end among those still running',
      waited: [w('a', 5), w('b', 5, 'Fail'), w('c', 40), w('d', 20)],
      now: 10,
      want: { evict: ['a'], fail: ['b'], nextAt: at(20) },
    },
  ];
  for (const row of table)
    test(row.name, () => assert.deepEqual(waitsDue(row.waited, at(row.now)), row.want));
});

test('describeWait says which pod, by which rule, until when and what then', () => {
  const until = Date.parse('2026-11-27T13:00:00Z');
  assert.equal(
    describeWait(
      { namespace: 'etl', name: 'job-1' },
      { rule: 'drain.waitFor[0]', until, afterMaxWait: 'Evict' },
    ),
    'pod etl/job-1 (drain.waitFor[0]) to finish until 2026-11-27T13:00:00.000Z, then evicted',
  );
  assert.match(
    describeWait({ namespace: 'etl', name: 'job-1' }, { rule: 'r', until, afterMaxWait: 'Fail' }),
    /then the drain fails$/,
  );
});

test('rules that cannot work are refused, each problem named by its rule', () => {
  assert.deepEqual(waitForProblems([rule()]), []);
  const problems = waitForProblems([
    rule({ name: 'a', selector: '' }),
    rule({ name: 'b', selector: 'x in (' }),
    rule({ name: 'c', maxWaitSeconds: 0 }),
    rule({ name: 'd', afterMaxWait: 'Delete' as AfterMaxWait }),
    rule({ name: 'e', namespaceSelector: '!!' }),
  ]);
  assert.equal(problems.length, 5, problems.join('\n'));
  for (const [i, name] of ['a', 'b', 'c', 'd', 'e'].entries())
    assert.ok(problems[i]?.startsWith(`${name}: `));
  assert.throws(
    () => drainOptions({ waitFor: [rule({ selector: '' })] }),
    /empty selector would wait for every pod/,
  );
});
