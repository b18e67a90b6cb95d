/**
 * One clock per decision (safety rule 10), on the real control plane: two operator replicas whose wall
 * clocks are 10 minutes apart (Debian's faketime), one leading after the other. An attempt the first
 * admitted and the second ended is never taken for an admission still to come and redone past the node's
 * gates (the retry backoff, the reboot-loop gate, a skipped node, an autoscaler removing it, the
 * remediation rate limit); a wait another leader began is not shortened by a clock ahead (the backoff, a
 * phase's timeout). And a refresh whose boot time does not advance counts as an ineffective reboot. The
 * independent checker watches every reboot.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';
import { CoordinationV1Api, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, UPDATE_POLICY } from '../../src/api/crd.ts';
import { Annotations, AutoscalerTaints, Labels } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import type { UpdatePolicy, UpdatePolicySpec } from '../../src/api/update-policy.ts';
import { mergePatch } from '../../src/kube/patch.ts';
import { LedgerStore } from '../../src/operator/read/ledger.ts';
import { Fleet, type FleetOptions } from '../../src/sim/fleet.ts';
import { RebootBehaviour } from '../../src/sim/host.ts';
import { clearNodeProblem, setNodeProblem } from '../../src/sim/node-problem.ts';
import { installPolicyCrd } from '../../src/sim/policies.ts';
import { undrainablePod } from '../../src/sim/workload.ts';
import { pollUntil } from '../../src/util/poll.ts';
import { FAST_LEASE, operatorLog, resetNodes, useCluster } from './support.ts';

const cluster = await useCluster({ nodes: 3 });
const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
const custom = cluster.kubeconfig.makeApiClient(CustomObjectsApi);
const ledger = new LedgerStore(core, 'nuo-system');
const ref = { group: API_GROUP, version: API_VERSION, plural: UPDATE_POLICY.plural };
const HOOK = 'test.nuo.dev/ready';
/** The skew between the two leaders' wall clocks. */
const SKEW_S = 600;
const NODE = 'node-0';

let fleet: Fleet | undefined;
/** Each test's operators log under names of their own: the log files outlive a test. */
let run = 0;
const first = () => `first-${run}`;
const next = () => `next-${run}`;

before(async () => {
  await core.createNamespace({ body: { metadata: { name: 'nuo-system' } } });
  await installPolicyCrd(cluster);
});

afterEach(async () => {
  await fleet?.stop();
  fleet = undefined;
  const list = (await custom.listClusterCustomObject(ref)) as { items: UpdatePolicy[] };
  for (const p of list.items) await custom.deleteClusterCustomObject({ ...ref, name: p.metadata.name });
  await resetNodes(core);
  await core.patchNode(
    { name: NODE, body: { metadata: { labels: { [Labels.skipped]: null } }, spec: { taints: null } } },
    mergePatch,
  );
});

after(async () => {
  await fleet?.stop();
});

async function startFleet(spec: UpdatePolicySpec, options: Partial<FleetOptions> = {}): Promise<Fleet> {
  run++;
  const f = new Fleet(cluster, { rebootMs: 300, budget: 1, agentCheckIntervalMs: 1000, ...options });
  fleet = f;
  await f.start();
  await f.applyPolicy(spec);
  return f;
}

const annotations = async () => (await core.readNode({ name: NODE })).metadata?.annotations ?? {};
const reason = async () => (await annotations())[Annotations.stateReason] ?? '';

/**
 * The first leader (`firstSkewS`) admits node-0 and dies with it held at a before-reboot hook; the second
 * (`nextSkewS`) leads from there. `meanwhile` runs between the two (the hook set, a taint written).
 */
async function handOver(
  f: Fleet,
  firstSkewS: number,
  nextSkewS: number,
  meanwhile: () => Promise<void> = async () => {},
): Promise<void> {
  f.startOperator(first(), FAST_LEASE, { clockSkewS: firstSkewS });
  await pollUntil('node-0 admitted by the first leader, held at its hook', async () =>
    (await reason()).includes(`before-reboot hooks: ${HOOK}`) ? true : undefined,
  );
  await f.killOperator(first());
  await meanwhile();
  f.startOperator(next(), FAST_LEASE, { clockSkewS: nextSkewS });
}

/**
 * One attempt in the test (the ledger starts afresh with each: its first number, which the node names),
 * not in an attempt now, its slot freed.
 */
async function attemptedOnce(): Promise<void> {
  const { ledger: l } = await ledger.read();
  assert.equal(l.attempts, 1, 'one attempt handed out');
  assert.equal(NODE in l.slots, false, 'its slot is freed');
  const a = await annotations();
  assert.equal(a[Annotations.attempt], '1');
  assert.match(a[Annotations.state] ?? '', /^(Pending|Idle)$/);
}

/** Waits until node-0's reason matches `pattern`, which only the gate's own wait writes. */
const waitsFor = (what: string, pattern: RegExp) =>
  pollUntil(`node-0 waiting for ${what}`, async () => (pattern.test(await reason()) ? true : undefined), {
    timeoutMs: 60_000,
    intervalMs: 250,
  });

describe('an attempt ended under a leader 10 minutes behind the one that admitted it is not redone past its gates', () => {
  test('a before-reboot hook that timed out: the retry backoff holds', async () => {
    const f = await startFleet({
      reboot: { soak: '1s', retryBackoff: '10m', beforeRebootAnnotations: [HOOK] },
      drain: { timeout: '5s' },
    });
    f.stageUpdates([NODE]);
    await handOver(f, SKEW_S, 0);
    await waitsFor('the retry backoff', /retry after .*\(1 failure/);
    await attemptedOnce();
    assert.equal(f.checker.rebootsOf(NODE), 0);
  });

  test('a reboot whose need survived: the reboot-loop gate holds', async () => {
    const f = await startFleet(
      {
        reboot: { soak: '1s', retryBackoff: '1s', maxIneffectiveReboots: 1, beforeRebootAnnotations: [HOOK] },
      },
      { behaviours: { [NODE]: RebootBehaviour.needSurvives } },
    );
    f.stageUpdates([NODE]);
    await handOver(f, SKEW_S, 0, () =>
      core
        .patchNode({ name: NODE, body: { metadata: { annotations: { [HOOK]: 'true' } } } }, mergePatch)
        .then(() => {}),
    );
    await waitsFor('a person: the loop stopped', /stopped: the need survived 1 reboots in a row/);
    await attemptedOnce();
    assert.equal(f.checker.rebootsOf(NODE), 1, 'rebooted once, not again');
  });

  test('a node skipped for its failed drain: it stays skipped', async () => {
    await undrainablePod(cluster.kubeconfig, 'stuck', NODE);
    try {
      const f = await startFleet({
        reboot: { soak: '1s', retryBackoff: '1s', beforeRebootAnnotations: [HOOK] },
        drain: { timeout: '3s', onFailure: { action: 'Skip', afterAttempts: 1 } },
      });
      f.stageUpdates([NODE]);
      await handOver(f, SKEW_S, 0, () =>
        core
          .patchNode({ name: NODE, body: { metadata: { annotations: { [HOOK]: 'true' } } } }, mergePatch)
          .then(() => {}),
      );
      await waitsFor('a person: skipped', /skipped: its drain failed 1 time/);
      await attemptedOnce();
    } finally {
      await core.deleteNamespace({ name: 'stuck' });
    }
  });

  test('a node the cluster autoscaler is removing: it is left to the autoscaler', async () => {
    const f = await startFleet({
      reboot: { soak: '1s', retryBackoff: '1s', beforeRebootAnnotations: [HOOK] },
      drain: { timeout: '5s' },
    });
    f.stageUpdates([NODE]);
    await handOver(f, SKEW_S, 0, () =>
      core
        .patchNode(
          {
            name: NODE,
            body: { spec: { taints: [{ key: AutoscalerTaints.clusterAutoscaler, effect: 'NoSchedule' }] } },
          },
          mergePatch,
        )
        .then(() => {}),
    );
    await waitsFor('the autoscaler', /the cluster autoscaler .* is removing the node/);
    await attemptedOnce();
  });

  test('a remediation: the pool has had its one an hour', async () => {
    const f = await startFleet({
      remediation: { conditions: [{ type: 'KernelDeadlock', for: '1s' }], maxPerHour: 1 },
      reboot: { soak: '1s', retryBackoff: '1s', beforeRebootAnnotations: [HOOK] },
      drain: { timeout: '5s' },
    });
    await setNodeProblem(core, NODE, { type: 'KernelDeadlock', reason: 'DockerHung', since: new Date() });
    try {
      await handOver(f, SKEW_S, 0);
      await waitsFor('the remediation rate limit', /remediation rate limit \(1 an hour in the pool/);
      await attemptedOnce();
    } finally {
      await clearNodeProblem(core, NODE, 'KernelDeadlock');
    }
  });
});

describe('a wait another leader began is not shortened by a next leader whose clock is 10 minutes ahead', () => {
  test('the retry backoff counts from when the next leader first saw the node waiting', async () => {
    const f = await startFleet({
      reboot: { soak: '1s', retryBackoff: '2m', beforeRebootAnnotations: [HOOK] },
      drain: { timeout: '3s' },
    });
    f.stageUpdates([NODE]);
    f.startOperator(first(), FAST_LEASE);
    await waitsFor('the retry backoff the first leader wrote', /retry after .*\(1 failure/);
    await f.killOperator(first());
    f.startOperator(next(), FAST_LEASE, { clockSkewS: SKEW_S });
    // The next leader's own reason: the backoff from its first sight, on its clock 10 minutes ahead.
    await pollUntil('node-0 waiting out a backoff counted by the next leader', async () => {
      const retry = /retry after (\S+)/.exec(await reason())?.[1];
      return retry && Date.parse(retry) > Date.now() + (SKEW_S + 60) * 1000 ? true : undefined;
    });
    await attemptedOnce();
  });

  test("a reboot's timeout counts from when the next leader first saw the node granted: a slow return is not Failed at once", async () => {
    const f = await startFleet(
      { reboot: { soak: '1s', rebootTimeout: '2m', returnTimeout: '2m' } },
      // Down long enough for the next leader to find it still rebooting, whatever its start-up takes.
      { rebootMsByNode: { [NODE]: 45_000 } },
    );
    f.stageUpdates([NODE]);
    f.startOperator(first(), FAST_LEASE);
    await pollUntil('node-0 rebooting on its grant', async () =>
      f.checker.rebootsOf(NODE) === 1 ? true : undefined,
    );
    const before = (await core.readNode({ name: NODE })).status?.nodeInfo?.bootID;
    await f.killOperator(first());
    f.startOperator(next(), FAST_LEASE, { clockSkewS: SKEW_S });
    await pollUntil('the next leader to lead', async () => {
      const lease = await cluster.kubeconfig
        .makeApiClient(CoordinationV1Api)
        .readNamespacedLease({ name: 'nuo-operator', namespace: 'nuo-system' });
      return lease.spec?.holderIdentity === next() ? true : undefined;
    });
    assert.equal(
      (await core.readNode({ name: NODE })).status?.nodeInfo?.bootID,
      before,
      'node-0 still rebooting when the next leader takes over (else this test shows nothing)',
    );
    await pollUntil(
      'node-0 back and Idle',
      async () => ((await annotations())[Annotations.state] === Phase.idle ? true : undefined),
      { timeoutMs: 150_000, intervalMs: 250 },
    );
    const failed = operatorLog(cluster, next()).filter((l) => l.node === NODE && /failed/.test(l.msg));
    assert.deepEqual(failed, [], 'never declared Failed');
    assert.equal((await annotations())[Annotations.failures], undefined, 'no failure counted');
    await f.checker.settle();
    assert.deepEqual(f.checker.violations, []);
  });
});

describe('a refresh tied to the boot', () => {
  test('a refresh after which the agent still reports the old boot time counts as ineffective, and the reboot-loop gate stops it', async () => {
    const HOUR = 3_600_000;
    const f = await startFleet(
      { reboot: { soak: '1s', retryBackoff: '1s', maxUptime: '1h', maxIneffectiveReboots: 2 } },
      { bootedAt: { [NODE]: new Date(Date.now() - 3 * HOUR) } },
    );
    const host = f.hosts.get(NODE) ?? assert.fail('no host node-0');
    host.freezeBootTime();
    // Each refresh is one reboot of the node: two, then the loop gate holds it.
    f.checker.allowReboots(NODE, 2);
    f.startOperator(first(), FAST_LEASE);
    await waitsFor('a person: the loop stopped', /stopped: the need survived 2 reboots in a row/);
    const a = await annotations();
    assert.equal(a[Annotations.ineffectiveReboots], '2');
    assert.equal(
      a[Annotations.bootTimeBootId],
      (await core.readNode({ name: NODE })).status?.nodeInfo?.bootID,
    );
    assert.equal(f.checker.rebootsOf(NODE), 2, 'two refreshes, no more');
    await f.checker.settle();
    assert.deepEqual(f.checker.violations, []);
  });
});
