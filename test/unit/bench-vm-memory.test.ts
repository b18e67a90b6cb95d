import assert from 'node:assert/strict';
import { test } from 'node:test';
import { goalVerdict, memoryRows, parseSamples } from '../../bench/vm-memory-samples.ts';

const MiB = 2 ** 20;

test("the sampler's lines: the working set is memory.current less inactive_file, RSS from KiB; a name may hold spaces; a cut line is dropped", () => {
  const text = [
    `1000 nuo agent ${60 * MiB} ${10 * MiB} ${70 * MiB} 40960`,
    `1000 kured ${30 * MiB} ${2 * MiB} ${31 * MiB} 20480`,
    `3000 nuo agent ${5 * MiB} ${9 * MiB} ${70 * MiB} 40960`,
    '5000 kured 123',
    '',
  ].join('\n');
  assert.deepEqual(parseSamples(text), [
    { ms: 1000, container: 'nuo agent', workingSetBytes: 50 * MiB, peakBytes: 70 * MiB, rssBytes: 40 * MiB },
    { ms: 1000, container: 'kured', workingSetBytes: 28 * MiB, peakBytes: 31 * MiB, rssBytes: 20 * MiB },
    { ms: 3000, container: 'nuo agent', workingSetBytes: 0, peakBytes: 70 * MiB, rssBytes: 40 * MiB },
  ]);
});

test('a row per container: median and max of the working set and RSS, the highest cgroup peak, the sample count', () => {
  const s = (ms: number, container: string, ws: number, peak: number, rss: number) => ({
    ms,
    container,
    workingSetBytes: ws * MiB,
    peakBytes: peak * MiB,
    rssBytes: rss * MiB,
  });
  const rows = memoryRows('idle', [
    s(1, 'a', 10, 12, 20),
    s(1, 'b', 5, 5, 5),
    s(2, 'a', 30, 31, 22),
    s(3, 'a', 20, 31, 21),
  ]);
  assert.deepEqual(rows, [
    '| idle (3 samples) | a | 20.0 MiB | 30.0 MiB | 31.0 MiB | 21.0 MiB | 22.0 MiB |',
    '| idle (1 samples) | b | 5.0 MiB | 5.0 MiB | 5.0 MiB | 5.0 MiB | 5.0 MiB |',
  ]);
});

test('the goal is judged by the median working set of every phase where both were sampled, and a miss names each phase', () => {
  const s = (container: string, ws: number) => ({
    ms: 0,
    container,
    workingSetBytes: ws * MiB,
    peakBytes: 0,
    rssBytes: 0,
  });
  const phases = [
    { name: 'idle', samples: [s('ours', 10), s('theirs', 12)] },
    { name: 'reboot', samples: [s('ours', 21), s('ours', 22), s('ours', 23), s('theirs', 10)] },
    { name: 'only one', samples: [s('ours', 99)] },
  ];
  assert.equal(
    goalVerdict(phases.slice(0, 1), 'ours', 'theirs'),
    "Goal met: ours's median working set is at most theirs's in every phase.",
  );
  assert.equal(
    goalVerdict(phases, 'ours', 'theirs'),
    "Goal missed (ours's median working set above theirs's): reboot: 22.0 MiB against 10.0 MiB.",
  );
});
