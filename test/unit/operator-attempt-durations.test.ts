import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_DURATION_SAMPLES } from '../../src/api/update-policy.ts';
import { viewNode } from '../../src/operator/decide/node-view.ts';
import {
  AttemptClock,
  type AttemptMarks,
  addSamples,
  attemptSample,
  median,
  observeAttempt,
} from '../../src/operator/policies/attempt-durations.ts';
import { ago, NOW, node, state } from './operator-fixtures.ts';

/** The node `n` in `phase` since `since` seconds before NOW, Ready since `ready` seconds before. */
const at = (phase: string, since: number, ready = 3600) =>
  viewNode(node('n', { annotations: state(phase, since), readySince: ago(ready) }));
const t = (s: number) => NOW.getTime() - s * 1000;

test('observeAttempt: each phase of an attempt marked at the time written on the node, once', () => {
  const cases: Array<[string, AttemptMarks | undefined, ReturnType<typeof at>, AttemptMarks | undefined]> = [
    ['Idle: outside an attempt', { Draining: t(50) }, at('Idle', 10), undefined],
    ['Pending: outside an attempt', undefined, at('Pending', 10), undefined],
    ['Failed: not measured', { Draining: t(50) }, at('Failed', 10), undefined],
    ['the first phase seen', undefined, at('Draining', 40), { Draining: t(40) }],
    [
      'the next phase added',
      { Draining: t(40) },
      at('RebootGranted', 30),
      { Draining: t(40), RebootGranted: t(30) },
    ],
    ['a phase seen again keeps its first mark', { Draining: t(40) }, at('Draining', 40), { Draining: t(40) }],
    [
      'a later BeforeReboot is a new attempt',
      { BeforeReboot: t(90), Draining: t(80) },
      at('BeforeReboot', 20),
      { BeforeReboot: t(20) },
    ],
  ];
  for (const [what, marks, n, want] of cases) assert.deepEqual(observeAttempt(marks, n), want, what);
});

test('attemptSample: drain, reboot and return in seconds; a part whose start went unseen is left out', () => {
  const cases: Array<[string, AttemptMarks, number, ReturnType<typeof attemptSample>]> = [
    [
      'every phase seen, Ready 4.25 s after the new boot',
      { Draining: t(100), RebootGranted: t(70), Rebooting: t(68), AfterReboot: t(8) },
      3.75,
      { drainSeconds: 30, rebootSeconds: 62, returnSeconds: 4.3 },
    ],
    [
      'the grant unseen: the reboot from Rebooting; Ready before the new boot was seen: return 0',
      { Draining: t(100), Rebooting: t(60), AfterReboot: t(10) },
      20,
      { rebootSeconds: 50, returnSeconds: 0 },
    ],
    ['only the return seen', { AfterReboot: t(10) }, 5, { returnSeconds: 5 }],
  ];
  for (const [what, marks, ready, want] of cases)
    assert.deepEqual(attemptSample(marks, at('AfterReboot', 10, ready)), want, what);
});

test('median', () => {
  const cases: Array<[number[], number | undefined]> = [
    [[], undefined],
    [[7], 7],
    [[9, 1, 5], 5],
    [[4, 1, 3, 2], 2.5],
  ];
  for (const [values, want] of cases) assert.equal(median(values), want, JSON.stringify(values));
});

test('addSamples: the latest of each part, their medians and a count; nothing new changes nothing', () => {
  assert.equal(addSamples(undefined, []), undefined);
  const one = addSamples(undefined, [{ drainSeconds: 10, rebootSeconds: 60, returnSeconds: 2 }]);
  assert.deepEqual(one, {
    samples: 1,
    drainSeconds: [10],
    rebootSeconds: [60],
    returnSeconds: [2],
    drainP50Seconds: 10,
    rebootP50Seconds: 60,
    returnP50Seconds: 2,
  });
  assert.equal(addSamples(one, []), one);
  const two = addSamples(one, [{ rebootSeconds: 80, returnSeconds: 4 }, { drainSeconds: 20 }]);
  assert.deepEqual(two, {
    samples: 3,
    drainSeconds: [10, 20],
    rebootSeconds: [60, 80],
    returnSeconds: [2, 4],
    drainP50Seconds: 15,
    rebootP50Seconds: 70,
    returnP50Seconds: 3,
  });
  const many = Array.from({ length: 40 }, (_, i) => ({ rebootSeconds: i }));
  const bounded = addSamples(two, many);
  assert.equal(bounded?.samples, 43);
  assert.equal(bounded?.rebootSeconds.length, MAX_DURATION_SAMPLES, 'bounded');
  assert.deepEqual(bounded?.rebootSeconds.slice(-2), [38, 39], 'the latest kept');
  assert.deepEqual(bounded?.drainSeconds, [10, 20]);
});

test('AttemptClock: an attempt seen through its phases is measured when it completes, once', () => {
  const clock = new AttemptClock();
  const none = new Set<string>();
  assert.equal(clock.observe([at('Draining', 100)], none).size, 0);
  clock.observe([at('RebootGranted', 70)], none);
  clock.observe([at('Rebooting', 68)], none);
  const done = clock.observe([at('AfterReboot', 8, 3)], new Set(['n']));
  assert.deepEqual(done.get('n'), { drainSeconds: 30, rebootSeconds: 62, returnSeconds: 5 });
  // Decided again (its write failed): only the return is seen, which is not counted twice.
  assert.equal(clock.observe([at('AfterReboot', 8, 3)], new Set(['n'])).size, 0);
  // A node gone is forgotten; one whose attempt failed is not measured.
  clock.observe([at('Draining', 100)], none);
  clock.observe([at('Failed', 50)], none);
  assert.equal(clock.observe([at('AfterReboot', 8)], new Set(['n'])).size, 0);
});
