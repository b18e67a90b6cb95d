import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  DEFAULT_SYSTEM_BUS_ADDRESS,
  parseBusAddress,
  systemBusAddress,
} from '../../src/agent/dbus/address.ts';
import { SystemBusClient } from '../../src/agent/dbus/client.ts';
import { describeError, matchRule } from '../../src/agent/dbus/connection.ts';
import { CosUpdateEngineDetector } from '../../src/agent/detect/cos-update-engine.ts';
import {
  engineDetection,
  parseEngineStatus,
  UpdateEngineDetector,
} from '../../src/agent/detect/update-engine.ts';
import { Need } from '../../src/agent/os.ts';
import { LogindRebooter } from '../../src/agent/reboot/logind.ts';
import { SignalRebooter, signalNumber } from '../../src/agent/reboot/signal.ts';

test('parseBusAddress accepts unix paths and tcp, unescaping values', () => {
  assert.deepEqual(parseBusAddress('unix:path=/run/dbus/system_bus_socket'), {
    transport: 'unix',
    path: '/run/dbus/system_bus_socket',
  });
  assert.deepEqual(parseBusAddress('unix:path=/tmp/a%2db,guid=0123456789abcdef'), {
    transport: 'unix',
    path: '/tmp/a-b',
  });
  assert.deepEqual(parseBusAddress('tcp:host=127.0.0.1,port=55556'), {
    transport: 'tcp',
    host: '127.0.0.1',
    port: 55556,
  });
});

test('parseBusAddress rejects bad addresses naming the address and the problem', () => {
  const cases: Array<[string, RegExp]> = [
    ['', /invalid D-Bus address "": empty/],
    ['/run/dbus/system_bus_socket', /"\/run\/dbus\/system_bus_socket": expected "transport:key=value/],
    ['unix:', /a unix address needs path=/],
    ['unix:path', /expected key=value, got "path"/],
    ['unix:path=relative/sock', /socket path "relative\/sock" is not absolute/],
    ['unix:abstract=/tmp/dbus-x', /abstract sockets need the native "usocket" module/],
    ['unix:path=/a,path=/b', /key "path" given twice/],
    ['unix:path=/a,tmpdir=/tmp', /unsupported key\(s\) tmpdir/],
    ['unix:path=/a%ZZ', /bad %-escape/],
    ['unix:path=/a%3ab', /containing ":"/],
    ['tcp:host=localhost', /a tcp address needs port=/],
    ['tcp:host=localhost,port=http', /port "http" is not an integer in 1\.\.65535/],
    ['tcp:host=localhost,port=70000', /port "70000"/],
    ['launchd:env=DBUS_LAUNCHD_SESSION_BUS_SOCKET', /unsupported transport "launchd"/],
    ['unix:path=/a;unix:path=/b', /lists of addresses are not supported/],
  ];
  for (const [address, message] of cases) {
    assert.throws(() => parseBusAddress(address), message, address);
  }
});

test('the system bus address: explicit, else DBUS_SYSTEM_BUS_ADDRESS, else the standard socket', () => {
  assert.equal(DEFAULT_SYSTEM_BUS_ADDRESS, 'unix:path=/run/dbus/system_bus_socket');
  assert.equal(systemBusAddress(undefined, {}), DEFAULT_SYSTEM_BUS_ADDRESS);
  assert.equal(systemBusAddress(undefined, { DBUS_SYSTEM_BUS_ADDRESS: '' }), DEFAULT_SYSTEM_BUS_ADDRESS);
  assert.equal(systemBusAddress(undefined, { DBUS_SYSTEM_BUS_ADDRESS: 'unix:path=/x' }), 'unix:path=/x');
  assert.equal(systemBusAddress('unix:path=/y', { DBUS_SYSTEM_BUS_ADDRESS: 'unix:path=/x' }), 'unix:path=/y');
  assert.equal(
    new SystemBusClient({ env: { DBUS_SYSTEM_BUS_ADDRESS: 'unix:path=/from/env' } }).address,
    'unix:path=/from/env',
  );
});

test('D-Bus components validate their configuration in the constructor', () => {
  assert.throws(() => new UpdateEngineDetector({ address: 'nonsense' }), /invalid D-Bus address "nonsense"/);
  assert.throws(
    () => new CosUpdateEngineDetector({ address: 'unix:path=rel' }),
    /"unix:path=rel": socket path "rel"/,
  );
  assert.throws(() => new LogindRebooter({ address: 'tcp:port=0' }), /invalid D-Bus address "tcp:port=0"/);
  assert.throws(
    () => new UpdateEngineDetector({ env: { DBUS_SYSTEM_BUS_ADDRESS: 'bogus' } }),
    /invalid D-Bus address "bogus"/,
  );
  assert.throws(
    () => new SystemBusClient({ callTimeoutMs: -1 }),
    /callTimeoutMs must be a positive integer .* got -1/,
  );
  assert.throws(() => new SystemBusClient({ connectTimeoutMs: 0.5 }), /connectTimeoutMs .* got 0\.5/);
  assert.throws(() => new SystemBusClient({ backoff: { initialMs: 0 } }), /backoff: initialMs .*got 0/);
  assert.throws(
    () => new SystemBusClient({ backoff: { initialMs: 100, maxMs: 10 } }),
    /backoff: maxMs must be a number ≥ initialMs \(got 10, initialMs 100\)/,
  );
});

test('the bus backoff: defaults, and options merged over them', () => {
  assert.deepEqual(new SystemBusClient({ address: 'unix:path=/nonexistent' }).backoff, {
    initialMs: 500,
    maxMs: 30_000,
  });
  assert.deepEqual(
    new SystemBusClient({ address: 'unix:path=/nonexistent', backoff: { maxMs: 1_000 } }).backoff,
    {
      initialMs: 500,
      maxMs: 1_000,
    },
  );
});

test('signal names and numbers', () => {
  const cases: Array<[string | number, number]> = [
    ['SIGRTMIN+5', 39],
    ['RTMIN+5', 39],
    ['sigrtmin+5', 39],
    ['SIGRTMIN', 34],
    ['SIGRTMAX', 64],
    ['SIGRTMAX-2', 62],
    ['SIGTERM', 15],
    ['TERM', 15],
    ['SIGINT', 2],
    ['SIGUSR1', 10],
    [39, 39],
  ];
  for (const [signal, n] of cases) assert.equal(signalNumber(signal), n, String(signal));
  const bad: Array<[string | number, RegExp]> = [
    ['SIGFOO', /unknown signal "SIGFOO"/],
    ['', /unknown signal ""/],
    ['SIGRTMIN+31', /"SIGRTMIN\+31" is outside SIGRTMIN\.\.SIGRTMAX/],
    ['SIGRTMIN-1', /outside/],
    ['SIGRTMAX+1', /outside/],
    [0, /invalid signal number 0/],
    [65, /invalid signal number 65/],
    [1.5, /invalid signal number 1\.5/],
  ];
  for (const [signal, message] of bad) assert.throws(() => signalNumber(signal), message, String(signal));
  assert.throws(() => new SignalRebooter({ signal: 'SIGFOO' }), /signal rebooter: unknown signal "SIGFOO"/);
  assert.throws(() => new SignalRebooter({ pid: 0 }), /pid must be a positive integer, got 0/);
  assert.throws(() => new SignalRebooter({ pid: 1.5 }), /got 1\.5/);
  const defaults = new SignalRebooter();
  assert.deepEqual([defaults.pid, defaults.signal], [1, 39]);
});

test('match rules quote their values', () => {
  assert.equal(
    matchRule({ type: 'signal', sender: 'com.coreos.update1', member: 'StatusUpdate' }),
    "type='signal',sender='com.coreos.update1',member='StatusUpdate'",
  );
  assert.equal(matchRule({ arg0: "it's" }), "arg0='it'\\''s'");
});

test('describeError names D-Bus errors', () => {
  assert.equal(
    describeError({ type: 'org.freedesktop.DBus.Error.ServiceUnknown', text: 'not provided' }),
    'org.freedesktop.DBus.Error.ServiceUnknown: not provided',
  );
  assert.equal(describeError(new Error('connect ENOENT /x')), 'connect ENOENT /x');
  assert.equal(describeError('plain'), 'plain');
});

test('update_engine status bodies: shape checks and the verdict', () => {
  const body = [1_700_000_000n, 0, 'UPDATE_STATUS_UPDATED_NEED_REBOOT', '4081.2.0', 300_000_000n];
  const status = parseEngineStatus(body);
  const d = engineDetection(status);
  assert.equal(d.need, Need.needed);
  assert.deepEqual(d.update, {
    status: 'UPDATE_STATUS_UPDATED_NEED_REBOOT',
    newVersion: '4081.2.0',
    lastCheckedTime: new Date(1_700_000_000_000),
  });
  for (const op of [
    'UPDATE_STATUS_IDLE',
    'UPDATE_STATUS_CHECKING_FOR_UPDATE',
    'UPDATE_STATUS_UPDATE_AVAILABLE',
    'UPDATE_STATUS_DOWNLOADING',
    'UPDATE_STATUS_VERIFYING',
    'UPDATE_STATUS_FINALIZING',
    'UPDATE_STATUS_REPORTING_ERROR_EVENT',
  ]) {
    assert.equal(engineDetection(parseEngineStatus([0n, 0, op, '', 0n])).need, Need.notNeeded, op);
  }
  assert.deepEqual(engineDetection(parseEngineStatus([0, 0.5, 'UPDATE_STATUS_IDLE', '', 0])).update, {
    status: 'UPDATE_STATUS_IDLE',
  });
  assert.throws(() => parseEngineStatus(['x']), /expected 5 values \(xdssx\), got 1/);
  assert.throws(() => parseEngineStatus([0n, 0, 42, '', 0n]), /current_operation is not a string/);
  assert.throws(
    () => parseEngineStatus(['now', 0, 'UPDATE_STATUS_IDLE', '', 0n]),
    /last_checked_time is not an int64/,
  );
  assert.throws(() => parseEngineStatus([0n, '0', 'UPDATE_STATUS_IDLE', '', 0n]), /progress is not a double/);
});

test('a closed client refuses connections and watches nothing, without throwing', async () => {
  const client = new SystemBusClient({ address: 'unix:path=/nonexistent/nuo-test.sock' });
  client.close();
  await assert.rejects(client.connection(), /the D-Bus client was closed/);
  const stop = client.watch({ name: 'com.coreos.update1', signals: [] }, () => assert.fail('no events'));
  stop();
  const detector = new UpdateEngineDetector({ client });
  const d = await detector.check();
  assert.equal(d.need, Need.unknown);
  assert.match(d.reason, /the D-Bus client was closed/);
});
