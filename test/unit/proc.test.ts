import assert from 'node:assert/strict';
import { test } from 'node:test';
import { machineCpu, machineCpuBetween, parseMachineCpu } from '../../src/sim/cluster/proc.ts';

test('parseMachineCpu splits the aggregate cpu line into busy, idle and stolen seconds', () => {
  const cases: {
    name: string;
    stat: string;
    ticks: number;
    want: { busy: number; idle: number; steal: number };
  }[] = [
    {
      name: 'all ten counters; guest time is already inside user and nice',
      stat: 'cpu  500 100 200 1000 50 10 40 300 70 30\ncpu0 1 2 3 4 5 6 7 8 9 10\nintr 1\n',
      ticks: 100,
      want: { busy: 8.5, idle: 10.5, steal: 3 },
    },
    {
      name: 'an older kernel with eight counters',
      stat: 'cpu 100 0 100 200 0 0 0 50\n',
      ticks: 50,
      want: { busy: 4, idle: 4, steal: 1 },
    },
    {
      name: 'the per-core lines are not the aggregate',
      stat: 'cpu0 9 9 9 9 9 9 9 9\ncpu  1 1 1 1 1 1 1 1\n',
      ticks: 1,
      want: { busy: 5, idle: 2, steal: 1 },
    },
  ];
  for (const c of cases) {
    const got = parseMachineCpu(c.stat, c.ticks);
    assert.deepEqual(
      { busy: got.busySeconds, idle: got.idleSeconds, steal: got.stealSeconds },
      c.want,
      c.name,
    );
  }
});

test('parseMachineCpu refuses a file without a whole aggregate line, naming what it saw', () => {
  assert.throws(() => parseMachineCpu('cpu0 1 2 3\n', 100), /no aggregate cpu line/);
  assert.throws(() => parseMachineCpu('cpu 1 2 3 4 5 6 7\n', 100), /"cpu 1 2 3 4 5 6 7"/);
  assert.throws(() => parseMachineCpu('cpu 1 2 3 4 x 6 7 8\n', 100), /8 counters/);
});

test("machineCpu reads this machine's counters, which only grow", () => {
  const a = machineCpu();
  const b = machineCpu();
  assert.ok(a.busySeconds > 0 && a.idleSeconds >= 0 && a.stealSeconds >= 0);
  assert.ok(
    b.busySeconds >= a.busySeconds && b.idleSeconds >= a.idleSeconds && b.stealSeconds >= a.stealSeconds,
  );
});

test('machineCpuBetween is what each counter grew by', () => {
  const before = parseMachineCpu('cpu 100 0 100 200 0 0 0 50\n', 4);
  const after = parseMachineCpu('cpu 300 0 150 260 40 0 10 90\n', 4);
  assert.deepEqual(machineCpuBetween(before, after), { busySeconds: 65, idleSeconds: 25, stealSeconds: 10 });
});
