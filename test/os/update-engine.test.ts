/**
 * The Flatcar/Container Linux update_engine detector against a fake update_engine that owns
 * com.coreos.update1 on a real private dbus-daemon.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { WatchEvent } from '../../src/agent/dbus/client.ts';
import { UpdateEngineDetector } from '../../src/agent/detect/update-engine.ts';
import { Need } from '../../src/agent/os.ts';
import { deferrals, Notifications, PrivateBus, usePrivateBus } from './bus.ts';
import { FakeUpdateEngine } from './fake-services.ts';

const bus = await usePrivateBus();
const NEED_REBOOT = 'UPDATE_STATUS_UPDATED_NEED_REBOOT';

/** Resolves with the first event the predicate accepts. */
function eventRecorder() {
  const events: WatchEvent[] = [];
  const waiters: Array<{ match: (e: WatchEvent) => boolean; resolve: (e: WatchEvent) => void }> = [];
  const onEvent = (e: WatchEvent) => {
    events.push(e);
    for (const w of [...waiters]) {
      if (w.match(e)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(e);
      }
    }
  };
  const waitFor = (what: string, match: (e: WatchEvent) => boolean, timeoutMs = 10_000) =>
    new Promise<WatchEvent>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), timeoutMs);
      waiters.push({
        match,
        resolve: (e) => {
          clearTimeout(timer);
          resolve(e);
        },
      });
    });
  return { events, onEvent, waitFor };
}

test('GetStatus at start: an idle engine means not needed, with its status mirrored', async (t) => {
  const defer = deferrals(t);
  const fake = await new FakeUpdateEngine(bus.address).start();
  defer(() => fake.stop());
  fake.set({ lastCheckedTime: 1_700_000_000n, currentOperation: 'UPDATE_STATUS_IDLE' }, { emit: false });
  const detector = new UpdateEngineDetector({ address: bus.address });
  defer(() => detector.close());

  const d = await detector.check();
  assert.equal(d.need, Need.notNeeded, d.reason);
  assert.equal(d.update?.status, 'UPDATE_STATUS_IDLE');
  assert.equal(d.update?.lastCheckedTime?.toISOString(), new Date(1_700_000_000_000).toISOString());
  assert.equal(d.update?.newVersion, undefined);
  assert.equal(fake.getStatusCalls, 1);
});

test('an engine that already staged an update at start means needed', async (t) => {
  const defer = deferrals(t);
  const fake = await new FakeUpdateEngine(bus.address).start();
  defer(() => fake.stop());
  fake.set({ currentOperation: NEED_REBOOT, newVersion: '4081.2.0', newSize: 123_456n }, { emit: false });
  const detector = new UpdateEngineDetector({ address: bus.address });
  defer(() => detector.close());

  const d = await detector.check();
  assert.equal(d.need, Need.needed);
  assert.match(d.reason, /4081\.2\.0/);
  assert.deepEqual(
    { status: d.update?.status, newVersion: d.update?.newVersion },
    {
      status: NEED_REBOOT,
      newVersion: '4081.2.0',
    },
  );
});

test('a StatusUpdate signal at run time fires watch() and check() reads the new state', async (t) => {
  const defer = deferrals(t);
  const fake = await new FakeUpdateEngine(bus.address).start();
  defer(() => fake.stop());
  const rec = eventRecorder();
  const detector = new UpdateEngineDetector({ address: bus.address, onEvent: rec.onEvent });
  defer(() => detector.close());
  const changes = new Notifications();
  const subscribed = changes.next('the watch to subscribe');
  const stop = detector.watch(changes.notify);
  defer(stop);
  await subscribed;
  assert.equal(rec.events[0]?.kind, 'subscribed');
  assert.equal((await detector.check()).need, Need.notNeeded);

  for (const op of ['UPDATE_STATUS_CHECKING_FOR_UPDATE', 'UPDATE_STATUS_DOWNLOADING']) {
    const fired = changes.next(`StatusUpdate ${op}`);
    fake.set({ currentOperation: op, progress: 0.5 });
    await fired;
    const d = await detector.check();
    assert.equal(d.need, Need.notNeeded);
    assert.equal(d.update?.status, op);
  }

  const fired = changes.next('StatusUpdate NEED_REBOOT');
  fake.set({ currentOperation: NEED_REBOOT, newVersion: '4081.2.1', lastCheckedTime: 1_750_000_000n });
  await fired;
  const signal = rec.events.findLast((e) => e.kind === 'signal');
  assert.ok(signal && signal.kind === 'signal', 'the watch saw the signal itself');
  assert.equal(signal.signal.member, 'StatusUpdate');
  assert.equal(signal.signal.body[2], NEED_REBOOT);
  const d = await detector.check();
  assert.equal(d.need, Need.needed);
  assert.equal(d.update?.newVersion, '4081.2.1');
  assert.equal(d.update?.lastCheckedTime?.getTime(), 1_750_000_000_000);
});

test('the service restarting: unknown while it is gone, recovered and followed when it is back', async (t) => {
  const defer = deferrals(t);
  let fake = await new FakeUpdateEngine(bus.address).start();
  defer(() => fake.stop());
  const rec = eventRecorder();
  const detector = new UpdateEngineDetector({ address: bus.address, onEvent: rec.onEvent });
  defer(() => detector.close());
  const changes = new Notifications();
  const subscribed = changes.next('the watch to subscribe');
  defer(detector.watch(changes.notify));
  await subscribed;

  // Release the name (a clean stop): the watch hears NameOwnerChanged, the check is unknown.
  let fired = changes.next('the service leaving');
  await fake.stop();
  await fired;
  const gone = await detector.check();
  assert.equal(gone.need, Need.unknown);
  assert.match(gone.reason, /com\.coreos\.update1/);
  assert.match(gone.reason, /ServiceUnknown|NameHasNoOwner|not provided/);

  // A new process owns the name again, already needing a reboot.
  fired = changes.next('the service coming back');
  fake = new FakeUpdateEngine(bus.address);
  fake.set({ currentOperation: NEED_REBOOT }, { emit: false });
  await fake.start();
  await fired;
  const owner = rec.events.findLast((e) => e.kind === 'owner-changed');
  assert.ok(owner && owner.kind === 'owner-changed' && owner.owner !== undefined, 'saw the new owner');
  assert.equal((await detector.check()).need, Need.needed);

  // Signals from the new owner reach the same watch.
  fired = changes.next('a signal from the restarted service');
  fake.set({ currentOperation: 'UPDATE_STATUS_IDLE' });
  await fired;
  assert.equal((await detector.check()).need, Need.notNeeded);

  // A crash (connection dropped without releasing the name) is noticed the same way.
  fired = changes.next('the service crashing');
  fake.crash();
  await fired;
  assert.equal((await detector.check()).need, Need.unknown);
});

test('absent at start: unknown with the reason, no crash, and it recovers when the service appears', async (t) => {
  const defer = deferrals(t);
  const detector = new UpdateEngineDetector({ address: bus.address });
  defer(() => detector.close());
  const absent = await detector.check();
  assert.equal(absent.need, Need.unknown);
  assert.match(absent.reason, /com\.coreos\.update1 unavailable/);

  const changes = new Notifications();
  const subscribed = changes.next('the watch to subscribe');
  defer(detector.watch(changes.notify));
  await subscribed;
  assert.equal((await detector.check()).need, Need.unknown);

  const fired = changes.next('the service appearing');
  const fake = new FakeUpdateEngine(bus.address);
  defer(() => fake.stop());
  fake.set({ currentOperation: 'UPDATE_STATUS_IDLE' }, { emit: false });
  await fake.start();
  await fired;
  assert.equal((await detector.check()).need, Need.notNeeded);
});

test('a reply of the wrong shape, or none at all, is unknown — never needed', async (t) => {
  const defer = deferrals(t);
  const fake = await new FakeUpdateEngine(bus.address).start();
  defer(() => fake.stop());
  const detector = new UpdateEngineDetector({ address: bus.address, callTimeoutMs: 300 });
  defer(() => detector.close());

  fake.replyMode = 'garbage';
  const garbage = await detector.check();
  assert.equal(garbage.need, Need.unknown);
  assert.match(garbage.reason, /unexpected GetStatus reply/);

  fake.replyMode = 'silent';
  const silent = await detector.check();
  assert.equal(silent.need, Need.unknown);
  assert.match(silent.reason, /no reply within 300 ms/);

  fake.replyMode = 'normal';
  assert.equal((await detector.check()).need, Need.notNeeded, 'the same connection still works');
});

test('no bus: unknown, the watch retries with capped exponential backoff, and recovers when the bus starts', async (t) => {
  const defer = deferrals(t);
  const lateBus = await PrivateBus.create({ start: false });
  defer(() => lateBus.dispose());
  const rec = eventRecorder();
  const detector = new UpdateEngineDetector({
    address: lateBus.address,
    backoff: { initialMs: 10, maxMs: 40 },
    onEvent: rec.onEvent,
  });
  defer(() => detector.close());

  const noBus = await detector.check();
  assert.equal(noBus.need, Need.unknown);
  assert.match(noBus.reason, /ENOENT|ECONNREFUSED/);

  const changes = new Notifications();
  defer(detector.watch(changes.notify));
  let lost = 0;
  await rec.waitFor('five failed attempts', (e) => e.kind === 'lost' && ++lost === 5);
  const delays = rec.events
    .filter((e) => e.kind === 'lost')
    .map((e) => (e.kind === 'lost' ? e.retryInMs : 0));
  assert.deepEqual(delays.slice(0, 5), [10, 20, 40, 40, 40]);
  assert.equal(changes.count, 0, 'retries without a subscription do not notify');

  const fake = new FakeUpdateEngine(lateBus.address);
  defer(() => fake.stop());
  const subscribed = rec.waitFor('the watch to subscribe', (e) => e.kind === 'subscribed');
  await lateBus.start();
  await subscribed;
  const appeared = changes.next('the service appearing');
  fake.set({ currentOperation: NEED_REBOOT }, { emit: false });
  await fake.start();
  await appeared;
  assert.equal((await detector.check()).need, Need.needed);
});

test('the bus restarting: unknown while it is down, then reconnected and subscribed again', async (t) => {
  const defer = deferrals(t);
  const ownBus = await PrivateBus.create();
  defer(() => ownBus.dispose());
  let fake = await new FakeUpdateEngine(ownBus.address).start();
  defer(() => fake.stop());
  const rec = eventRecorder();
  const detector = new UpdateEngineDetector({
    address: ownBus.address,
    backoff: { initialMs: 10, maxMs: 100 },
    onEvent: rec.onEvent,
  });
  defer(() => detector.close());
  const changes = new Notifications();
  const subscribed = changes.next('the watch to subscribe');
  defer(detector.watch(changes.notify));
  await subscribed;

  const lostIt = changes.next('the connection dropping');
  await ownBus.stop();
  await lostIt;
  const down = await detector.check();
  assert.equal(down.need, Need.unknown);
  assert.match(down.reason, /D-Bus connection to unix:path=/);

  const back = rec.waitFor('a new subscription', (e) => e.kind === 'subscribed');
  await ownBus.start();
  await back;
  fake = new FakeUpdateEngine(ownBus.address);
  const appeared = changes.next('the service on the new bus');
  await fake.start();
  await appeared;
  assert.equal((await detector.check()).need, Need.notNeeded);
  const fired = changes.next('a signal on the new bus');
  fake.set({ currentOperation: NEED_REBOOT });
  await fired;
  assert.equal((await detector.check()).need, Need.needed);
});
