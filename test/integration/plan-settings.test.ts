/**
 * What a SUC user sets around a Plan, on the real control plane: the operator's Job settings under SUC's
 * environment names, the channel request's SUC headers, and a Secret's edit picked up at once (the
 * polling interval left at its 15 minutes).
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';
import { BatchV1Api, CoreV1Api } from '@kubernetes/client-node';
import { Annotations, JobLabels, planLabel } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import type { PlanSpec } from '../../src/api/plan.ts';
import { Fleet } from '../../src/sim/fleet.ts';
import { SimJobAnnotations } from '../../src/sim/job-keys.ts';
import {
  ChannelServer,
  deletePlan,
  ensureNamespace,
  type PlanObject,
  readPlan,
} from '../../src/sim/plans.ts';
import { pollUntil } from '../../src/util/poll.ts';
import { FAST_LEASE, useCluster } from './support.ts';

const NODES = 2;
const cluster = await useCluster({ nodes: NODES });
const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
const batch = cluster.kubeconfig.makeApiClient(BatchV1Api);
const NS = 'ops';
const names = Array.from({ length: NODES }, (_, i) => `node-${i}`);

/** SUC's controller-wide Job settings, as a SUC controller's Deployment would set them. */
const SUC_ENV = {
  SYSTEM_UPGRADE_JOB_ACTIVE_DEADLINE_SECONDS: '1200',
  SYSTEM_UPGRADE_JOB_ACTIVE_DEADLINE_SECONDS_MAX: '1800',
  SYSTEM_UPGRADE_JOB_BACKOFF_LIMIT: '4',
  SYSTEM_UPGRADE_JOB_PRIVILEGED: 'false',
  SYSTEM_UPGRADE_JOB_IMAGE_PULL_POLICY: 'Always',
  SYSTEM_UPGRADE_JOB_TTL_SECONDS_AFTER_FINISH: '3600',
  SYSTEM_UPGRADE_JOB_POD_REPLACEMENT_POLICY: 'Failed',
};

let fleet: Fleet;
const channel = new ChannelServer('v1.0.0');

before(async () => {
  await core.createNamespace({ body: { metadata: { name: 'nuo-system' } } });
  await ensureNamespace(cluster, NS);
  await channel.start();
  fleet = new Fleet(cluster, {
    rebootMs: 1000,
    budget: NODES,
    plans: [
      { name: `${NS}/chan`, max: NODES },
      { name: `${NS}/keyed`, max: NODES },
      { name: `${NS}/stuck`, max: 1 },
    ],
    agentCheckIntervalMs: 1000,
  });
  await fleet.start();
  await fleet.applyPolicy({ maxUnavailable: NODES, reboot: { soak: '1s', retryBackoff: '2s' } });
  // The polling interval stays at its default of 15 minutes: nothing here may wait for it.
  fleet.startOperator('op-a', FAST_LEASE, { env: SUC_ENV });
});

after(async () => {
  await fleet?.stop();
  await channel.stop();
});

afterEach(async () => {
  await fleet.checker.finalCheck();
  assert.deepEqual(fleet.checker.violations, [], 'the checker saw no violation');
});

const upgrade = { image: 'registry.example/os-upgrade', command: ['/upgrade'] };

function planOf(name: string, spec: Partial<PlanSpec>): PlanObject {
  return {
    namespace: NS,
    name,
    annotations: { [SimJobAnnotations.completeDelay]: '1s' },
    spec: { concurrency: NODES, upgrade, ...spec } as PlanSpec,
  };
}

const hashOf = async (name: string) => (await readPlan(cluster, NS, name)).status?.latestHash;

/** Waits until every node carries the Plan's hash `hash` (its latest when unset) and is Idle. */
async function applied(plan: string, timeoutMs = 120_000, hash?: string): Promise<string> {
  let latest: string | undefined;
  await pollUntil(
    `Plan ${plan} applied on every node`,
    async () => {
      latest = hash ?? (await hashOf(plan));
      if (!latest) return undefined;
      const all = (await core.listNode()).items;
      const done = names.every((name) => {
        const n = all.find((x) => x.metadata?.name === name);
        const state = n?.metadata?.annotations?.[Annotations.state] ?? Phase.idle;
        return n?.metadata?.labels?.[planLabel(plan)] === latest && state === Phase.idle;
      });
      return done ? true : undefined;
    },
    { timeoutMs, intervalMs: 250 },
  );
  return latest as string;
}

const nodeNow = async (name: string) => (await core.listNode()).items.find((n) => n.metadata?.name === name);

describe('Plan settings', () => {
  test("the channel is asked with SUC's headers, and every Job carries the operator's SYSTEM_UPGRADE_JOB_* settings", async () => {
    const kubeSystem = await core.readNamespace({ name: 'kube-system' });
    await fleet.applyPlan(planOf('chan', { channel: channel.url }));
    await applied('chan');
    assert.equal((await readPlan(cluster, NS, 'chan')).status?.latestVersion, 'v1.0.0');
    const first = channel.headers[0];
    assert.equal(first?.['x-suc-cluster-id'], kubeSystem.metadata?.uid, "the kube-system namespace's UID");
    assert.equal(first?.['x-suc-latest-version'], undefined, 'no version yet');
    // An edit asks the channel again, now with the version the Plan has.
    const asked = channel.requests;
    await fleet.applyPlan(
      planOf('chan', { channel: channel.url, upgrade: { ...upgrade, args: ['--again'] } }),
    );
    await pollUntil('the channel asked again', async () => (channel.requests > asked ? true : undefined));
    assert.equal(channel.headers.at(-1)?.['x-suc-latest-version'], 'v1.0.0');
    assert.equal(channel.headers.at(-1)?.['x-suc-cluster-id'], kubeSystem.metadata?.uid);

    const jobs = (await batch.listNamespacedJob({ namespace: NS, labelSelector: JobLabels.plan })).items;
    assert.ok(jobs.length >= NODES, `a Job per node: ${jobs.length}`);
    for (const job of jobs) {
      const where = job.metadata?.name;
      assert.equal(job.spec?.activeDeadlineSeconds, 1200, `${where}: activeDeadlineSeconds`);
      assert.equal(job.spec?.backoffLimit, 4, `${where}: backoffLimit`);
      assert.equal(job.spec?.ttlSecondsAfterFinished, 3600, `${where}: ttlSecondsAfterFinished`);
      assert.equal(job.spec?.podReplacementPolicy, 'Failed', `${where}: podReplacementPolicy`);
      const c = job.spec?.template.spec?.containers[0];
      assert.equal(c?.imagePullPolicy, 'Always', `${where}: imagePullPolicy`);
      assert.equal(c?.securityContext?.privileged, false, `${where}: privileged`);
    }
    await deletePlan(cluster, NS, 'chan');
  });

  test('a Secret edit re-applies the Plan within seconds, the polling interval at 15 minutes', async () => {
    const secret = (v: string) => ({
      metadata: { name: 'os-config', namespace: NS },
      stringData: { version: v },
    });
    await core.createNamespacedSecret({ namespace: NS, body: secret('1') });
    try {
      await fleet.applyPlan(planOf('keyed', { version: 'v1', secrets: [{ name: 'os-config' }] }));
      const first = await applied('keyed');
      const edited = Date.now();
      await core.replaceNamespacedSecret({ name: 'os-config', namespace: NS, body: secret('2') });
      await pollUntil(
        'the edited Secret hashed',
        async () => ((await hashOf('keyed')) !== first ? true : undefined),
        {
          timeoutMs: 15_000,
          intervalMs: 100,
        },
      );
      const seconds = (Date.now() - edited) / 1000;
      const second = await applied('keyed');
      assert.notEqual(second, first);
      process.stderr.write(`the edited Secret was hashed ${seconds.toFixed(1)} s after the edit\n`);
    } finally {
      await core.deleteNamespacedSecret({ name: 'os-config', namespace: NS }).catch(() => {});
      await deletePlan(cluster, NS, 'keyed');
    }
  });

  test('onFailure Stop: a node whose Job failed is not tried again until the Plan is edited', async () => {
    const only0 = { matchLabels: { 'kubernetes.io/hostname': 'node-0' } };
    // A pod that runs for 10 minutes under a 5 s deadline: its Job fails with DeadlineExceeded.
    const stuck = (spec: Partial<PlanSpec>, runFor: string): PlanObject => ({
      ...planOf('stuck', { version: 'v1', nodeSelector: only0, concurrency: 1, onFailure: 'Stop', ...spec }),
      annotations: { [SimJobAnnotations.completeDelay]: runFor },
    });
    await fleet.applyPlan(stuck({ jobActiveDeadlineSecs: 5 }, '600s'));
    const reason = async () =>
      (await nodeNow('node-0'))?.metadata?.annotations?.[Annotations.stateReason] ?? '';
    // Past the pool's 2 s retry backoff, the node waits for an edit instead of being admitted again.
    await pollUntil(
      'node-0 stopped',
      async () => (/onFailure Stop/.test(await reason()) ? true : undefined),
      {
        timeoutMs: 120_000,
      },
    );
    const status = (await readPlan(cluster, NS, 'stuck')).status;
    const failure = status?.failed?.find((f) => f.node === 'node-0');
    assert.match(failure?.error ?? '', /DeadlineExceeded/);
    assert.equal(failure?.hash, status?.latestHash, 'the failure records the hash it failed at');
    const node0 = await nodeNow('node-0');
    assert.equal(node0?.metadata?.annotations?.[Annotations.failures], '1', 'tried once');
    assert.equal(node0?.metadata?.annotations?.[Annotations.state], Phase.pending);
    const jobs = (await batch.listNamespacedJob({ namespace: NS, labelSelector: `${JobLabels.plan}=stuck` }))
      .items;
    assert.equal(jobs.length, 1, 'no second Job');
    assert.equal(jobs[0]?.status?.failed ?? 0, 1, 'its one pod failed at the deadline');
    // The Plan edited (a new generation, same hash): tried again, and this time it completes.
    await fleet.applyPlan(stuck({ jobActiveDeadlineSecs: 0 }, '1s'));
    const hash = await hashOf('stuck');
    await pollUntil(
      'node-0 applied after the edit',
      async () =>
        (await nodeNow('node-0'))?.metadata?.labels?.[planLabel('stuck')] === hash ? true : undefined,
      { timeoutMs: 120_000 },
    );
    await deletePlan(cluster, NS, 'stuck');
  });
});
