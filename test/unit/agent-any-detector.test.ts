import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AnyDetector } from '../../src/agent/detect/any.ts';
import { type Detection, type Detector, Need } from '../../src/agent/os.ts';

function stub(
  name: string,
  detection: Detection | Error,
  watchable = false,
): Detector & { watchers: number } {
  const d: Detector & { watchers: number } = {
    name,
    watchers: 0,
    check: async () => {
      if (detection instanceof Error) throw detection;
      return detection;
    },
  };
  if (watchable) {
    d.watch = (onChange) => {
      d.watchers++;
      queueMicrotask(onChange);
      return () => {
        d.watchers--;
      };
    };
  }
  return d;
}

const needed = (reason: string): Detection => ({ need: Need.needed, reason });
const notNeeded = (reason: string): Detection => ({ need: Need.notNeeded, reason });
const unknown = (reason: string): Detection => ({ need: Need.unknown, reason });

test('needed if any detector says needed, whatever the others say', async () => {
  const d = await new AnyDetector([
    stub('file', notNeeded('no file')),
    stub('cmd', unknown('timed out')),
    stub('engine', needed('update staged')),
  ]).check();
  assert.deepEqual(d, { need: Need.needed, reason: 'engine: update staged' });
});

test('unknown only when none says needed, with every unknown reason', async () => {
  const d = await new AnyDetector([
    stub('file', notNeeded('no file')),
    stub('cmd', unknown('timed out')),
    stub('engine', unknown('not on the bus')),
  ]).check();
  assert.deepEqual(d, { need: Need.unknown, reason: 'cmd: timed out; engine: not on the bus' });
});

test('not needed only when all say so', async () => {
  const d = await new AnyDetector([stub('a', notNeeded('fine')), stub('b', notNeeded('also fine'))]).check();
  assert.deepEqual(d, { need: Need.notNeeded, reason: 'a: fine; b: also fine' });
});

test('a detector that rejects anyway counts as unknown, not as a crash', async () => {
  const d = await new AnyDetector([stub('a', notNeeded('fine')), stub('b', new Error('boom'))]).check();
  assert.deepEqual(d, { need: Need.unknown, reason: 'b: check failed: boom' });
});

test('the update status is passed through from whichever detector has one', async () => {
  const update = { status: 'UPDATE_STATUS_IDLE' };
  const d = await new AnyDetector([
    stub('file', needed('file exists')),
    stub('engine', { need: Need.notNeeded, reason: 'idle', update }),
  ]).check();
  assert.equal(d.need, Need.needed);
  assert.deepEqual(d.update, update);
});

test('watch() watches every watchable detector and stops them all', async () => {
  const a = stub('a', notNeeded('x'), true);
  const b = stub('b', notNeeded('x'));
  const c = stub('c', notNeeded('x'), true);
  let changes = 0;
  const stop = new AnyDetector([a, b, c]).watch(() => changes++);
  assert.deepEqual([a.watchers, c.watchers], [1, 1]);
  await new Promise<void>((resolve) => queueMicrotask(resolve));
  assert.equal(changes, 2);
  stop();
  stop();
  assert.deepEqual([a.watchers, c.watchers], [0, 0]);
});

test('configuration is validated', () => {
  assert.throws(() => new AnyDetector([]), /at least one detector is required/);
  assert.throws(() => new AnyDetector([{} as Detector]), /item 0 is not a detector/);
});
