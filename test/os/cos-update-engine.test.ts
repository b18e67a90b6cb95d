/**
 * The COS update engine detector against a fake engine owning org.chromium.UpdateEngine on a real private
 * dbus-daemon, speaking protobuf StatusResult payloads in GetStatusAdvanced and StatusUpdateAdvanced.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { WatchEvent } from '../../src/agent/dbus/client.ts';
import { CosUpdateEngineDetector, Operation } from '../../src/agent/detect/cos-update-engine.ts';
import { Need } from '../../src/agent/os.ts';
import { deferrals, Notifications, usePrivateBus } from './bus.ts';
import { FakeCosUpdateEngine } from './fake-services.ts';
import { encodeStatusResult, field } from './protobuf.ts';

const bus = await usePrivateBus();

test('GetStatusAdvanced at start: the decoded status decides and is mirrored', async (t) => {
  const defer = deferrals(t);
  const fake = new FakeCosUpdateEngine(bus.address);
  fake.set(
    {
      currentOperation: Operation.UPDATED_NEED_REBOOT,
      newVersion: '18244.85.49',
      lastCheckedTime: 1_760_000_000,
    },
    { emit: false },
  );
  await fake.start();
  defer(() => fake.stop());
  const detector = new CosUpdateEngineDetector({ address: bus.address });
  defer(() => detector.close());

  const d = await detector.check();
  assert.equal(d.need, Need.needed, d.reason);
  assert.equal(d.update?.status, 'UPDATED_NEED_REBOOT');
  assert.equal(d.update?.newVersion, '18244.85.49');
  assert.equal(d.update?.lastCheckedTime?.getTime(), 1_760_000_000_000);
});

test('StatusUpdateAdvanced at run time fires watch() and check() reads the new state', async (t) => {
  const defer = deferrals(t);
  const fake = await new FakeCosUpdateEngine(bus.address).start();
  defer(() => fake.stop());
  const events: WatchEvent[] = [];
  const detector = new CosUpdateEngineDetector({ address: bus.address, onEvent: (e) => events.push(e) });
  defer(() => detector.close());
  const changes = new Notifications();
  const subscribed = changes.next('the watch to subscribe');
  defer(detector.watch(changes.notify));
  await subscribed;
  const idle = await detector.check();
  assert.equal(idle.need, Need.notNeeded);
  assert.equal(idle.update?.status, 'IDLE');

  let fired = changes.next('DOWNLOADING');
  fake.set({ currentOperation: Operation.DOWNLOADING, progress: 0.25 });
  await fired;
  assert.equal((await detector.check()).update?.status, 'DOWNLOADING');

  fired = changes.next('UPDATED_NEED_REBOOT');
  fake.set({ currentOperation: Operation.UPDATED_NEED_REBOOT, newVersion: '18244.85.50' });
  await fired;
  const signal = events.findLast((e) => e.kind === 'signal');
  assert.ok(signal?.kind === 'signal' && signal.signal.member === 'StatusUpdateAdvanced');
  assert.ok(signal.signal.body[0] instanceof Uint8Array, 'the payload arrives as bytes');
  const d = await detector.check();
  assert.equal(d.need, Need.needed);
  assert.equal(d.update?.newVersion, '18244.85.50');
});

test('truncated or malformed payloads are unknown, never needed and never a crash', async (t) => {
  const defer = deferrals(t);
  const fake = await new FakeCosUpdateEngine(bus.address).start();
  defer(() => fake.stop());
  const detector = new CosUpdateEngineDetector({ address: bus.address });
  defer(() => detector.close());
  const changes = new Notifications();
  const subscribed = changes.next('the watch to subscribe');
  defer(detector.watch(changes.notify));
  await subscribed;

  const whole = encodeStatusResult({
    currentOperation: Operation.UPDATED_NEED_REBOOT,
    newVersion: '18244.85.50',
  });
  const fired = changes.next('a truncated signal');
  fake.set({}, { raw: whole.subarray(0, whole.length - 3) });
  await fired;
  const truncated = await detector.check();
  assert.equal(truncated.need, Need.unknown);
  assert.match(truncated.reason, /unexpected GetStatusAdvanced reply: truncated/);

  fake.rawPayload = Buffer.from([...field.varint(3, Operation.IDLE), 0x0b]); // a group start: unsupported
  assert.equal((await detector.check()).need, Need.unknown);

  fake.rawPayload = undefined;
  fake.replyMode = 'garbage';
  const garbage = await detector.check();
  assert.equal(garbage.need, Need.unknown);
  assert.match(garbage.reason, /expected a byte array/);

  fake.replyMode = 'normal';
  assert.equal((await detector.check()).need, Need.notNeeded, 'well-formed again: back to normal');
});

test('the engine absent, appearing, restarting: unknown while gone, recovered when back', async (t) => {
  const defer = deferrals(t);
  const detector = new CosUpdateEngineDetector({ address: bus.address });
  defer(() => detector.close());
  const absent = await detector.check();
  assert.equal(absent.need, Need.unknown);
  assert.match(absent.reason, /org\.chromium\.UpdateEngine unavailable/);

  const changes = new Notifications();
  const subscribed = changes.next('the watch to subscribe');
  defer(detector.watch(changes.notify));
  await subscribed;

  let fake = new FakeCosUpdateEngine(bus.address);
  defer(() => fake.stop());
  let fired = changes.next('the engine appearing');
  await fake.start();
  await fired;
  assert.equal((await detector.check()).need, Need.notNeeded);

  fired = changes.next('the engine leaving');
  await fake.stop();
  await fired;
  assert.equal((await detector.check()).need, Need.unknown);

  fake = new FakeCosUpdateEngine(bus.address);
  fake.set({ currentOperation: Operation.UPDATED_NEED_REBOOT }, { emit: false });
  fired = changes.next('the engine back');
  await fake.start();
  await fired;
  assert.equal((await detector.check()).need, Need.needed);
});
