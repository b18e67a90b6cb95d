/**
 * The logind rebooter against a fake logind owning org.freedesktop.login1 on a real private dbus-daemon.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SystemBusClient } from '../../src/agent/dbus/client.ts';
import { UpdateEngineDetector } from '../../src/agent/detect/update-engine.ts';
import { Need } from '../../src/agent/os.ts';
import { LogindRebooter } from '../../src/agent/reboot/logind.ts';
import { deferrals, PrivateBus, usePrivateBus } from './bus.ts';
import { FakeLogind, FakeUpdateEngine } from './fake-services.ts';

const bus = await usePrivateBus();

test('Reboot(false) is received by logind, with the boolean argument false', async (t) => {
  const defer = deferrals(t);
  const logind = await new FakeLogind(bus.address).start();
  defer(() => logind.stop());
  const rebooter = new LogindRebooter({ address: bus.address });
  defer(() => rebooter.close());

  await rebooter.reboot();
  assert.equal(logind.calls.length, 1);
  assert.deepEqual(logind.calls[0]?.signature, 'b');
  assert.deepEqual(logind.calls[0]?.body, [false]);
  assert.equal(typeof logind.calls[0]?.body[0], 'boolean');
});

test('a refusal from logind rejects with its D-Bus error', async (t) => {
  const defer = deferrals(t);
  const logind = await new FakeLogind(bus.address).start();
  defer(() => logind.stop());
  logind.refuse = { name: 'org.freedesktop.DBus.Error.AccessDenied', text: 'Permission denied' };
  const rebooter = new LogindRebooter({ address: bus.address });
  defer(() => rebooter.close());

  await assert.rejects(
    rebooter.reboot(),
    /logind did not accept Reboot\(false\): .*org\.freedesktop\.DBus\.Error\.AccessDenied: Permission denied/,
  );
  assert.equal(logind.calls.length, 1, 'asked once, not retried');
});

test('logind or the bus absent: reboot() rejects with the reason', async (t) => {
  const defer = deferrals(t);
  const rebooter = new LogindRebooter({ address: bus.address });
  defer(() => rebooter.close());
  await assert.rejects(rebooter.reboot(), /org\.freedesktop\.login1/);

  const noBus = await PrivateBus.create({ start: false });
  defer(() => noBus.dispose());
  const stranded = new LogindRebooter({ address: noBus.address });
  defer(() => stranded.close());
  await assert.rejects(stranded.reboot(), /logind did not accept Reboot\(false\): .*ENOENT/);
});

test('a detector and the rebooter can share one connection', async (t) => {
  const defer = deferrals(t);
  const logind = await new FakeLogind(bus.address).start();
  defer(() => logind.stop());
  const engine = await new FakeUpdateEngine(bus.address).start();
  defer(() => engine.stop());
  engine.set({ currentOperation: 'UPDATE_STATUS_UPDATED_NEED_REBOOT' }, { emit: false });
  const client = new SystemBusClient({ address: bus.address });
  defer(() => client.close());
  const detector = new UpdateEngineDetector({ client });
  const rebooter = new LogindRebooter({ client });

  assert.equal((await detector.check()).need, Need.needed);
  await rebooter.reboot();
  assert.equal(logind.calls.length, 1);
  const [first] = logind.calls;
  const conn = await client.connection();
  assert.equal(first?.sender, conn.uniqueName, 'the call came over the shared connection');
  detector.close();
  rebooter.close();
  assert.equal(conn.isClosed, false, 'closing users of a shared client leaves it open');
});
