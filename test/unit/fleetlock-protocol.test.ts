import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Phase } from '../../src/api/phases.ts';
import { answer, type FleetLockNode, FleetLockWrite } from '../../src/fleetlock/answer.ts';
import {
  FleetLockOp,
  type FleetLockRequest,
  isFleetLockError,
  parseRequest,
} from '../../src/fleetlock/request.ts';

const ID = '4d4a86c9c6644a479560ded5d19a30c5';
const body = (params: unknown) => JSON.stringify({ client_params: params });

describe('parseRequest', () => {
  test("reads Zincati's request", () => {
    assert.deepEqual(parseRequest('POST', '/v1/pre-reboot', 'true', body({ id: ID, group: 'coreos' })), {
      op: FleetLockOp.preReboot,
      id: ID,
      group: 'coreos',
    });
    assert.deepEqual(
      parseRequest('POST', '/v1/steady-state', 'True', body({ id: ID.toUpperCase(), group: 'g' })),
      {
        op: FleetLockOp.steadyState,
        id: ID,
        group: 'g',
      },
    );
  });

  const refused: [string, string, string, string | undefined, string, number, string][] = [
    ['an unknown path', 'POST', '/v1/lock', 'true', body({ id: ID, group: 'g' }), 404, 'not_found'],
    ['GET', 'GET', '/v1/pre-reboot', 'true', '', 405, 'method_not_allowed'],
    [
      'no protocol header',
      'POST',
      '/v1/pre-reboot',
      undefined,
      body({ id: ID, group: 'g' }),
      400,
      'missing_protocol_header',
    ],
    [
      'header not true',
      'POST',
      '/v1/pre-reboot',
      'false',
      body({ id: ID, group: 'g' }),
      400,
      'missing_protocol_header',
    ],
    ['a body not JSON', 'POST', '/v1/pre-reboot', 'true', '{client_params', 400, 'bad_json'],
    ['JSON null', 'POST', '/v1/pre-reboot', 'true', 'null', 400, 'bad_request'],
    ['no client_params', 'POST', '/v1/pre-reboot', 'true', '{}', 400, 'bad_request'],
    ['no id', 'POST', '/v1/steady-state', 'true', body({ group: 'g' }), 400, 'bad_request'],
    [
      'an id not a string',
      'POST',
      '/v1/steady-state',
      'true',
      body({ id: 7, group: 'g' }),
      400,
      'bad_request',
    ],
    ['an empty group', 'POST', '/v1/steady-state', 'true', body({ id: ID, group: ' ' }), 400, 'bad_request'],
  ];
  for (const [name, method, path, header, text, status, kind] of refused)
    test(`refuses ${name} with ${status} ${kind}`, () => {
      const got = parseRequest(method, path, header, text);
      assert.ok(isFleetLockError(got));
      assert.equal(got.status, status);
      assert.equal(got.kind, kind);
      assert.ok(got.value.length > 10, 'the value says what to do');
    });
});

const pre: FleetLockRequest = { op: FleetLockOp.preReboot, id: ID, group: 'coreos' };
const steady: FleetLockRequest = { ...pre, op: FleetLockOp.steadyState };
const node = (over: Partial<FleetLockNode> = {}): FleetLockNode => ({
  name: 'n1',
  pool: 'coreos',
  phase: Phase.idle,
  grantedThisBoot: false,
  needRecorded: false,
  ...over,
});

describe('answer', () => {
  const cases: [
    string,
    FleetLockRequest,
    FleetLockNode[],
    number,
    string | undefined,
    FleetLockWrite | undefined,
  ][] = [
    ['an unknown id', pre, [], 404, 'unknown_id', undefined],
    ['an id two nodes share', pre, [node(), node({ name: 'n2' })], 409, 'ambiguous_id', undefined],
    ['a node in no FleetLock pool', pre, [node({ pool: undefined })], 409, 'not_fleetlock_pool', undefined],
    ['another group than the pool', { ...pre, group: 'other' }, [node()], 409, 'unknown_group', undefined],
    ['the first pre-reboot: recorded, not yet', pre, [node()], 409, 'lock_not_granted', FleetLockWrite.need],
    [
      'a pre-reboot while pending',
      pre,
      [node({ phase: Phase.pending, needRecorded: true })],
      409,
      'lock_not_granted',
      undefined,
    ],
    [
      'a pre-reboot while draining',
      pre,
      [node({ phase: Phase.draining, needRecorded: true })],
      409,
      'lock_not_granted',
      undefined,
    ],
    [
      'a pre-reboot once granted',
      pre,
      [node({ phase: Phase.rebootGranted, needRecorded: true, grantedThisBoot: true })],
      200,
      undefined,
      undefined,
    ],
    [
      'a pre-reboot after the reboot',
      pre,
      [node({ phase: Phase.afterReboot, needRecorded: true })],
      409,
      'lock_not_granted',
      undefined,
    ],
    ['a steady-state holding no slot', steady, [node()], 200, undefined, undefined],
    [
      'a steady-state withdrawing a need',
      steady,
      [node({ phase: Phase.pending, needRecorded: true })],
      200,
      undefined,
      FleetLockWrite.steadyState,
    ],
    [
      'a steady-state in the health gate',
      steady,
      [node({ phase: Phase.afterReboot, needRecorded: true })],
      409,
      'lock_held',
      FleetLockWrite.steadyState,
    ],
    [
      'a steady-state granted, not rebooted',
      steady,
      [node({ phase: Phase.rebootGranted, needRecorded: true, grantedThisBoot: true })],
      409,
      'lock_held',
      FleetLockWrite.steadyState,
    ],
    ['a steady-state of a failed node', steady, [node({ phase: Phase.failed })], 409, 'lock_held', undefined],
    [
      'a steady-state again in the health gate',
      steady,
      [node({ phase: Phase.afterReboot })],
      409,
      'lock_held',
      undefined,
    ],
    [
      'a steady-state in another group',
      { ...steady, group: 'x' },
      [node({ phase: Phase.afterReboot })],
      409,
      'unknown_group',
      undefined,
    ],
  ];
  for (const [name, req, matches, status, kind, record] of cases)
    test(name, () => {
      const got = answer(req, matches);
      assert.equal(got.status, status);
      assert.equal('kind' in got ? got.kind : undefined, kind);
      assert.equal(got.record, record);
    });
});
