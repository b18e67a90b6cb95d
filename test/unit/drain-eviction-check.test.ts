import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { PodAnnotations } from '../../src/api/keys.ts';
import { checkBeforeEviction, type EvictionCheck } from '../../src/drain/eviction-check.ts';

const NOW = Date.parse('2026-11-27T12:00:00Z');

const pod = (uid: string, annotations: Record<string, string> = {}, startTime?: string): V1Pod => ({
  metadata: { name: 'db-0', namespace: 'app', uid, resourceVersion: '42', annotations },
  status: { phase: 'Running', ...(startTime ? { startTime: new Date(startTime) } : {}) },
});

test('a pod read again just before its eviction: gone, held by do-not-disrupt, or evicted as read', () => {
  const table: Array<[string, V1Pod | undefined, EvictionCheck]> = [
    ['gone', undefined, { gone: true }],
    ['a new pod under its name (another UID)', pod('uid-2'), { gone: true }],
    [
      'as planned: evicted on the condition it is unchanged',
      pod('uid-1'),
      { evict: { resourceVersion: '42' } },
    ],
    [
      'annotated "true" since the drain planned: held, not evicted',
      pod('uid-1', { [PodAnnotations.doNotDisrupt]: 'true' }),
      { held: `pod app/db-0 has ${PodAnnotations.doNotDisrupt}="true"` },
    ],
    [
      'a duration that still holds',
      pod('uid-1', { [PodAnnotations.doNotDisrupt]: '1h' }, '2026-11-27T11:30:00Z'),
      { held: `pod app/db-0 has ${PodAnnotations.doNotDisrupt}="1h" until 2026-11-27T12:30:00.000Z` },
    ],
    [
      'a duration over: evicted',
      pod('uid-1', { [PodAnnotations.doNotDisrupt]: '10m' }, '2026-11-27T11:30:00Z'),
      { evict: { resourceVersion: '42' } },
    ],
    [
      'a value that does not parse holds, as "true"',
      pod('uid-1', { [PodAnnotations.doNotDisrupt]: 'tru' }),
      { held: `pod app/db-0 has ${PodAnnotations.doNotDisrupt}="tru"` },
    ],
  ];
  for (const [what, live, want] of table)
    assert.deepEqual(checkBeforeEviction('uid-1', live, NOW), want, what);
});
