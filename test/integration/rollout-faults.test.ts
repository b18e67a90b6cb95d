/**
 * Reboot coordination under faults, on the real control plane: operator replicas SIGKILLed mid-drain and
 * mid-reboot, agents restarted around their reboot, malformed annotations, and the commands people type
 * (`nuo reboot|pause|resume|status`). The independent checker fails every test on any breach.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { AppsV1Api, CoordinationV1Api, CoreV1Api, PolicyV1Api } from '@kubernetes/client-node';
import { Annotations } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import { podsOnNode } from '../../src/drain/plan-reads.ts';
import { mergePatch } from '../../src/kube/patch.ts';
import { Fleet } from '../../src/sim/fleet.ts';
import { deployment, waitAvailable } from '../../src/sim/workload.ts';
import { pollUntil } from '../../src/util/poll.ts';
import {
  FAST_LEASE,
  operatorLog as operatorLogOf,
  operatorUnder,
  resetNodes,
  runNuo,
  useCluster,
} from './support.ts';

const NODES = ['node-0', 'node-1', 'node-2', 'node-3', 'node-4'];
const cluster = await useCluster({ nodes: NODES.length, zones: 2 });
const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
const apps = cluster.kubeconfig.makeApiClient(AppsV1Api);
const policy = cluster.kubeconfig.makeApiClient(PolicyV1Api);
const coordination = cluster.kubeconfig.makeApiClient(CoordinationV1Api);

await core.createNamespace({ body: { metadata: { name: 'nuo-system' } } });
await core.createNamespace({ body: { metadata: { name: 'app' } } });
await pollUntil('default ServiceAccount in app', () =>
  core.readNamespacedServiceAccount({ name: 'default', namespace: 'app' }).then(() => true),
);
await apps.createNamespacedDeployment({ namespace: 'app', body: deployment('app', 'web', 4) });
await policy.createNamespacedPodDisruptionBudget({
  namespace: 'app',
  body: { metadata: { name: 'web' }, spec: { maxUnavailable: 1, selector: { matchLabels: { app: 'web' } } } },
});
await waitAvailable(apps, 'app', 'web');

/** Every message the operator logs when it changes something (attempt-writes.ts, reconciler.ts, drain-runner.ts). */
const ACTIONS = new Set([
  'admitted',
  'phase',
  'draining',
  'reboot granted',
  'completed',
  'slot released',
  'attempt aborted; slot released',
  'node failed; its slot stays held',
]);

let fleet: Fleet | undefined;
after(() => fleet?.stop());

async function newFleet(budget: number, options: Partial<ConstructorParameters<typeof Fleet>[1]> = {}) {
  await fleet?.stop();
  await resetNodes(core);
  fleet = new Fleet(cluster, { rebootMs: 300, budget, agentCheckIntervalMs: 2000, ...options });
  await fleet.start();
  return fleet;
}

async function annotations(name: string): Promise<Record<string, string>> {
  return (await core.readNode({ name })).metadata?.annotations ?? {};
}

async function annotate(name: string, values: Record<string, string | null>) {
  await core.patchNode({ name, body: { metadata: { annotations: values } } }, mergePatch);
}

async function nodeStates() {
  return (await core.listNode()).items.map((n) => ({
    name: n.metadata?.name ?? '',
    state: n.metadata?.annotations?.[Annotations.state],
    reason: n.metadata?.annotations?.[Annotations.stateReason],
  }));
}

/** Waits until `node` is in one of `phases`; returns the phase it was seen in. */
async function waitPhase(node: string, phases: string[], timeoutMs = 120_000): Promise<string> {
  return pollUntil(
    `${node} in ${phases.join('|')}`,
    async () => {
      const state = (await annotations(node))[Annotations.state];
      return state !== undefined && phases.includes(state) ? state : undefined;
    },
    { timeoutMs, intervalMs: 100 },
  );
}

/** The rolled nodes each rebooted exactly once and are Idle with nothing pending; the others never rebooted. */
async function rolloutDone(f: Fleet, rolled: string[], timeoutMs = 180_000) {
  await pollUntil(
    `${rolled.join(', ')} rebooted once and back to Idle`,
    async () => {
      for (const name of rolled) {
        const a = await annotations(name);
        if (
          a[Annotations.state] !== Phase.idle ||
          a[Annotations.rebootNeeded] !== undefined ||
          a[Annotations.rebootRequested] !== undefined ||
          a[Annotations.rebootInProgress] !== undefined ||
          f.checker.rebootsOf(name) !== 1
        )
          return undefined;
      }
      return true;
    },
    { timeoutMs, intervalMs: 250 },
  ).catch(async (err) => {
    throw new Error(`${err.message}\n${JSON.stringify(await nodeStates(), null, 1)}`);
  });
  for (const name of NODES) {
    assert.equal(f.checker.rebootsOf(name), rolled.includes(name) ? 1 : 0, `reboots of ${name}`);
  }
}

async function assertSafe(f: Fleet) {
  await f.checker.finalCheck();
  assert.deepEqual(f.checker.violations, [], 'the checker saw no violation');
  assert.deepEqual(f.runaways, [], 'no operator ran away with its memory');
}

async function leaseHolder(): Promise<string | undefined> {
  const lease = await coordination
    .readNamespacedLease({ name: 'nuo-operator', namespace: 'nuo-system' })
    .catch(() => undefined);
  return lease?.spec?.holderIdentity || undefined;
}

async function waitLeader(among: string[]): Promise<string> {
  return pollUntil(
    `one of ${among.join(', ')} to hold the Lease`,
    async () => {
      const holder = await leaseHolder();
      return holder && among.includes(holder) ? holder : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 100 },
  );
}

const operatorLog = (identity: string) => operatorLogOf(cluster, identity);

const logged = (identity: string, msg: string, node?: string) =>
  operatorLog(identity).filter((l) => l.msg === msg && (node === undefined || l.node === node));

function alive(f: Fleet, identity: string): boolean {
  const child = f.operator(identity);
  return child !== undefined && child.exitCode === null && child.signalCode === null;
}

/** Runs the `nuo` CLI against the local cluster. */
const nuo = (...args: string[]) => runNuo(cluster, ...args);

/** Lines of `nuo status` for one node (the table row starts with its name). */
const statusRow = (out: string, node: string) => out.split('\n').find((l) => l.startsWith(`${node} `)) ?? '';

/** How many times the agent of `node` started and looked at its Node (agent.ts logs it once per run). */
function agentStarts(node: string): number {
  const text = readFileSync(join(cluster.dir, 'logs', 'agents.log'), 'utf8');
  return text.split('\n').filter((l) => l.includes(` ${node}: agent running`)).length;
}

describe('operator faults', () => {
  test('operator killed mid-drain: the other replica takes over; no node is granted twice', async () => {
    // One pod pinned to node-0 whose PDB allows no disruption: node-0's drain blocks until the PDB goes.
    const pinned = deployment('app', 'pinned', 1);
    if (pinned.spec?.template.spec)
      pinned.spec.template.spec.nodeSelector = { 'kubernetes.io/hostname': 'node-0' };
    await apps.createNamespacedDeployment({ namespace: 'app', body: pinned });
    await policy.createNamespacedPodDisruptionBudget({
      namespace: 'app',
      body: {
        metadata: { name: 'pinned' },
        spec: { minAvailable: 1, selector: { matchLabels: { app: 'pinned' } } },
      },
    });
    await waitAvailable(apps, 'app', 'pinned');
    await pollUntil('PDB app/pinned to allow no disruption', async () => {
      const p = await policy.readNamespacedPodDisruptionBudget({ name: 'pinned', namespace: 'app' });
      return p.status?.observedGeneration === 1 &&
        p.status.currentHealthy === 1 &&
        p.status.disruptionsAllowed === 0
        ? true
        : undefined;
    });
    try {
      const f = await newFleet(1);
      await operatorUnder(f, 'op-a', { maxUnavailable: 1 });
      await operatorUnder(f, 'op-b', { maxUnavailable: 1 });
      const rolled = ['node-0', 'node-1', 'node-2'];
      f.stageUpdates(rolled);

      await waitPhase('node-0', [Phase.draining]);
      // Kill only once the drain is down to the blocked pod. An eviction the API server accepted but whose
      // client died mid-request can leave the pod in the PDB's disruptedPods without deleting it; the
      // disruption controller forgets such entries only after 2 minutes, stalling the drain that long.
      await pollUntil(
        'node-0 drained down to the pinned pod',
        async () => {
          const pods = await podsOnNode(core, 'node-0');
          return pods.length > 0 && pods.every((p) => p.metadata?.labels?.app === 'pinned')
            ? true
            : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 100 },
      );
      // The leader now is the one draining: under load the Lease may have moved before this point, and the
      // replica that took it resumes the drain (and logs it) within a reconcile.
      const first = await pollUntil('the Lease holder to be draining node-0', async () => {
        const holder = await waitLeader(['op-a', 'op-b']);
        return logged(holder, 'draining', 'node-0').length > 0 ? holder : undefined;
      });
      const second = first === 'op-a' ? 'op-b' : 'op-a';
      await f.killOperator(first, 'SIGKILL');
      assert.equal(await waitLeader([second]), second);
      // The new leader resumes the drain from the node's phase alone; the PDB still blocks it.
      await pollUntil(`${second} to resume draining node-0`, () =>
        logged(second, 'draining', 'node-0').length > 0 ? true : undefined,
      );
      const during = await annotations('node-0');
      assert.equal(during[Annotations.state], Phase.draining);
      assert.equal(during[Annotations.rebootOk], undefined, 'no grant while the PDB blocks the drain');
      assert.equal(f.checker.rebootsOf('node-0'), 0);

      await policy.deleteNamespacedPodDisruptionBudget({ name: 'pinned', namespace: 'app' });
      await rolloutDone(f, rolled);
      await assertSafe(f);
      assert.ok(
        f.checker.maxDisrupted <= 1,
        `never more than one node disrupted (${f.checker.maxDisrupted})`,
      );
      for (const node of rolled) {
        const grants = [...logged('op-a', 'reboot granted', node), ...logged('op-b', 'reboot granted', node)];
        assert.equal(grants.length, 1, `${node} was granted exactly once`);
      }
      assert.equal(logged(second, 'completed', 'node-0').length, 1, `${second} completed node-0`);
      assert.ok(alive(f, second), `${second} is still running`);
    } finally {
      await policy.deleteNamespacedPodDisruptionBudget({ name: 'pinned', namespace: 'app' }).catch(() => {});
      await apps.deleteNamespacedDeployment({ name: 'pinned', namespace: 'app' });
    }
  });

  test('operator killed mid-reboot: the next leader confirms the reboot and completes the node', async () => {
    // Reboots long enough to catch, short enough that the node is back before the next leader takes over.
    const f = await newFleet(1, { rebootMs: 2500 });
    await operatorUnder(f, 'op-c', { maxUnavailable: 1 });
    await operatorUnder(f, 'op-d', { maxUnavailable: 1 });
    const rolled = ['node-1', 'node-2'];
    f.stageUpdates(rolled);

    const victim = await pollUntil(
      'a node granted or rebooting',
      async () =>
        (await nodeStates()).find(
          (s) => rolled.includes(s.name) && (s.state === Phase.rebootGranted || s.state === Phase.rebooting),
        )?.name,
      { timeoutMs: 120_000, intervalMs: 50 },
    );
    const first = await waitLeader(['op-c', 'op-d']);
    const second = first === 'op-c' ? 'op-d' : 'op-c';
    await f.killOperator(first, 'SIGKILL');
    assert.equal(await waitLeader([second]), second);

    await rolloutDone(f, rolled);
    await assertSafe(f);
    assert.ok(f.checker.maxDisrupted <= 1);
    // A SIGKILL can land between the grant's write and its log line: the killed replica's log may lack
    // it, so the reboots are counted by the checker, and the next leader must not have granted again.
    for (const node of rolled) assert.equal(f.checker.rebootsOf(node), 1, `${node} rebooted once`);
    assert.equal(
      logged(second, 'reboot granted', victim).length,
      0,
      `${second} did not grant ${victim} again`,
    );
    assert.equal(logged(first, 'completed', victim).length, 0, `${first} died before completing ${victim}`);
    assert.equal(logged(second, 'completed', victim).length, 1, `${second} completed ${victim}`);
    assert.ok(
      logged(second, 'phase', victim).some((l) => l.to === Phase.afterReboot),
      `${second} confirmed ${victim}'s reboot from its boot ID`,
    );
  });

  test('two replicas through a full rollout: only the lease holder acts', async () => {
    const f = await newFleet(2);
    // Generous lease timings: this test is about a steady leader, not about takeovers on a busy machine.
    const args = ['--lease-duration=15s', '--renew-deadline=10s', '--retry-period=1s'];
    await operatorUnder(f, 'op-e', { maxUnavailable: 2 }, args);
    await operatorUnder(f, 'op-f', { maxUnavailable: 2 }, args);
    const leader = await waitLeader(['op-e', 'op-f']);
    const follower = leader === 'op-e' ? 'op-f' : 'op-e';
    const rolled = ['node-0', 'node-2', 'node-3'];
    f.stageUpdates(rolled);
    await rolloutDone(f, rolled);
    await assertSafe(f);
    assert.equal(await leaseHolder(), leader, 'the leader never changed');

    const leaderLog = operatorLog(leader);
    assert.ok(leaderLog.some((l) => l.msg === 'became leader'));
    for (const node of rolled) {
      for (const msg of ['admitted', 'reboot granted', 'completed']) {
        assert.equal(logged(leader, msg, node).length, 1, `${leader} logged "${msg}" once for ${node}`);
      }
      assert.ok(logged(leader, 'phase', node).length > 0, `${leader} logged phases of ${node}`);
    }
    const followerLog = operatorLog(follower);
    assert.ok(
      followerLog.some((l) => l.msg === 'node cache synced'),
      `${follower} ran (synced its cache) all along`,
    );
    assert.ok(alive(f, follower), `${follower} is still running`);
    assert.deepEqual(
      followerLog.filter((l) => l.msg === 'became leader' || ACTIONS.has(l.msg)),
      [],
      `${follower} never led and never acted`,
    );
  });
});

describe("the operator's own node", () => {
  test("the leader's node is admitted last, and the other replica drains it after the leader hands over", async () => {
    const f = await newFleet(1);
    const spec = { maxUnavailable: 1, reboot: { soak: '1s' } };
    // Paused while the needs are reported, so that the leader's node waits longest: first in line but
    // for being the leader's.
    await f.applyPolicy({ ...spec, paused: true });
    // Generous lease timings: a release hands over at once, and no takeover on a busy machine muddles it.
    const args = ['--lease-duration=15s', '--renew-deadline=10s', '--retry-period=1s'];
    f.startOperator('op-g', args, { nodeName: 'node-3' });
    assert.equal(await waitLeader(['op-g']), 'op-g');
    f.startOperator('op-h', args, { nodeName: 'node-4' });
    await pollUntil('op-h synced its cache', () =>
      operatorLog('op-h').some((l) => l.msg === 'node cache synced') ? true : undefined,
    );
    f.stageUpdates(['node-3']);
    await waitPhase('node-3', [Phase.pending]);
    const rolled = ['node-2', 'node-3', 'node-4'];
    f.stageUpdates(['node-2', 'node-4']);
    await waitPhase('node-2', [Phase.pending]);
    await waitPhase('node-4', [Phase.pending]);
    await f.applyPolicy(spec);

    await rolloutDone(f, rolled);
    await assertSafe(f);
    assert.ok(f.checker.maxDisrupted <= 1);
    const admitted = [...logged('op-g', 'admitted'), ...logged('op-h', 'admitted')]
      .sort((a, b) => Number(a.time) - Number(b.time))
      .map((l) => l.node);
    assert.deepEqual(admitted.slice(2), ['node-3'], `the leader's node went last: ${admitted.join(', ')}`);
    assert.deepEqual(admitted.slice(0, 2).sort(), ['node-2', 'node-4']);
    assert.equal(
      logged('op-g', 'own node known: it goes last in its pool, its drain handed over', 'node-3').length,
      1,
    );
    const handovers = logged('op-g', 'handing over the leadership: its own node is to be drained', 'node-3');
    assert.equal(handovers.length, 1, 'op-g handed over once, before the drain of its node');
    assert.equal(logged('op-g', 'draining', 'node-3').length, 0, 'op-g never drained its own node');
    assert.ok(logged('op-h', 'became leader').length > 0, 'op-h took over');
    assert.ok(logged('op-h', 'draining', 'node-3').length > 0, 'op-h drained node-3');
    assert.equal(logged('op-h', 'completed', 'node-3').length, 1, 'op-h completed node-3');
    assert.equal(await leaseHolder(), 'op-h', 'op-g, its pause over, found op-h leading');
    assert.ok(alive(f, 'op-g'));
  });

  test('a single replica hands over, finds no standby after its pause, and drains its own node itself', async () => {
    const f = await newFleet(1);
    await f.applyPolicy({ maxUnavailable: 1, reboot: { soak: '1s' } });
    f.startOperator('op-i', FAST_LEASE, { nodeName: 'node-1' });
    assert.equal(await waitLeader(['op-i']), 'op-i');
    f.stageUpdates(['node-1']);
    await rolloutDone(f, ['node-1']);
    await assertSafe(f);
    const handover = logged('op-i', 'handing over the leadership: its own node is to be drained', 'node-1');
    assert.equal(handover.length, 1, 'handed over once');
    const drained = logged('op-i', 'draining', 'node-1');
    assert.equal(drained.length, 1, 'then drained its own node');
    assert.ok(
      Number(drained[0]?.time) - Number(handover[0]?.time) >= 3000,
      'only after its pause of one lease duration (3 s)',
    );
    assert.equal(logged('op-i', 'became leader').length, 2, 'it led again');
  });
});

describe('agent restarts', () => {
  test('an agent restarted around its reboot reboots the node exactly once', async () => {
    const f = await newFleet(1, { rebootMs: 2000, agentCheckIntervalMs: 500 });
    await operatorUnder(f, 'op-g', { maxUnavailable: 1 });

    // node-1: its agent is down when the grant arrives; the restarted agent honours the grant, once.
    const host1 = f.hosts.get('node-1');
    assert.ok(host1);
    await host1.killAgent();
    f.checker.allowReboots('node-1');
    await annotate('node-1', { [Annotations.rebootRequested]: new Date().toISOString() });
    await waitPhase('node-1', [Phase.rebootGranted]);
    assert.equal(f.checker.rebootsOf('node-1'), 0, 'no agent, no reboot');
    assert.ok(host1.restartAgent());
    await rolloutDone(f, ['node-1']);

    // node-2: held right after its reboot, with the grant and the in-progress marker still on the node
    // (paused: the operator leaves it alone), while its agent is restarted twice.
    const host2 = f.hosts.get('node-2');
    assert.ok(host2);
    const bootBefore = host2.bootIdValue;
    let starts = agentStarts('node-2');
    f.stageUpdates(['node-2']);
    await waitPhase('node-2', [Phase.rebooting]);
    await annotate('node-2', { [Annotations.paused]: 'true' });
    await pollUntil('node-2 back with a new boot ID', () =>
      host2.bootIdValue !== bootBefore ? true : undefined,
    );
    // The agent the boot started, then two restarts: each looks at the Node with the stale grant on it.
    for (let i = 0; i < 3; i++) {
      if (i > 0) {
        await host2.killAgent();
        assert.ok(host2.restartAgent());
      }
      await pollUntil('node-2 agent to look at its node', () =>
        agentStarts('node-2') > starts ? true : undefined,
      );
      starts = agentStarts('node-2');
      const a = await annotations('node-2');
      assert.match(a[Annotations.rebootOk] ?? '', /^v1\./, 'the stale grant is still there');
      assert.equal(a[Annotations.rebootInProgress], 'true');
      assert.equal(f.checker.rebootsOf('node-2'), 1, 'the stale grant caused no second reboot');
    }
    await annotate('node-2', { [Annotations.paused]: null });
    await rolloutDone(f, ['node-1', 'node-2']);

    // node-3: its agent is restarted as soon as the agent its boot started has looked at the Node, whatever
    // the operator did meanwhile.
    const host3 = f.hosts.get('node-3');
    assert.ok(host3);
    const boot3 = host3.bootIdValue;
    const starts3 = agentStarts('node-3');
    f.stageUpdates(['node-3']);
    await pollUntil(
      'node-3 to go down for its reboot',
      () => (f.checker.rebootsOf('node-3') === 1 ? true : undefined),
      {
        timeoutMs: 120_000,
        intervalMs: 5,
      },
    );
    // While it is down, nothing can start an agent on it (no DaemonSet pod runs on a host that is off).
    assert.equal(host3.bootIdValue, boot3, 'still down');
    assert.equal(host3.restartAgent(), false, 'no agent starts on a host that is down');
    await pollUntil(
      'node-3 back with a new boot ID and its agent running',
      () => (host3.bootIdValue !== boot3 && agentStarts('node-3') > starts3 ? true : undefined),
      { timeoutMs: 120_000, intervalMs: 5 },
    );
    await host3.killAgent();
    assert.ok(host3.restartAgent());
    await rolloutDone(f, ['node-1', 'node-2', 'node-3']);
    await assertSafe(f);
  });
});

describe('bad input', () => {
  test('malformed annotations give a status reason, never a crash; the others roll on', async () => {
    const f = await newFleet(1);
    // reboot-needed is the agent's key and a live agent rewrites it at once: node-0's agent is down.
    await f.hosts.get('node-0')?.killAgent();
    const bad: Record<string, [string, string]> = {
      'node-0': [Annotations.rebootNeeded, 'maybe'],
      'node-1': [Annotations.failures, 'lots'],
      'node-2': [Annotations.rebootRequested, 'tomorrow'],
      'node-3': [Annotations.paused, 'yes'],
    };
    for (const [node, [key, value]] of Object.entries(bad)) await annotate(node, { [key]: value });
    await operatorUnder(f, 'op-h', { maxUnavailable: 1 });
    // node-3 needs a reboot, but a malformed pause reads as paused (fail closed); node-4 rolls.
    f.stageUpdates(['node-3', 'node-4']);
    await rolloutDone(f, ['node-4']);
    for (const [node, [key, value]] of Object.entries(bad)) {
      const reason = await pollUntil(`${node}'s reason to name ${key}`, async () => {
        const r = (await annotations(node))[Annotations.stateReason];
        return r?.includes(`${key}="${value}"`) ? r : undefined;
      });
      assert.match(reason, /malformed/);
    }
    assert.equal((await annotations('node-3'))[Annotations.state], Phase.pending);
    assert.ok(alive(f, 'op-h'), 'the operator is still running');
    assert.deepEqual(
      logged('op-h', 'admitted').map((l) => l.node),
      ['node-4'],
      'only the well-formed node was admitted',
    );

    const status = await nuo('status');
    assert.equal(status.code, 0, status.stderr);
    for (const [node, [key, value]] of Object.entries(bad)) {
      // Named once, as malformed, whether the operator's reason says it or status adds it.
      const row = statusRow(status.stdout, node);
      assert.match(row, new RegExp(`malformed[^;]*${key}="${value}"`));
      assert.equal(row.split(`${key}="${value}"`).length - 1, 1, `named once: ${row}`);
      assert.doesNotMatch(row, /paused; paused/);
    }
    // The reasons stay put: nothing undoes another writer's reason. (The problems used to be written
    // by a second writer after each pass, and the two overwrote each other without end.) An absence
    // cannot be awaited: watch node-3's reason through three resync periods of the operator.
    const reasons = new Set<string | undefined>();
    for (const until = Date.now() + 3000; Date.now() < until; ) {
      reasons.add((await annotations('node-3'))[Annotations.stateReason]);
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(reasons.size, 1, `node-3's reason changed: ${[...reasons].join(' | ')}`);
    await assertSafe(f);
  });
});

describe('cli', () => {
  test('nuo reboot NODE reboots exactly that node once; nuo status shows phases, leader and slot', async () => {
    const f = await newFleet(1);
    // A before-reboot hook holds the node in its slot until the test has looked at `nuo status`.
    const hook = 'hooks.test.nuo.dev/ok';
    await operatorUnder(f, 'op-i', { maxUnavailable: 1, reboot: { beforeRebootAnnotations: [hook] } });
    await waitLeader(['op-i']);
    f.checker.allowReboots('node-2');
    const requested = await nuo('reboot', 'node-2');
    assert.equal(requested.code, 0, requested.stderr);
    assert.match(requested.stdout, /node\/node-2 reboot requested/);
    assert.match((await annotations('node-2'))[Annotations.rebootRequested] ?? '', /^\d{4}-\d{2}-\d{2}T/);
    try {
      await waitPhase('node-2', [Phase.beforeReboot]);
      const status = await nuo('status');
      assert.equal(status.code, 0, status.stderr);
      assert.match(status.stdout, /^leader: op-i$/m);
      assert.match(status.stdout, /^budget: 1 slot\(s\) held by node-2;/m);
      for (const node of NODES) {
        assert.match(statusRow(status.stdout, node), /^node-\d +(Idle|BeforeReboot) /, `a row for ${node}`);
      }
      assert.match(
        statusRow(status.stdout, 'node-2'),
        /BeforeReboot +held .*waiting for before-reboot hooks/,
      );
      await annotate('node-2', { [hook]: 'true' });
      await rolloutDone(f, ['node-2']);
    } finally {
      await annotate('node-2', { [hook]: null });
    }
    assert.equal((await annotations('node-2'))[Annotations.rebootRequested], undefined);
    await assertSafe(f);
  });

  test('nuo pause keeps a node from being admitted while others complete; nuo resume lets it go', async () => {
    const f = await newFleet(1);
    await operatorUnder(f, 'op-j', { maxUnavailable: 1 });
    const paused = await nuo('pause', 'node-3');
    assert.equal(paused.code, 0, paused.stderr);
    assert.match(paused.stdout, /node\/node-3 paused/);
    f.stageUpdates(['node-3', 'node-4']);
    await rolloutDone(f, ['node-4']);
    const waiting = await annotations('node-3');
    assert.equal(waiting[Annotations.state], Phase.pending, JSON.stringify(waiting));
    assert.equal(waiting[Annotations.stateReason], 'paused');
    const status = await nuo('status');
    assert.equal(status.code, 0, status.stderr);
    assert.match(statusRow(status.stdout, 'node-3'), /Pending .*paused/);

    const resumed = await nuo('resume', 'node-3');
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.match(resumed.stdout, /node\/node-3 resumed/);
    await rolloutDone(f, ['node-3', 'node-4']);
    assert.equal((await annotations('node-3'))[Annotations.paused], undefined);
    await assertSafe(f);
  });

  test('a node paused while draining is not granted when the drain ends; resumed, it completes', async () => {
    const pinned = deployment('app', 'pinned-pause', 1);
    if (pinned.spec?.template.spec)
      pinned.spec.template.spec.nodeSelector = { 'kubernetes.io/hostname': 'node-1' };
    await apps.createNamespacedDeployment({ namespace: 'app', body: pinned });
    await policy.createNamespacedPodDisruptionBudget({
      namespace: 'app',
      body: {
        metadata: { name: 'pinned-pause' },
        spec: { minAvailable: 1, selector: { matchLabels: { app: 'pinned-pause' } } },
      },
    });
    await waitAvailable(apps, 'app', 'pinned-pause');
    await pollUntil('PDB app/pinned-pause to allow no disruption', async () => {
      const p = await policy.readNamespacedPodDisruptionBudget({ name: 'pinned-pause', namespace: 'app' });
      return p.status?.currentHealthy === 1 && p.status.disruptionsAllowed === 0 ? true : undefined;
    });
    try {
      const f = await newFleet(1);
      await operatorUnder(f, 'op-p', { maxUnavailable: 1 });
      f.stageUpdates(['node-1']);
      await waitPhase('node-1', [Phase.draining]);
      assert.equal((await nuo('pause', 'node-1')).code, 0);
      await policy.deleteNamespacedPodDisruptionBudget({ name: 'pinned-pause', namespace: 'app' });
      // The drain ends either way; then the operator either grants (the bug) or says it holds back.
      await pollUntil('the drain to end while paused', async () =>
        logged('op-p', 'drained, but paused: no grant until resumed', 'node-1').length > 0 ||
        (await annotations('node-1'))[Annotations.rebootOk] !== undefined
          ? true
          : undefined,
      );
      const held = await annotations('node-1');
      assert.equal(held[Annotations.state], Phase.draining);
      assert.equal(held[Annotations.rebootOk], undefined, 'no grant while paused');
      assert.equal(f.checker.rebootsOf('node-1'), 0);
      assert.equal((await nuo('resume', 'node-1')).code, 0);
      await rolloutDone(f, ['node-1']);
      await assertSafe(f);
    } finally {
      await policy
        .deleteNamespacedPodDisruptionBudget({ name: 'pinned-pause', namespace: 'app' })
        .catch(() => {});
      await apps.deleteNamespacedDeployment({ name: 'pinned-pause', namespace: 'app' });
    }
  });

  test('an unknown node is a NotFound error with exit code 1', async () => {
    for (const command of ['reboot', 'pause', 'resume']) {
      const r = await nuo(command, 'node-404');
      assert.equal(r.code, 1, `nuo ${command}: ${r.stdout}${r.stderr}`);
      assert.match(r.stderr, /NotFound.*node-404/);
      assert.equal(r.stdout, '');
    }
    const names = (await core.listNode()).items.map((n) => n.metadata?.name);
    assert.deepEqual(names.sort(), NODES, 'no node was created by the failed commands');
  });
});
