import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { parseLedger } from '../../src/operator/ledger.ts';

const cm = (text?: string): V1ConfigMap => ({
  metadata: { name: 'nuo-slots', namespace: 'nuo-system' },
  data: text === undefined ? {} : { 'ledger.json': text },
});

test('a ledger reads its slots and promises; anything malformed is corrupt, never guessed', () => {
  assert.deepEqual(parseLedger(cm()), { slots: {} });
  const ok = {
    slots: { a: { since: '2026-11-23T12:00:00Z' } },
    next: { b: { after: 'a', since: '2026-11-23T12:00:05Z' } },
  };
  assert.deepEqual(parseLedger(cm(JSON.stringify(ok))), ok);
  for (const [what, text] of [
    ['not JSON', '{'],
    ['no slots', '{}'],
    ['next not an object', '{"slots":{},"next":3}'],
    ['a promise without its predecessor', '{"slots":{},"next":{"b":{"since":"x"}}}'],
    ['a promise that is null', '{"slots":{},"next":{"b":null}}'],
  ] as const) {
    assert.throws(() => parseLedger(cm(text)), /nuo-system\/nuo-slots is corrupt .*admits no node/, what);
  }
});
