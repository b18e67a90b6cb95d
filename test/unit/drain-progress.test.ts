import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiException } from '@kubernetes/client-node';
import { blockingPdbName } from '../../src/drain/evictions.ts';
import { PodAction } from '../../src/drain/plan.ts';
import { ProgressTracker } from '../../src/drain/progress.ts';

const pod = (uid: string, action: PodAction) => ({ namespace: 'ns', name: `p-${uid}`, uid, action });

test('blockingPdbName reads the PDB from a 429 eviction answer', () => {
  const body = JSON.stringify({
    kind: 'Status',
    reason: 'TooManyRequests',
    message: "Cannot evict pod as it would violate the pod's disruption budget.",
    details: {
      causes: [
        {
          reason: 'DisruptionBudget',
          message: 'The disruption budget web needs 2 healthy pods and has 2 currently',
        },
      ],
    },
  });
  assert.equal(blockingPdbName(new ApiException(429, 'x', body, {})), 'web');
  assert.equal(blockingPdbName(new ApiException(429, 'x', '{}', {})), undefined);
  assert.equal(blockingPdbName(new Error('socket hang up')), undefined);
});

test('ProgressTracker counts pods left, blocking PDBs and summarises a timeout', () => {
  const plan = {
    canProceed: true,
    held: false,
    decisions: [
      pod('a', PodAction.evict),
      pod('b', PodAction.evict),
      pod('c', PodAction.wait),
      pod('d', PodAction.skip),
    ],
  };
  const seen: number[] = [];
  const t = new ProgressTracker('n1', plan, Date.now(), (p) => seen.push(p.left));
  assert.equal(t.left(), 3);
  assert.deepEqual(
    t.toEvict().map((s) => s.uid),
    ['a', 'b'],
  );
  t.blocked('a', 'blocked by PodDisruptionBudget ns/web', 'ns/web');
  t.evicted('b');
  t.gone('c');
  t.gone('d'); // skipped pods are not waited for: no change
  assert.equal(t.left(), 2);
  assert.deepEqual(t.progress().blockingPdbs, { 'ns/web': 1 });
  assert.deepEqual(t.result().blockingPdbs, { 'ns/web': ['ns/p-a'] });
  assert.match(
    t.summary('timed-out'),
    /^timed-out after \d+\.\ds with 2 of 3 pod\(s\) left; blocked by PodDisruptionBudget ns\/web \(1 pod\(s\)\); 1 pod\(s\) not yet terminated$/,
  );
  t.gone('a');
  t.gone('b');
  assert.equal(t.left(), 0);
  assert.deepEqual(seen, [3, 3, 2, 1, 0]);
});

test('ProgressTracker.changed resolves on the next change', async () => {
  const t = new ProgressTracker(
    'n1',
    { canProceed: true, held: false, decisions: [pod('a', PodAction.evict)] },
    Date.now(),
  );
  const changed = t.changed();
  t.evicted('a');
  await changed;
  assert.equal(t.left(), 1);
});

test('ProgressTracker: a pod waited for is left until it finishes or is released; one abandoned is done', () => {
  const wait = {
    rule: 'drain.waitFor[0]',
    until: Date.parse('2026-11-27T13:00:00Z'),
    afterMaxWait: 'Evict' as const,
  };
  const plan = {
    canProceed: true,
    held: false,
    decisions: [
      { ...pod('job', PodAction.waitFor), wait },
      { ...pod('long', PodAction.waitFor), wait },
      pod('web', PodAction.evict),
    ],
  };
  const events: string[] = [];
  const t = new ProgressTracker('n1', plan, Date.now(), undefined, (e) => events.push(e.type));
  assert.deepEqual(
    t.toEvict().map((s) => s.uid),
    ['web'],
    'only the pod to evict is queued',
  );
  assert.deepEqual(
    t.waitedFor().map((s) => s.uid),
    ['job', 'long'],
  );
  assert.equal(t.left(), 3, 'waited-for pods keep the drain going');
  assert.match(
    t.summary('timed-out'),
    /still waiting for ns\/p-job \(drain\.waitFor\[0\]\), ns\/p-long \(drain\.waitFor\[0\]\) to finish$/,
  );
  assert.match(
    t.summary('timed-out'),
    /; 1 pod\(s\) not yet terminated;/,
    'the pod to evict is, not those waited for',
  );
  t.finished('job');
  assert.equal(t.isDone('job'), true);
  assert.equal(t.release('job'), undefined, 'a finished pod is never evicted');
  const released = t.release('long');
  assert.equal(released?.reason, 'still running when its wait (drain.waitFor[0]) ended: evicted');
  assert.deepEqual(
    t.toEvict().map((s) => s.uid),
    ['long', 'web'],
  );
  t.evicted('long');
  t.abandon('long', 'terminating for 40s, longer than skipWaitForDeleteTimeout (30s)');
  assert.equal(t.isDone('long'), true);
  t.evicted('web');
  t.gone('web');
  assert.equal(t.left(), 0);
  assert.deepEqual(events, ['finished', 'released', 'skip', 'gone']);
});
