import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseSelector } from '../../src/kube/selector.ts';
import { assignPools } from '../../src/policy/pools.ts';

const policies = [
  { name: 'workers', selects: parseSelector('pool=workers') },
  { name: 'gpu', selects: parseSelector('gpu') },
];
const node = (name: string, labels: Record<string, string>) => ({ name, labels });

test('each node is in the one pool that selects it; two selectors: in none; none: left alone', () => {
  const got = assignPools(
    [
      node('w1', { pool: 'workers' }),
      node('g1', { gpu: 'a100' }),
      node('both', { pool: 'workers', gpu: 't4' }),
      node('infra', { pool: 'infra' }),
    ],
    policies,
    () => undefined,
  );
  assert.deepEqual(
    [...got.pools],
    [
      ['w1', 'workers'],
      ['g1', 'gpu'],
    ],
  );
  assert.deepEqual([...got.conflicts], [['both', ['gpu', 'workers']]]);
  assert.deepEqual(got.unmatched, ['infra']);
});

test('a node in an attempt stays in the pool whose budget holds its slot, whatever its labels now say', () => {
  const held = new Map([
    ['moved', 'workers'],
    ['both', 'gpu'],
    ['orphan', 'deleted-policy'],
  ]);
  const got = assignPools(
    [node('moved', { gpu: 'a100' }), node('both', { pool: 'workers', gpu: 't4' }), node('orphan', {})],
    policies,
    (n) => held.get(n),
  );
  assert.deepEqual(
    [...got.pools],
    [
      ['moved', 'workers'],
      ['both', 'gpu'],
      ['orphan', 'deleted-policy'],
    ],
  );
  assert.equal(got.conflicts.size, 0);
  assert.deepEqual(got.unmatched, []);
});

test('no policy: every node is left alone', () => {
  const got = assignPools([node('a', {}), node('b', { pool: 'workers' })], [], () => undefined);
  assert.equal(got.pools.size, 0);
  assert.deepEqual(got.unmatched, ['a', 'b']);
});
