/**
 * nuo's FleetLock server on the real control plane: three simulated nodes run a FleetLock client playing
 * Zincati's loop (src/sim/fleetlock-client.ts: steady-state until 200 at each start, pre-reboot until 200
 * once an update is staged, and only then the reboot) against the --fleetlock-port of two operator
 * replicas, as a Service selecting both sends them (the follower forwards to the leader), under a
 * pool of budget 1 that speaks FleetLock, beside a pool of nuo's own agents. The independent checker
 * counts a FleetLock reboot as nuo's only with nuo's grant on the boot it rebooted from. Malformed
 * requests are answered in the protocol's {kind, value} format and record nothing.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { CoordinationV1Api, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, UPDATE_POLICY } from '../../src/api/crd.ts';
import { AgentProtocol, Annotations, FleetLockKeys } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import type { UpdatePolicySpec } from '../../src/api/update-policy.ts';
import { appSpecificId } from '../../src/fleetlock/node-id.ts';
import type { FleetLockOp } from '../../src/fleetlock/request.ts';
import { mergePatch, strategicMergePatch } from '../../src/kube/patch.ts';
import type { Budget } from '../../src/sim/checker.ts';
import { Fleet } from '../../src/sim/fleet.ts';
import { FleetLockClient } from '../../src/sim/fleetlock-client.ts';
import { installPolicyCrd } from '../../src/sim/policies.ts';
import { pollUntil } from '../../src/util/poll.ts';
import { FAST_LEASE, useCluster } from './support.ts';

const cluster = await useCluster({ nodes: 6 });
const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
const custom = cluster.kubeconfig.makeApiClient(CustomObjectsApi);
const coordination = cluster.kubeconfig.makeApiClient(CoordinationV1Api);
const FL_NODES = ['node-0', 'node-1', 'node-2'];
const NUO_NODES = ['node-3', 'node-4', 'node-5'];
const GROUP = 'coreos';
const ref = { group: API_GROUP, version: API_VERSION, plural: UPDATE_POLICY.plural };
const machineIds = new Map(FL_NODES.map((n) => [n, randomBytes(16).toString('hex')]));

/** A port free now, for the operator's FleetLock server. */
async function freePort(): Promise<number> {
  const s = createServer().listen(0, '127.0.0.1');
  await new Promise((r) => s.once('listening', r));
  const address = s.address();
  await new Promise((r) => s.close(r));
  return typeof address === 'object' && address ? address.port : assert.fail('no port');
}
const port = await freePort();
const url = `http://127.0.0.1:${port}`;
/** A second replica's FleetLock server: it does not lead, and forwards to the leader (op-a). */
const followerPort = await freePort();
const followerUrl = `http://127.0.0.1:${followerPort}`;
/** Which server each client asks, as a Service picks a replica: node-0 the leader, the others the follower. */
const clientUrl = (node: string) => (node === 'node-0' ? url : followerUrl);

const answers: Array<{ node: string; op: FleetLockOp; status: number; kind?: string }> = [];
let fleet: Fleet | undefined;

const budgets: Budget[] = [
  { name: `pool ${GROUP}`, selects: (l) => l.pool === GROUP, max: 1, protocol: AgentProtocol.fleetlock },
  { name: 'pool nuo', selects: (l) => l.pool === 'nuo', max: 1 },
  { name: 'both pools', selects: (l) => l.pool === GROUP || l.pool === 'nuo', max: 2 },
];

async function createPolicy(name: string, spec: UpdatePolicySpec): Promise<void> {
  await custom.createClusterCustomObject({
    ...ref,
    body: { apiVersion: `${API_GROUP}/${API_VERSION}`, kind: UPDATE_POLICY.kind, metadata: { name }, spec },
  });
}

const annotationsOf = async (name: string) => (await core.readNode({ name })).metadata?.annotations ?? {};
const fleetLockKeysOf = async (name: string) =>
  Object.fromEntries(
    Object.entries(await annotationsOf(name)).filter(([k]) => k.startsWith('nuo.dev/fleetlock-')),
  );

/** A raw request to the server: what a client other than Zincati (or a broken one) may send. */
async function post(
  path: string,
  body: string,
  headers: Record<string, string> = { 'fleet-lock-protocol': 'true' },
) {
  const res = await fetch(`${url}${path}`, { method: 'POST', headers, body });
  return { status: res.status, body: (await res.json()) as { kind?: string; value?: string } };
}

before(async () => {
  await core.createNamespace({ body: { metadata: { name: 'nuo-system' } } });
  await installPolicyCrd(cluster);
  for (const [names, pool] of [
    [FL_NODES, GROUP],
    [NUO_NODES, 'nuo'],
  ] as const)
    for (const name of names)
      await core.patchNode({ name, body: { metadata: { labels: { pool } } } }, mergePatch);
  const quick = { soak: '1s', retryBackoff: '5s' };
  await createPolicy(GROUP, {
    nodeSelector: { matchLabels: { pool: GROUP } },
    agentProtocol: AgentProtocol.fleetlock,
    maxUnavailable: 1,
    reboot: quick,
  });
  await createPolicy('nuo', {
    nodeSelector: { matchLabels: { pool: 'nuo' } },
    maxUnavailable: 1,
    reboot: quick,
  });
  const agents = Object.fromEntries(
    FL_NODES.map((node) => [
      node,
      new FleetLockClient({
        url: clientUrl(node),
        machineId: machineIds.get(node) ?? '',
        group: GROUP,
        retryMs: 300,
        onAnswer: (a) => answers.push(a),
      }),
    ]),
  );
  // The kubelets post their status every 2 s (a kubelet's default is 5 minutes): a withdrawn need waits
  // for that post.
  fleet = new Fleet(cluster, {
    rebootMs: 300,
    budget: budgets,
    agentCheckIntervalMs: 2000,
    agents,
    kubelet: { reportMs: 2000 },
  });
  await fleet.start();
  // What the kubelet reports from /etc/machine-id; the hosts' own status writes merge beside it.
  for (const [name, machineID] of machineIds)
    await core.patchNodeStatus({ name, body: { status: { nodeInfo: { machineID } } } }, strategicMergePatch);
  fleet.startOperator('op-a', [
    ...FAST_LEASE,
    `--fleetlock-port=${port}`,
    `--fleetlock-advertise-url=${url}`,
  ]);
  await pollUntil('op-a to lead', async () =>
    (await coordination.readNamespacedLease({ name: 'nuo-operator', namespace: 'nuo-system' })).spec
      ?.holderIdentity === 'op-a'
      ? true
      : undefined,
  );
  fleet.startOperator('op-b', [
    ...FAST_LEASE,
    `--fleetlock-port=${followerPort}`,
    `--fleetlock-advertise-url=${followerUrl}`,
  ]);
});

after(async () => {
  await fleet?.stop();
});

describe('FleetLock', () => {
  test('every client is answered steady-state 200 at its start, once the leader has planned its pool', async () => {
    await pollUntil(
      'a steady-state 200 for each FleetLock node',
      async () =>
        FL_NODES.every((n) =>
          answers.some((a) => a.node === n && a.op === 'steady-state' && a.status === 200),
        )
          ? true
          : undefined,
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    for (const n of FL_NODES) assert.deepEqual(await fleetLockKeysOf(n), {}, `${n}: nothing to record`);
  });

  test("malformed requests are answered in the protocol's error format and record nothing", async () => {
    const id = appSpecificId(machineIds.get('node-0') ?? '') ?? '';
    const good = JSON.stringify({ client_params: { id, group: GROUP } });
    const cases: Array<
      [string, Promise<{ status: number; body: { kind?: string; value?: string } }>, number, string]
    > = [
      [
        'no protocol header',
        post('/v1/pre-reboot', good, { 'content-type': 'application/json' }),
        400,
        'missing_protocol_header',
      ],
      ['a body not JSON', post('/v1/pre-reboot', '{"client_params": '), 400, 'bad_json'],
      ['no client_params', post('/v1/pre-reboot', '{"id": "x"}'), 400, 'bad_request'],
      [
        'an unknown group',
        post('/v1/pre-reboot', JSON.stringify({ client_params: { id, group: 'workers' } })),
        409,
        'unknown_group',
      ],
      [
        'an unknown id',
        post('/v1/pre-reboot', JSON.stringify({ client_params: { id: 'f'.repeat(32), group: GROUP } })),
        404,
        'unknown_id',
      ],
      [
        'the machine ID itself, not its app-specific ID',
        post(
          '/v1/pre-reboot',
          JSON.stringify({ client_params: { id: machineIds.get('node-0'), group: GROUP } }),
        ),
        404,
        'unknown_id',
      ],
      ['an unknown path', post('/v1/lock', good), 404, 'not_found'],
    ];
    for (const [what, call, status, kind] of cases) {
      const got = await call;
      assert.equal(got.status, status, what);
      assert.equal(got.body.kind, kind, what);
      assert.ok((got.body.value ?? '').length > 10, `${what}: the value says what to do`);
    }
    for (const n of FL_NODES) assert.deepEqual(await fleetLockKeysOf(n), {}, `${n}: nothing recorded`);
  });

  test('the FleetLock pool rolls one node at a time beside the nuo pool: each reboot after a 200 nuo granted', async () => {
    const f = fleet ?? assert.fail('no fleet');
    f.stageUpdates();
    await pollUntil(
      'every node rebooted once and Idle',
      async () => {
        const nodes = (await core.listNode()).items;
        const done = [...FL_NODES, ...NUO_NODES].every((name) => {
          const n = nodes.find((x) => x.metadata?.name === name);
          return (
            n?.metadata?.annotations?.[Annotations.state] === Phase.idle && f.checker.rebootsOf(name) === 1
          );
        });
        return done ? true : undefined;
      },
      { timeoutMs: 240_000, intervalMs: 250 },
    );
    // The client's steady-state after its reboot is answered 200 at its first try after the attempt ended.
    await pollUntil('each FleetLock client released after its reboot', async () =>
      FL_NODES.every(
        (n) => answers.filter((a) => a.node === n && a.op === 'steady-state' && a.status === 200).length >= 2,
      )
        ? true
        : undefined,
    );
    for (const name of FL_NODES) {
      const n = await core.readNode({ name });
      const a = n.metadata?.annotations ?? {};
      const mine = answers.filter((x) => x.node === name);
      assert.equal(
        mine.filter((x) => x.op === 'pre-reboot' && x.status === 200).length,
        1,
        `${name}: one lock`,
      );
      assert.ok(
        mine.some((x) => x.op === 'steady-state' && x.kind === 'lock_held'),
        `${name}: its steady-state waited for the health gate`,
      );
      assert.ok(
        Date.parse(a[FleetLockKeys.steadyState] ?? '') > Date.parse(a[FleetLockKeys.preReboot] ?? ''),
        name,
      );
      assert.equal(a[FleetLockKeys.granted], undefined, `${name}: the grant cleared at the end`);
      assert.equal(a[Annotations.grantedBootId], undefined, name);
      assert.equal(n.spec?.unschedulable, undefined, `${name}: uncordoned`);
    }
    const waited = answers.filter((x) => x.op === 'pre-reboot' && x.kind === 'lock_not_granted');
    assert.ok(
      new Set(waited.map((x) => x.node)).size >= 2,
      'under a budget of 1, at least two of three clients were told to wait',
    );
    assert.ok(
      answers.some((x) => x.node !== 'node-0' && x.op === 'pre-reboot' && x.status === 200),
      "a lock taken through the follower's server",
    );
    assert.deepEqual(
      answers.filter((x) => x.status === 503),
      [],
      'every request answered by the leader, those sent to the follower forwarded: none refused 503',
    );
    await f.checker.finalCheck();
    await f.checker.settle();
    assert.deepEqual(f.checker.violations, [], 'the checker saw no violation');
    assert.ok(
      f.checker.maxDisrupted <= 2,
      `at most both budgets disrupted at once (saw ${f.checker.maxDisrupted})`,
    );
  });

  test("a client's steady-state on its new boot, before its kubelet posts the new boot ID, frees no slot: the attempt waits for the new boot and its health gate", async () => {
    const f = fleet ?? assert.fail('the rollout test runs first');
    const host = f.hosts.get('node-1') ?? assert.fail('no host node-1');
    const lagMs = 6000;
    host.kubeletLate(lagMs);
    const from = answers.length;
    const granted = (await core.readNode({ name: 'node-1' })).status?.nodeInfo?.bootID;
    f.stageUpdates(['node-1']);
    await pollUntil(
      "node-1's steady-state on its new boot answered while the API still shows the granted boot",
      async () =>
        answers.slice(from).some((a) => a.node === 'node-1' && a.op === 'steady-state' && a.status === 409)
          ? true
          : undefined,
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    const early = await core.readNode({ name: 'node-1' });
    assert.equal(early.status?.nodeInfo?.bootID, granted, 'the kubelet has not posted the new boot yet');
    assert.equal(early.metadata?.annotations?.[FleetLockKeys.steadyState] !== undefined, true, 'recorded');
    assert.equal(early.spec?.unschedulable, true, 'still cordoned: the attempt goes on');
    assert.match(early.metadata?.annotations?.[Annotations.state] ?? '', /^(RebootGranted|Rebooting)$/);
    await pollUntil(
      'node-1 through the health gate on its new boot, Idle',
      async () => {
        const n = await core.readNode({ name: 'node-1' });
        return n.status?.nodeInfo?.bootID !== granted &&
          n.metadata?.annotations?.[Annotations.state] === Phase.idle
          ? true
          : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 250 },
    );
    // The write that ended the attempt is the completion, which only the health gate on the new boot
    // writes; an end as a withdrawn need says so, and the checker's ended-before-boot rule names it too.
    const reason = (await core.readNode({ name: 'node-1' })).metadata?.annotations?.[Annotations.stateReason];
    assert.equal(reason, 'rebooted and healthy', 'completed through the health gate');
    assert.equal(f.checker.rebootsOf('node-1'), 2, 'its one reboot of this rollout');
    await f.checker.settle();
    assert.deepEqual(f.checker.violations, [], 'the checker saw no violation');
  });

  test("a kubelet later than the reboot timeout after the client's steady-state: the attempt fails closed (Failed, cordoned, its slot kept), then the new boot takes it through the health gate", async () => {
    const f = fleet ?? assert.fail('the rollout test runs first');
    const host = f.hosts.get('node-2') ?? assert.fail('no host node-2');
    const rebootTimeout = { ...ref, name: GROUP, body: { spec: { reboot: { rebootTimeout: '3s' } } } };
    await custom.patchClusterCustomObject(rebootTimeout, mergePatch);
    try {
      host.kubeletLate(15_000);
      const granted = (await core.readNode({ name: 'node-2' })).status?.nodeInfo?.bootID;
      f.stageUpdates(['node-2']);
      const failed = await pollUntil(
        'node-2 Failed while its kubelet still shows the granted boot',
        async () => {
          const n = await core.readNode({ name: 'node-2' });
          return n.metadata?.annotations?.[Annotations.state] === Phase.failed ? n : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 100 },
      );
      assert.equal(failed.status?.nodeInfo?.bootID, granted, 'the kubelet has not posted the new boot yet');
      assert.equal(failed.spec?.unschedulable, true, 'still cordoned');
      assert.match(failed.metadata?.annotations?.[Annotations.stateReason] ?? '', /it may be booting/);
      const done = await pollUntil(
        'node-2 through the health gate on its new boot, Idle',
        async () => {
          const n = await core.readNode({ name: 'node-2' });
          return n.status?.nodeInfo?.bootID !== granted &&
            n.metadata?.annotations?.[Annotations.state] === Phase.idle
            ? n
            : undefined;
        },
        { timeoutMs: 120_000, intervalMs: 250 },
      );
      assert.equal(done.metadata?.annotations?.[Annotations.stateReason], 'rebooted and healthy');
      await f.checker.settle();
      assert.deepEqual(
        f.checker.violations,
        [],
        'the checker saw no violation (no slot freed before the boot)',
      );
    } finally {
      await custom.patchClusterCustomObject(
        { ...rebootTimeout, body: { spec: { reboot: { rebootTimeout: null } } } },
        mergePatch,
      );
    }
  });

  test('a client restarted after its grant says steady-state on the granted boot: once the kubelet posts that boot again, the attempt ends as a withdrawn need, uncordoned, with no reboot', async () => {
    const f = fleet ?? assert.fail('the rollout test runs first');
    const host = f.hosts.get('node-0') ?? assert.fail('no host node-0');
    // The test speaks for the client: its pre-reboot, then, as if it restarted before rebooting, the
    // steady-state Zincati sends first at each start.
    await host.killAgent();
    const id = appSpecificId(machineIds.get('node-0') ?? '') ?? '';
    const asks = JSON.stringify({ client_params: { id, group: GROUP } });
    const reboots = f.checker.rebootsOf('node-0');
    try {
      assert.equal((await post('/v1/pre-reboot', asks)).status, 409, 'the need recorded: wait');
      const granted = await pollUntil(
        'node-0 drained and granted',
        async () => {
          const n = await core.readNode({ name: 'node-0' });
          return n.metadata?.annotations?.[Annotations.state] === Phase.rebootGranted ? n : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 100 },
      );
      const steady = await post('/v1/steady-state', asks);
      assert.equal(steady.status, 409, 'the lock stays held until the kubelet confirms the boot');
      assert.equal(steady.body.kind, 'lock_held');
      const done = await pollUntil(
        "node-0's attempt ended once its kubelet posted the granted boot again",
        async () => {
          const n = await core.readNode({ name: 'node-0' });
          return n.metadata?.annotations?.[Annotations.state] === Phase.idle ? n : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 250 },
      );
      assert.equal(done.status?.nodeInfo?.bootID, granted.status?.nodeInfo?.bootID, 'the same boot');
      assert.match(
        done.metadata?.annotations?.[Annotations.stateReason] ?? '',
        /withdrew its need before rebooting/,
      );
      assert.ok(!done.spec?.unschedulable, "nuo's cordon undone");
      assert.equal(f.checker.rebootsOf('node-0'), reboots, 'no reboot');
      assert.equal((await post('/v1/steady-state', asks)).status, 200, 'the lock released');
    } finally {
      host.restartAgent();
    }
    await f.checker.settle();
    assert.deepEqual(f.checker.violations, [], 'the checker saw no violation');
  });

  test('a FleetLock host that reboots without a 200 is recorded by the checker as a reboot nuo did not grant', async () => {
    const f = fleet ?? assert.fail('the rollout test runs first');
    const host = f.hosts.get('node-0') ?? assert.fail('no host node-0');
    await host.reboot();
    await pollUntil('the rogue reboot seen', async () =>
      f.checker.rebootsOf('node-0') === 2 ? true : undefined,
    );
    await f.checker.settle();
    const found = f.checker.violations.filter((v) => v.rule === 'reboot-without-grant');
    assert.equal(found.length, 1, JSON.stringify(f.checker.violations));
    assert.match(
      found[0]?.detail ?? '',
      /node-0 rebooted without a grant nuo gave: no nuo.dev\/fleetlock-granted="true"/,
    );
  });
});
