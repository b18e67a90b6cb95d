import assert from 'node:assert/strict';
import { once } from 'node:events';
import { type AddressInfo, createServer as createNetServer, type Socket } from 'node:net';
import { test } from 'node:test';
import type { V1Lease } from '@kubernetes/client-node';
import { Annotations as A, AgentProtocol, FleetLockKeys as K } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import { advertisedUrl } from '../../src/cli/operator.ts';
import type { FleetLockNode } from '../../src/fleetlock/answer.ts';
import {
  type FleetLockBackend,
  FORWARD_TIMEOUT_MS,
  handle,
  type Route,
  route,
  serveFleetLock,
} from '../../src/fleetlock/server.ts';
import { advertOf, advertValue } from '../../src/kube/lease-advert.ts';
import { speaking } from '../../src/operator/decide/agent-protocol.ts';
import { viewNode } from '../../src/operator/decide/node-view.ts';
import { fleetLockNode } from '../../src/operator/protocols/fleetlock-nodes.ts';
import { ago, NOW, node } from './operator-fixtures.ts';

const ID = '4d4a86c9c6644a479560ded5d19a30c5';
const body = JSON.stringify({ client_params: { id: ID, group: 'coreos' } });
const idle: FleetLockNode = {
  name: 'n1',
  pool: 'coreos',
  phase: Phase.idle,
  grantedThisBoot: false,
  needRecorded: false,
};

function backend(over: Partial<FleetLockBackend> = {}) {
  const writes: string[] = [];
  const b: FleetLockBackend = {
    refusal: () => undefined,
    leader: () => undefined,
    nodes: () => [idle],
    annotate: async (n, annotations) => {
      writes.push(`${n} ${JSON.stringify(annotations)}`);
    },
    ...over,
  };
  return { b, writes };
}
interface Req {
  method: string;
  url: string;
  header: string | undefined;
  body: string | undefined;
}
const req = (url: string, over: Partial<Req> = {}): Req => ({
  method: 'POST',
  url,
  header: 'true',
  body,
  ...over,
});
const quiet = () => {};

test("a pre-reboot's first call records the need with the request's time, a steady-state before it removed, and is told to wait", async () => {
  const { b, writes } = backend();
  const got = await handle(b, req('/v1/pre-reboot'), () => NOW, quiet);
  assert.equal(got.status, 409);
  assert.deepEqual(writes, [
    `n1 ${JSON.stringify({ [K.preReboot]: NOW.toISOString(), [K.steadyState]: null })}`,
  ]);
  const { b: needing, writes: steadyWrites } = backend({ nodes: () => [{ ...idle, needRecorded: true }] });
  const steady = await handle(needing, req('/v1/steady-state'), () => NOW, quiet);
  assert.equal(steady.status, 200);
  assert.deepEqual(steadyWrites, [`n1 ${JSON.stringify({ [K.steadyState]: NOW.toISOString() })}`]);
});

test('what is refused before the operator is asked writes nothing', async () => {
  const table: Array<[string, Req, Partial<FleetLockBackend>, number, string]> = [
    ['a body over the limit', req('/v1/pre-reboot', { body: undefined }), {}, 413, 'body_too_large'],
    ['no header', req('/v1/pre-reboot', { header: undefined }), {}, 400, 'missing_protocol_header'],
    ['a follower', req('/v1/pre-reboot'), { refusal: () => 'not leading' }, 503, 'not_leader'],
  ];
  for (const [what, r, over, status, kind] of table) {
    const { b, writes } = backend(over);
    const got = await handle(b, r, () => NOW, quiet);
    assert.equal(got.status, status, what);
    assert.equal('kind' in got ? got.kind : undefined, kind, what);
    assert.deepEqual(writes, [], what);
  }
});

test('a write that fails is a 503 to ask again, not an answer', async () => {
  const { b } = backend({
    annotate: async () => {
      throw new Error('connection reset');
    },
  });
  const got = await handle(b, req('/v1/pre-reboot'), () => NOW, quiet);
  assert.equal(got.status, 503);
  assert.equal('kind' in got ? got.kind : undefined, 'not_recorded');
});

test('a node reads to the server as granted only in a grant phase, with the grant, on the granted boot', () => {
  const at = (state: string, bootId: string, extra: Record<string, string> = {}) =>
    fleetLockNode(
      speaking(
        viewNode(
          node('n', {
            annotations: {
              [A.state]: state,
              [A.stateSince]: ago(5),
              [K.granted]: 'true',
              [A.grantedBootId]: 'boot-1',
              [K.preReboot]: ago(60),
              ...extra,
            },
            bootId,
          }),
        ),
        AgentProtocol.fleetlock,
      ),
      'coreos',
    );
  assert.equal(at(Phase.rebootGranted, 'boot-1').grantedThisBoot, true);
  assert.equal(at(Phase.rebootGranted, 'boot-1').needRecorded, true);
  assert.equal(at(Phase.rebootGranted, 'boot-2').grantedThisBoot, false, 'rebooted already');
  assert.equal(at(Phase.afterReboot, 'boot-1').grantedThisBoot, false, 'not a grant phase');
  assert.equal(at(Phase.rebootGranted, 'boot-1', { [K.granted]: 'x' }).grantedThisBoot, false, 'no grant');
  assert.equal(at(Phase.rebootGranted, 'boot-1').pool, 'coreos');
  const nuoNode = fleetLockNode(viewNode(node('n', {})), 'coreos');
  assert.equal(nuoNode.pool, undefined, "a node read through nuo's protocol is in no FleetLock pool");
});

test('a replica answers while it leads, forwards to the leader it read on the Lease otherwise, never twice, and refuses when it cannot tell', () => {
  const table: Array<[string, string | undefined, boolean, string | undefined, Route]> = [
    ['leading', undefined, false, 'http://10.0.0.6:9090', { kind: 'answer' }],
    ['leading, a forwarded request', undefined, true, undefined, { kind: 'answer' }],
    [
      'following',
      'does not lead',
      false,
      'http://10.0.0.6:9090',
      { kind: 'forward', to: 'http://10.0.0.6:9090' },
    ],
    [
      'following, forwarded to it already: no loop',
      'does not lead',
      true,
      'http://10.0.0.6:9090',
      { kind: 'refuse' },
    ],
    ['following, no leader known', 'does not lead', false, undefined, { kind: 'refuse' }],
  ];
  for (const [what, refusal, forwarded, leader, want] of table)
    assert.deepEqual(route(refusal, forwarded, leader), want, what);
});

test("a leader's advert on its Lease is read only while it holds the Lease: one an earlier holder left is not", () => {
  const lease = (holder: string, annotation?: string): V1Lease => ({
    metadata: {
      name: 'nuo-operator',
      ...(annotation === undefined ? {} : { annotations: { k: annotation } }),
    },
    spec: { holderIdentity: holder },
  });
  const table: Array<[string, V1Lease | undefined, string | undefined]> = [
    ['no Lease', undefined, undefined],
    ['no advert', lease('op-a'), undefined],
    ["the holder's", lease('op-a', advertValue('op-a', 'http://a:9090')), 'http://a:9090'],
    ["an earlier holder's", lease('op-b', advertValue('op-a', 'http://a:9090')), undefined],
    ['released (no holder)', lease('', advertValue('op-a', 'http://a:9090')), undefined],
    ['malformed', lease('op-a', 'http://a:9090'), undefined],
    ['a value that is not a string', lease('op-a', JSON.stringify({ holder: 'op-a', value: 7 })), undefined],
  ];
  for (const [what, l, want] of table) assert.equal(advertOf(l, 'k'), want, what);
});

test('where a replica says its FleetLock server answers: the flag, else $POD_IP and the port; refused when malformed or FleetLock is off', () => {
  assert.equal(advertisedUrl(undefined, '10.0.0.5', 9090), 'http://10.0.0.5:9090');
  assert.equal(advertisedUrl(undefined, 'fd00::5', 9090), 'http://[fd00::5]:9090');
  assert.equal(advertisedUrl(undefined, undefined, 9090), undefined, 'no pod IP: nothing to tell');
  assert.equal(advertisedUrl('https://op-a.nuo:9443', '10.0.0.5', 9090), 'https://op-a.nuo:9443');
  assert.equal(advertisedUrl(undefined, '10.0.0.5', 0), undefined, 'FleetLock off');
  assert.throws(() => advertisedUrl('op-a:9090', undefined, 9090), /not an http or https URL/);
  assert.throws(() => advertisedUrl('::', undefined, 9090), /is not a URL/);
  assert.throws(() => advertisedUrl('http://a:1', undefined, 0), /needs --fleetlock-port/);
});

test('a replica that shuts down answers a relay still waiting on a leader that never answers at once, and closes', {
  timeout: FORWARD_TIMEOUT_MS / 2,
}, async () => {
  const asked = Promise.withResolvers<void>();
  const held: Socket[] = [];
  const silentLeader = createNetServer((socket) => {
    held.push(socket);
    socket.once('data', () => asked.resolve());
  }).listen(0);
  await once(silentLeader, 'listening');
  const leaderPort = (silentLeader.address() as AddressInfo).port;
  const stopping = new AbortController();
  const { b } = backend({ refusal: () => 'not leading', leader: () => `http://127.0.0.1:${leaderPort}` });
  const server = serveFleetLock({ port: 0, backend: b, log: quiet, stopping: stopping.signal });
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  try {
    const answer = fetch(`http://127.0.0.1:${port}/v1/pre-reboot`, {
      method: 'POST',
      headers: { 'fleet-lock-protocol': 'true' },
      body,
    });
    await asked.promise;
    const closed = once(server, 'close');
    stopping.abort();
    const res = await answer;
    assert.equal(res.status, 503);
    assert.deepEqual(await res.json(), {
      kind: 'not_leader',
      value: 'this replica is shutting down: ask again',
    });
    await closed;
  } finally {
    for (const s of held) s.destroy();
    silentLeader.close();
  }
});
