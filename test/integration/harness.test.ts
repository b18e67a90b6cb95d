/**
 * The harness's own guards must themselves be able to fail. Each rule the independent safety checker
 * reports is broken here on purpose, by direct writes to a real API server, and the checker must name it
 * (every rollout and chaos test trusts an empty violation list; it is only worth something if these
 * pass). And the fleet's memory guard must kill a runaway operator and say where it was, its event loop
 * turning or stuck.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { openSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, beforeEach, describe, test } from 'node:test';
import { BatchV1Api, CoordinationV1Api, CoreV1Api } from '@kubernetes/client-node';
import { GRANT_KEY_NAME, generateGrantKey, PUBLIC_KEY_FIELD, signGrant } from '../../src/api/grant.ts';
import { Annotations, JobLabels, PREPARE_STAGE, ScaleDownProtection } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import { mergePatch, strategicMergePatch } from '../../src/kube/patch.ts';
import { type PlanBudget, SafetyChecker, type Violation } from '../../src/sim/checker.ts';
import { KWOK_CUSTOM_STATUS } from '../../src/sim/cluster/component-args.ts';
import { isReady } from '../../src/sim/cluster/nodes.ts';
import { Fleet } from '../../src/sim/fleet.ts';
import { SimJobAnnotations } from '../../src/sim/job-keys.ts';
import { STALE_LEASE_MS, superviseKwok } from '../../src/sim/kwok-leases.ts';
import { diagnose, diagnosisFlags } from '../../src/sim/runaway.ts';
import { pollUntil } from '../../src/util/poll.ts';
import { useCluster } from './support.ts';

const cluster = await useCluster({ nodes: 3 });
const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
const batch = cluster.kubeconfig.makeApiClient(BatchV1Api);
await core.createNamespace({ body: { metadata: { name: 'nuo-system' } } });
const NODES = ['node-0', 'node-1', 'node-2'];

let checker: SafetyChecker | undefined;
after(() => checker?.stop());

/** Every node schedulable, Idle, without nuo's keys; then a fresh checker with a budget of 1. */
beforeEach(async () => {
  await checker?.stop();
  for (const name of NODES) {
    await core.patchNode(
      {
        name,
        body: {
          metadata: {
            annotations: {
              [Annotations.state]: Phase.idle,
              [Annotations.cordonedByNuo]: null,
              [Annotations.rebootOk]: null,
              [Annotations.plan]: null,
              [Annotations.scaleDownProtection]: null,
              [ScaleDownProtection.clusterAutoscaler]: null,
              [ScaleDownProtection.karpenter]: null,
            },
          },
          spec: { unschedulable: false },
        },
      },
      mergePatch,
    );
  }
  await batch.deleteCollectionNamespacedJob({
    namespace: 'nuo-system',
    labelSelector: JobLabels.plan,
    propagationPolicy: 'Background',
  });
  await pollUntil("the Plan Jobs' pods to be gone", async () => {
    const pods = await core.listNamespacedPod({ namespace: 'nuo-system', labelSelector: JobLabels.plan });
    return pods.items.length === 0 ? true : undefined;
  });
});

async function startChecker(options: { budget?: number; plans?: PlanBudget[] } = {}): Promise<SafetyChecker> {
  checker = new SafetyChecker(cluster.kubeconfig, options.budget ?? 1, { plans: options.plans });
  await checker.start();
  return checker;
}

/**
 * A Job of the Plan `plan` on `node`, created by hand as a rogue client would (not nuo's operator): its
 * pod carries the Plan's label and runs for a minute; a prepare Job's runs the `prepare` container alone.
 */
async function planJob(plan: string, node: string, stage: 'upgrade' | 'prepare' = 'upgrade'): Promise<void> {
  const name = `${plan}-${stage}-${node}`;
  const labels = {
    [JobLabels.plan]: plan,
    [JobLabels.node]: node,
    ...(stage === 'prepare' ? { [JobLabels.stage]: PREPARE_STAGE } : {}),
  };
  await batch.createNamespacedJob({
    namespace: 'nuo-system',
    body: {
      metadata: { name, labels },
      spec: {
        backoffLimit: 0,
        template: {
          metadata: { labels, annotations: { [SimJobAnnotations.completeDelay]: '60s' } },
          spec: {
            nodeName: node,
            restartPolicy: 'Never',
            containers: [{ name: stage, image: `registry.invalid/${stage}:1` }],
          },
        },
      },
    },
  });
  await pollUntil(`${name}'s pod to run on ${node}`, async () => {
    const pods = await core.listNamespacedPod({ namespace: 'nuo-system', labelSelector: `job-name=${name}` });
    return pods.items[0]?.status?.phase === 'Running' ? true : undefined;
  });
}

function patch(name: string, annotations: Record<string, string | null>, unschedulable?: boolean) {
  return core.patchNode(
    {
      name,
      body: {
        metadata: { annotations },
        ...(unschedulable === undefined ? {} : { spec: { unschedulable } }),
      },
    },
    mergePatch,
  );
}

/** Hold a node's status from KWOK ('custom'), as its own kubelet would, or give it back (null). */
function kubeletStatus(name: string, value: 'custom' | null) {
  return core.patchNode(
    { name, body: { metadata: { annotations: { [KWOK_CUSTOM_STATUS]: value } } } },
    mergePatch,
  );
}

/** The kubelet's report of a new boot. */
function postBoot(name: string, bootID: string) {
  return core.patchNodeStatus({ name, body: { status: { nodeInfo: { bootID } } } }, strategicMergePatch);
}

async function bootId(name: string): Promise<string> {
  return (await core.readNode({ name })).status?.nodeInfo?.bootID ?? '';
}

/** A grant key published where the operator publishes its own, as the checker reads it. */
async function publishGrantKey() {
  const key = generateGrantKey();
  await core.deleteNamespacedConfigMap({ name: GRANT_KEY_NAME, namespace: 'nuo-system' }).catch(() => {});
  await core.createNamespacedConfigMap({
    namespace: 'nuo-system',
    body: { metadata: { name: GRANT_KEY_NAME }, data: { [PUBLIC_KEY_FIELD]: key.publicPem } },
  });
  return key;
}

const rules = (c: SafetyChecker) => c.violations.map((v) => v.rule);
const details = (c: SafetyChecker) => c.violations.map((v) => v.detail).join('\n');
const seen = (c: SafetyChecker, rule: Violation['rule']) =>
  pollUntil(`the checker to report ${rule}`, () => (rules(c).includes(rule) ? true : undefined), {
    timeoutMs: 10_000,
    intervalMs: 20,
  });

describe('the safety checker reports each rule broken', () => {
  test('budget: two nodes cordoned with a budget of one', async () => {
    const c = await startChecker();
    await patch('node-0', { [Annotations.state]: Phase.draining, [Annotations.cordonedByNuo]: 'true' }, true);
    await patch('node-1', { [Annotations.state]: Phase.draining, [Annotations.cordonedByNuo]: 'true' }, true);
    await seen(c, 'budget');
    assert.equal(c.maxDisrupted, 2);
    assert.match(c.violations.find((v) => v.rule === 'budget')?.detail ?? '', /node-0, node-1/);
  });

  test("budgets per pool and per zone: each pool's attempts against its own budget, each zone's against its cap", async () => {
    const ZONE = 'topology.kubernetes.io/zone';
    const label = (name: string, labels: Record<string, string>) =>
      core.patchNode({ name, body: { metadata: { labels } } }, mergePatch);
    const zones = new Map(
      (await core.listNode()).items.map((n) => [n.metadata?.name ?? '', n.metadata?.labels?.[ZONE] ?? '']),
    );
    await label('node-0', { pool: 'a', [ZONE]: 'zone-x' });
    await label('node-1', { pool: 'a', [ZONE]: 'zone-x' });
    await label('node-2', { pool: 'b', [ZONE]: 'zone-y' });
    try {
      checker = new SafetyChecker(cluster.kubeconfig, [
        { name: 'pool a', selects: (l) => l.pool === 'a', max: 2, zones: { label: ZONE, max: 1 } },
        { name: 'pool b', selects: (l) => l.pool === 'b', max: 1 },
      ]);
      await checker.start();
      const c = checker;
      // One attempt in each pool: within both budgets, three nodes disrupted in all.
      await patch(
        'node-0',
        { [Annotations.state]: Phase.draining, [Annotations.cordonedByNuo]: 'true' },
        true,
      );
      await patch(
        'node-2',
        { [Annotations.state]: Phase.draining, [Annotations.cordonedByNuo]: 'true' },
        true,
      );
      await pollUntil('the checker to see both attempts', () =>
        c.disrupted().length === 2 ? true : undefined,
      );
      assert.equal(c.violations.length, 0, c.violations.map((v) => v.detail).join('\n'));
      // A second attempt in pool a fits its budget of 2, but not zone-x's cap of 1.
      await patch('node-1', { [Annotations.state]: Phase.beforeReboot });
      await seen(c, 'budget');
      assert.match(
        c.violations.map((v) => v.detail).join('\n'),
        /nodes in nuo's attempts at once in zone zone-x of pool a \(zone budget 1\): node-0, node-1/,
      );
      assert.doesNotMatch(c.violations.map((v) => v.detail).join('\n'), /pool b/);
    } finally {
      for (const name of NODES) {
        await core.patchNode(
          { name, body: { metadata: { labels: { pool: null, [ZONE]: zones.get(name) ?? null } } } },
          mergePatch,
        );
      }
    }
  });

  test('budget: an attempt starts while an admin cordon takes the only slot; not when the cordon came at the same moment', async () => {
    await patch('node-2', {}, true);
    const c = await startChecker();
    await patch('node-0', { [Annotations.state]: Phase.beforeReboot });
    await seen(c, 'budget');
    assert.match(
      c.violations[0]?.detail ?? '',
      /node-0's attempt started with 2 nodes disrupted \(budget 1\)/,
    );
    await patch('node-0', { [Annotations.state]: Phase.idle });
    c.adminUncordon('node-2');
    await patch('node-2', {}, false);
    c.violations.length = 0;
    // A cordon the operator could not have seen yet (well within RACE_MS) is a coincidence, not a breach.
    c.adminCordon('node-1');
    await patch('node-1', {}, true);
    await patch('node-0', { [Annotations.state]: Phase.beforeReboot });
    await pollUntil('the checker to see node-0 in its attempt', () =>
      c.disrupted().includes('node-0') ? true : undefined,
    );
    assert.deepEqual(c.violations, []);
    c.adminUncordon('node-1');
    await patch('node-1', {}, false);
    await patch('node-0', { [Annotations.state]: Phase.idle });
  });

  test("admin-cordon-removed: a cordon that was there before nuo's checker started is undone", async () => {
    await patch('node-2', {}, true);
    const c = await startChecker();
    await patch('node-2', {}, false);
    await seen(c, 'admin-cordon-removed');
  });

  test('cordon-outside-attempt: nuo cordon on an Idle node, as a drain that started too late would leave', async () => {
    const c = await startChecker();
    await patch('node-1', { [Annotations.cordonedByNuo]: 'true' }, true);
    await seen(c, 'cordon-outside-attempt');
    assert.deepEqual(rules(c), ['cordon-outside-attempt']);
  });

  test('no cordon-outside-attempt while the cordon stands in an attempt, or goes with its end', async () => {
    const c = await startChecker();
    await patch('node-0', { [Annotations.state]: Phase.draining, [Annotations.cordonedByNuo]: 'true' }, true);
    await patch('node-0', { [Annotations.state]: Phase.rebootGranted, [Annotations.rebootOk]: 'true' });
    await patch('node-0', { [Annotations.state]: Phase.idle, [Annotations.cordonedByNuo]: null }, false);
    await c.finalCheck();
    assert.deepEqual(c.violations, []);
    assert.equal(c.maxDisrupted, 1);
  });

  test('cordon-left: the final check reads the API server, not a watch that may lag the last write', async () => {
    const c = await startChecker();
    await patch('node-0', { [Annotations.state]: Phase.draining, [Annotations.cordonedByNuo]: 'true' }, true);
    await c.finalCheck();
    assert.deepEqual(rules(c), ['cordon-left']);
    // Undone, and judged at once: no wait for the checker's watch to see it.
    await patch('node-0', { [Annotations.state]: Phase.idle, [Annotations.cordonedByNuo]: null }, false);
    c.violations.length = 0;
    await c.finalCheck();
    assert.deepEqual(c.violations, []);
  });

  test("protection-left: the autoscalers' protection nuo set, outside an attempt after the rollout; a person's is theirs", async () => {
    const ca = ScaleDownProtection.clusterAutoscaler;
    await patch('node-1', { [ca]: 'true' });
    const c = await startChecker();
    const set = { [ca]: 'true', [ScaleDownProtection.karpenter]: 'true' };
    const record = { [Annotations.scaleDownProtection]: `${ca},${ScaleDownProtection.karpenter}` };
    await patch('node-0', { [Annotations.state]: Phase.rebooting, ...set, ...record });
    await c.finalCheck();
    assert.deepEqual(rules(c), [], 'in an attempt, protected');
    await patch('node-0', { [Annotations.state]: Phase.idle });
    await c.finalCheck();
    assert.deepEqual(
      c.violations.map((v) => [v.rule, v.detail]),
      [
        [
          'protection-left',
          `node-0 still carries nuo.dev/scale-down-protection, ${ca}, ${ScaleDownProtection.karpenter} after the rollout`,
        ],
      ],
    );
    // Removed with its record: nothing left but the person's, which the checker saw before the rollout.
    await patch('node-0', {
      [ca]: null,
      [ScaleDownProtection.karpenter]: null,
      [Annotations.scaleDownProtection]: null,
    });
    c.violations.length = 0;
    await c.finalCheck();
    assert.deepEqual(c.violations, []);
  });

  test('reboot-without-grant and reboot-not-drained: a host reboots with neither', async () => {
    const c = await startChecker();
    c.allowReboots('node-0');
    c.onReboot('node-0', await bootId('node-0'));
    await c.settle();
    assert.deepEqual(rules(c).sort(), ['reboot-not-drained', 'reboot-without-grant']);
  });

  test('reboot-without-grant: a cordoned node rebooted on a grant nuo did not sign, or for another boot', async () => {
    const boot = await bootId('node-0');
    const key = await publishGrantKey();
    const c = await startChecker();
    c.allowReboots('node-0', 3);
    const forgeries = [
      'true',
      signGrant(generateGrantKey().privateKey, { node: 'node-0', bootId: boot, attempt: 'x' }),
      signGrant(key.privateKey, { node: 'node-0', bootId: 'another-boot', attempt: 'x' }),
    ];
    for (const forged of forgeries) {
      await patch(
        'node-0',
        { [Annotations.state]: Phase.rebootGranted, [Annotations.rebootOk]: forged },
        true,
      );
      c.onReboot('node-0', boot);
      await c.settle();
    }
    assert.deepEqual(rules(c), ['reboot-without-grant', 'reboot-without-grant', 'reboot-without-grant']);
    assert.match(c.violations[0]?.detail ?? '', /not a signed grant/);
    assert.match(c.violations[1]?.detail ?? '', /signature is not the operator key/);
    assert.match(c.violations[2]?.detail ?? '', /given in boot another-boot/);
  });

  test('double-reboot: a second reboot for one staged update; none for a granted, drained first one', async () => {
    const boot = await bootId('node-0');
    const key = await publishGrantKey();
    const c = await startChecker();
    await patch(
      'node-0',
      {
        [Annotations.state]: Phase.rebootGranted,
        [Annotations.rebootOk]: signGrant(key.privateKey, { node: 'node-0', bootId: boot, attempt: 'x' }),
        [Annotations.cordonedByNuo]: 'true',
      },
      true,
    );
    c.allowReboots('node-0');
    c.onReboot('node-0', boot);
    await c.settle();
    assert.deepEqual(c.violations, []);
    c.onReboot('node-0', boot);
    await c.settle();
    assert.deepEqual(rules(c), ['double-reboot']);
  });

  test("double-reboot: a Plan with reboot: true has one granted reboot per attempt, beyond the node's staged updates", async (t) => {
    // node-0's status held here, as a kubelet holds it: the attempt may end only on the new boot.
    await kubeletStatus('node-0', 'custom');
    t.after(() => kubeletStatus('node-0', null));
    await postBoot('node-0', 'boot-1');
    let boot = 'boot-1';
    const key = await publishGrantKey();
    const c = await startChecker();
    const granted = (attempt: string) =>
      patch(
        'node-0',
        {
          [Annotations.state]: Phase.rebootGranted,
          [Annotations.plan]: 'nuo-system/kernel',
          [Annotations.rebootOk]: signGrant(key.privateKey, { node: 'node-0', bootId: boot, attempt }),
          [Annotations.cordonedByNuo]: 'true',
        },
        true,
      );
    await granted('attempt-1');
    await pollUntil('the checker to see the grant', () =>
      c.disrupted().includes('node-0') ? true : undefined,
    );
    c.onReboot('node-0', boot);
    await c.settle();
    assert.deepEqual(c.violations, [], 'the Plan attempt’s own reboot, granted and drained');
    boot = 'boot-2';
    await postBoot('node-0', boot);
    // The attempt ends (Idle, uncordoned), and the checker sees it, before the next one's grant.
    await patch(
      'node-0',
      {
        [Annotations.state]: Phase.idle,
        [Annotations.plan]: null,
        [Annotations.rebootOk]: null,
        [Annotations.cordonedByNuo]: null,
      },
      false,
    );
    await pollUntil('the checker to see the attempt end', () =>
      c.disrupted().includes('node-0') ? undefined : true,
    );
    await granted('attempt-2');
    await pollUntil('the checker to see the next attempt’s grant', () =>
      c.disrupted().includes('node-0') ? true : undefined,
    );
    c.onReboot('node-0', boot);
    await c.settle();
    assert.deepEqual(c.violations, [], 'the next attempt of the Plan may reboot once too');
    c.onReboot('node-0', boot);
    await c.settle();
    assert.deepEqual(rules(c), ['double-reboot'], 'a second reboot in one attempt');
  });

  test("budget: a node in Upgrading and a node running a Plan Job's pod are both in attempts", async () => {
    const c = await startChecker();
    await patch('node-0', { [Annotations.state]: Phase.upgrading, [Annotations.plan]: 'nuo-system/kernel' });
    await pollUntil('the checker to see node-0 in its attempt', () =>
      c.disrupted().includes('node-0') ? true : undefined,
    );
    assert.deepEqual(rules(c), [], details(c));
    // A rogue Job of the Plan on an Idle node: a second attempt with a budget of 1.
    await planJob('kernel', 'node-1');
    // Two breaches, each confirmed on a fresh read in its own time: node-1's attempt started over the
    // budget, and two nodes are in attempts at once. The second is this test's.
    const both = /2 nodes in nuo's attempts at once \(budget 1\): node-0, node-1/;
    await pollUntil('the checker to report both nodes in attempts at once', () =>
      both.test(details(c)) ? true : undefined,
    );
    assert.deepEqual([...new Set(rules(c))], ['budget']);
    assert.deepEqual(c.disrupted().sort(), ['node-0', 'node-1']);
  });

  test("plan-concurrency: more nodes in a Plan's attempts than its concurrency, within the pool's budget", async () => {
    const c = await startChecker({ budget: 3, plans: [{ name: 'nuo-system/kernel', max: 1 }] });
    await patch('node-0', { [Annotations.state]: Phase.upgrading, [Annotations.plan]: 'nuo-system/kernel' });
    // Another Plan's Job beside it breaks nothing.
    await planJob('other', 'node-2');
    await pollUntil('the checker to see both attempts', () =>
      c.disrupted().length === 2 ? true : undefined,
    );
    assert.deepEqual(rules(c), [], details(c));
    await planJob('kernel', 'node-1');
    await seen(c, 'plan-concurrency');
    assert.deepEqual([...new Set(rules(c))], ['plan-concurrency']);
    assert.match(
      details(c),
      /2 nodes in Plan nuo-system\/kernel's attempts at once \(concurrency 1\): node-0, node-1/,
    );
  });

  test("a Plan's own reboot is not reported: its node in Upgrading, or running its Job's pod, with neither grant nor cordon", async () => {
    const c = await startChecker({ budget: 3 });
    // nuo's cordon may stand in Upgrading (a Plan that cordons).
    await patch(
      'node-0',
      { [Annotations.state]: Phase.upgrading, [Annotations.cordonedByNuo]: 'true' },
      true,
    );
    await planJob('kernel', 'node-1');
    await pollUntil('the checker to see both attempts', () =>
      c.disrupted().length === 2 ? true : undefined,
    );
    for (const node of ['node-0', 'node-1']) {
      // Twice, with no staged update: a Plan's reboots are not counted against the node's updates.
      c.onReboot(node, await bootId(node));
      c.onReboot(node, await bootId(node));
    }
    await c.settle();
    assert.deepEqual(rules(c), [], details(c));
    assert.equal(c.planRebootsOf('node-0'), 2);
    assert.equal(c.planRebootsOf('node-1'), 2);
    assert.equal(c.rebootsOf('node-1'), 0);
    // The node beside them, in no Plan's attempt, is held to every reboot rule, a Plan's prepare running
    // there too: SUC runs it before its drain, and it may not disrupt the node.
    await planJob('kernel', 'node-2', 'prepare');
    c.onReboot('node-2', await bootId('node-2'));
    await c.settle();
    assert.deepEqual(rules(c).sort(), ['double-reboot', 'reboot-not-drained', 'reboot-without-grant']);
    assert.deepEqual(c.disrupted().sort(), ['node-0', 'node-1'], 'a prepare pod is no attempt');
  });
});

describe("the fleet's memory guard", () => {
  test('kills an operator past its resident-memory limit, after it wrote where it was', async () => {
    // Any running operator is past 64 MiB: the guard must fire, as it would at a runaway's 1 GiB.
    const fleet = new Fleet(cluster, { rebootMs: 300, budget: 1, runawayRssMiB: 64 });
    await fleet.start();
    try {
      const child = fleet.startOperator('guarded', ['--paused=true']);
      const exited = new Promise((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
      assert.equal(await exited, 'SIGKILL');
      assert.equal(fleet.runaways.length, 1);
      assert.match(fleet.runaways[0] ?? '', /operator guarded killed at \d+ MiB resident/);
      const log = await readFile(join(cluster.dir, 'logs', 'operator-guarded.log'), 'utf8');
      assert.match(log, /=== fleet: operator guarded killed/);
      // Its event loop turned: Node's own report, with the native stack.
      assert.match(log, /diagnostic report \(.*operator-guarded-report\.json\): the event loop turns/);
      assert.match(log, /native stack:\n {2}\S/);
    } finally {
      await fleet.stop();
    }
  });
});

describe('diagnosing a runaway', () => {
  test('a process stuck in JavaScript: its threads, their native stacks, and the function it was in, through its inspector', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'nuo-runaway-'));
    const logPath = join(dir, 'child.log');
    const log = openSync(logPath, 'a');
    const child = spawn(
      process.execPath,
      [
        ...diagnosisFlags(dir, 'report.json'),
        '-e',
        "setTimeout(function spinForever() { process.stderr.write('spinning\\n'); for (;;) {} }, 10)",
      ],
      { stdio: ['ignore', log, log] },
    );
    try {
      await pollUntil('the child to spin', async () =>
        (await readFile(logPath, 'utf8')).includes('spinning') ? true : undefined,
      );
      const where = await diagnose(child, join(dir, 'report.json'), logPath);
      assert.match(where, /the event loop is stuck/);
      // The main thread spins: it is running, and has used CPU.
      assert.match(where, /threads:\n(?: {2}.*\n)* {2}\d+ MainThread: \d+\.\d\d s CPU, state R/);
      assert.match(where, /native stacks \(gdb\):\n {2}Thread \d+ .*\n {2}#0 /);
      assert.match(where, /JavaScript stack \(paused through the inspector/);
      assert.match(where, /at spinForever \(/);
    } finally {
      child.kill('SIGKILL');
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("the chaos runner's part of a kubelet's Lease", () => {
  test("Leases KWOK stops renewing (here: KWOK stopped with SIGSTOP) or never made are renewed by the runner from then on, in KWOK's name, a host-held node's too; nodes stay Ready and KWOK, back, still plays their pods", async () => {
    const coordination = cluster.kubeconfig.makeApiClient(CoordinationV1Api);
    const stop = new AbortController();
    const notes: string[] = [];
    const supervised = superviseKwok({ core, coordination }, stop.signal, (line) => notes.push(line));
    // node-0's status held by its simulated host, as in every chaos run.
    await kubeletStatus('node-0', 'custom');
    const before = (await coordination.listNamespacedLease({ namespace: 'kube-node-lease' })).items;
    const kwok = before[0]?.spec?.holderIdentity;
    assert.ok(kwok, 'KWOK keeps the node Leases');
    const stalled = Date.now();
    try {
      cluster.components.kwok.setPaused(true);
      // A Lease KWOK never made, as for a node registered again.
      await coordination.deleteNamespacedLease({ name: 'node-2', namespace: 'kube-node-lease' });
      // KWOK, stopped, renews nothing: a Lease renewed since is the runner's doing.
      const taken = await pollUntil(
        "every node's Lease renewed by the runner",
        async () => {
          const leases = (await coordination.listNamespacedLease({ namespace: 'kube-node-lease' })).items;
          const renewed = leases.filter((l) => new Date(l.spec?.renewTime ?? 0).getTime() > stalled);
          return renewed.length === NODES.length ? renewed : undefined;
        },
        { timeoutMs: STALE_LEASE_MS + 30_000, intervalMs: 500 },
      );
      assert.ok(Date.now() - stalled >= STALE_LEASE_MS, 'not before the Leases were a whole period old');
      assert.deepEqual(
        taken.map((l) => l.spec?.holderIdentity),
        NODES.map(() => kwok),
        "in KWOK's name, the Lease it never made too",
      );
      assert.deepEqual(
        [...notes].sort(),
        NODES.map(
          (n) =>
            `KWOK had not renewed the Lease of ${n} for 30 s${n === 'node-2' ? ' (it made none)' : ''}: renewed by the runner from now on, as its kubelet would`,
        ),
      );
      const first = new Date(
        taken.find((l) => l.metadata?.name === 'node-0')?.spec?.renewTime ?? 0,
      ).getTime();
      await pollUntil(
        "node-0's Lease renewed again by the runner",
        async () => {
          const l = await coordination.readNamespacedLease({ name: 'node-0', namespace: 'kube-node-lease' });
          return new Date(l.spec?.renewTime ?? 0).getTime() > first ? true : undefined;
        },
        { timeoutMs: STALE_LEASE_MS + 15_000, intervalMs: 500 },
      );
      const nodes = (await core.listNode()).items;
      assert.deepEqual(
        nodes.filter((n) => !isReady(n)).map((n) => n.metadata?.name),
        [],
        'no node marked unreachable',
      );
      // KWOK plays only the pods of nodes whose Lease names it: a pod bound to a renewed node starts, and
      // its deletion finishes.
      cluster.components.kwok.setPaused(false);
      const pod = { name: 'on-a-renewed-node', namespace: 'nuo-system' };
      await core.createNamespacedPod({
        namespace: pod.namespace,
        body: {
          metadata: { name: pod.name },
          spec: { nodeName: 'node-1', containers: [{ name: 'main', image: 'registry.invalid/idle' }] },
        },
      });
      await pollUntil(`${pod.name} Running on node-1`, async () => {
        const p = await core.readNamespacedPod(pod);
        return p.status?.phase === 'Running' ? true : undefined;
      });
      await core.deleteNamespacedPod(pod);
      await pollUntil(`${pod.name} gone`, async () =>
        (await core.listNamespacedPod({ namespace: pod.namespace })).items.some(
          (p) => p.metadata?.name === pod.name,
        )
          ? undefined
          : true,
      );
    } finally {
      cluster.components.kwok.setPaused(false);
      stop.abort();
      await kubeletStatus('node-0', null);
    }
    await supervised.done;
    assert.deepEqual([...supervised.takeovers].sort(), NODES, 'each taken over once, however often renewed');
  });
});
