import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { mulberry32, Random } from '../../src/sim/random.ts';

describe('mulberry32', () => {
  test('matches the reference implementation (values printed by the original JavaScript)', () => {
    const expected: Record<number, number[]> = {
      0: [0.26642920868471265, 0.0003297457005828619, 0.2232720274478197],
      1: [0.6270739405881613, 0.002735721180215478, 0.5274470399599522],
      42: [0.6011037519201636, 0.44829055899754167, 0.8524657934904099],
      4294967295: [0.8964226141106337, 0.189478256739676, 0.7156526781618595],
    };
    for (const [seed, values] of Object.entries(expected)) {
      const next = mulberry32(Number(seed));
      assert.deepEqual([next(), next(), next()], values, `seed ${seed}`);
    }
    const next = mulberry32(1);
    for (let i = 0; i < 100_000; i++) next();
    assert.equal(next(), 0.4195690490305424);
  });

  test('same seed, same sequence; another seed, another sequence', () => {
    const a = mulberry32(7);
    const b = mulberry32(7);
    const c = mulberry32(8);
    const seqA = Array.from({ length: 50 }, a);
    assert.deepEqual(Array.from({ length: 50 }, b), seqA);
    assert.notDeepEqual(Array.from({ length: 50 }, c), seqA);
  });

  test('seeds are taken modulo 2^32', () => {
    assert.equal(mulberry32(2 ** 32 + 5)(), mulberry32(5)());
    assert.equal(mulberry32(-1)(), mulberry32(4294967295)());
  });

  test('values lie in [0, 1) and spread over it', () => {
    const next = mulberry32(123);
    const buckets = new Array(10).fill(0);
    for (let i = 0; i < 20_000; i++) {
      const v = next();
      assert.ok(v >= 0 && v < 1, String(v));
      buckets[Math.floor(v * 10)]++;
    }
    for (const b of buckets) assert.ok(b > 1700 && b < 2300, `bucket count ${b}`);
  });
});

describe('Random', () => {
  test('int covers [min, max] inclusive and nothing else', () => {
    const r = new Random(3);
    const seen = new Set<number>();
    for (let i = 0; i < 2000; i++) {
      const v = r.int(2, 5);
      assert.ok(Number.isInteger(v) && v >= 2 && v <= 5, String(v));
      seen.add(v);
    }
    assert.deepEqual([...seen].sort(), [2, 3, 4, 5]);
    assert.equal(new Random(1).int(4, 4), 4);
    assert.throws(() => r.int(5, 2), /min ≤ max/);
    assert.throws(() => r.int(0.5, 2), /integers/);
  });

  test('between, chance and pick stay in range', () => {
    const r = new Random(9);
    for (let i = 0; i < 1000; i++) {
      const v = r.between(300, 3000);
      assert.ok(v >= 300 && v < 3000);
    }
    assert.equal(r.chance(0), false);
    assert.equal(r.chance(1), true);
    const items = ['a', 'b', 'c'];
    for (let i = 0; i < 100; i++) assert.ok(items.includes(r.pick(items)));
    assert.throws(() => r.pick([]), /empty/);
  });

  test('the same seed replays the same draws', () => {
    const draws = (seed: number) => {
      const r = new Random(seed);
      return [r.int(0, 100), r.between(0, 1), r.chance(0.5), r.pick(['x', 'y', 'z'])];
    };
    assert.deepEqual(draws(11), draws(11));
  });
});
