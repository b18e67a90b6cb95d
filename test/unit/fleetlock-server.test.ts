import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Annotations as A, AgentProtocol, FleetLockKeys as K } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import type { FleetLockNode } from '../../src/fleetlock/answer.ts';
import { type FleetLockBackend, handle } from '../../src/fleetlock/server.ts';
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
