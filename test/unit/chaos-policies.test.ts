import assert from 'node:assert/strict';
import { test } from 'node:test';
import { nodeNames, reproduceCommand, runChaos } from '../../src/sim/chaos.ts';
import { fluoPoolNodes } from '../../src/sim/chaos-policies.ts';

test("--fluo's pool: a third of the nodes, at least 2, never all of them", () => {
  const cases: [number, string[]][] = [
    [3, ['node-0', 'node-1']],
    [6, ['node-0', 'node-1']],
    [9, ['node-0', 'node-1', 'node-2']],
    [12, ['node-00', 'node-01', 'node-02', 'node-03']],
  ];
  for (const [count, want] of cases)
    assert.deepEqual(fluoPoolNodes(nodeNames(count)), want, `${count} nodes`);
  assert.deepEqual(fluoPoolNodes(['c', 'a', 'b']), ['a', 'b'], 'by name, whatever the order given');
  assert.throws(() => fluoPoolNodes(nodeNames(2)), /--fluo needs at least 3 nodes .*got 2/);
});

test('the replay command carries --fluo', () => {
  const o = { runs: 4, seed: 1, nodes: 6, maxUnavailable: 2 };
  assert.equal(
    reproduceCommand({ ...o, fluo: true }),
    'npm run chaos -- --runs 4 --seed 1 --nodes 6 --max-unavailable 2 --fluo',
  );
  assert.equal(reproduceCommand(o), 'npm run chaos -- --runs 4 --seed 1 --nodes 6 --max-unavailable 2');
});

test('--fluo makes its own pools: refused beside --policies or --plans, before any cluster starts', async () => {
  const o = { runs: 1, seed: 1, nodes: 6, maxUnavailable: 2, fluo: true, log: () => {} };
  for (const other of [{ policies: true }, { plans: true }])
    await assert.rejects(runChaos({ ...o, ...other }), /--fluo makes pools of its own/);
});
