/**
 * Job pods on the testing ground: KWOK's stages complete a Job's pods, or fail those labelled to fail,
 * and the Job controller marks the Jobs Complete or Failed from that; a pod labelled to reboot its host
 * reboots the node's simulated host once it runs.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BatchV1Api, CoreV1Api, type V1Job } from '@kubernetes/client-node';
import { JobLabels } from '../../src/api/keys.ts';
import { isReady } from '../../src/sim/cluster/nodes.ts';
import { Fleet } from '../../src/sim/fleet.ts';
import { SimJobAnnotations, SimJobLabels } from '../../src/sim/job-keys.ts';
import { pollUntil } from '../../src/util/poll.ts';
import { useCluster } from './support.ts';

const cluster = await useCluster({ nodes: 2 });
const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
const batch = cluster.kubeconfig.makeApiClient(BatchV1Api);
await core.createNamespace({ body: { metadata: { name: 'nuo-system' } } });

/** A one-pod Job pinned to `node`, its pod carrying `labels` and `annotations`, never retried. */
function job(name: string, node: string, labels: Record<string, string> = {}, annotations = {}): V1Job {
  return {
    metadata: { name },
    spec: {
      backoffLimit: 0,
      template: {
        metadata: { labels, annotations },
        spec: {
          nodeName: node,
          restartPolicy: 'Never',
          containers: [{ name: 'upgrade', image: 'registry.invalid/upgrade:1' }],
        },
      },
    },
  };
}

/** The Job's terminal condition (Complete or Failed) once the Job controller writes it. */
function finished(name: string): Promise<string> {
  return pollUntil(
    `Job ${name} to finish`,
    async () => {
      const j = await batch.readNamespacedJob({ name, namespace: 'default' });
      return j.status?.conditions?.find(
        (c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True',
      )?.type;
    },
    { timeoutMs: 60_000, intervalMs: 200 },
  );
}

async function podOf(jobName: string) {
  const pods = await core.listNamespacedPod({ namespace: 'default', labelSelector: `job-name=${jobName}` });
  assert.equal(pods.items.length, 1, `one pod for Job ${jobName}`);
  return pods.items[0];
}

describe("KWOK's stages for Job pods", () => {
  test('a Job completes; one labelled to fail fails with exit code 1 and the message it asked for', async () => {
    await batch.createNamespacedJob({ namespace: 'default', body: job('completes', 'node-0') });
    await batch.createNamespacedJob({
      namespace: 'default',
      body: job(
        'fails',
        'node-1',
        { [SimJobLabels.outcome]: 'fail' },
        { [SimJobAnnotations.failMessage]: 'kernel package not found' },
      ),
    });
    assert.equal(await finished('completes'), 'Complete');
    assert.equal(await finished('fails'), 'Failed');
    const ok = await podOf('completes');
    assert.equal(ok?.status?.phase, 'Succeeded');
    assert.equal(ok?.status?.containerStatuses?.[0]?.state?.terminated?.exitCode, 0);
    const failed = await podOf('fails');
    assert.equal(failed?.status?.phase, 'Failed');
    const terminated = failed?.status?.containerStatuses?.[0]?.state?.terminated;
    assert.equal(terminated?.exitCode, 1);
    assert.equal(terminated?.reason, 'Error');
    assert.equal(terminated?.message, 'kernel package not found');
  });

  test("each outcome waits the delay its pod's annotation names, running meanwhile", async () => {
    const started = Date.now();
    await batch.createNamespacedJob({
      namespace: 'default',
      body: job('completes-late', 'node-0', {}, { [SimJobAnnotations.completeDelay]: '3s' }),
    });
    await batch.createNamespacedJob({
      namespace: 'default',
      body: job(
        'fails-late',
        'node-1',
        { [SimJobLabels.outcome]: 'fail' },
        { [SimJobAnnotations.failDelay]: '3s' },
      ),
    });
    for (const name of ['completes-late', 'fails-late']) {
      await pollUntil(`Job ${name}'s pod to run`, async () =>
        (await podOf(name))?.status?.phase === 'Running' ? true : undefined,
      );
    }
    assert.equal(await finished('completes-late'), 'Complete');
    assert.equal(await finished('fails-late'), 'Failed');
    assert.ok(
      Date.now() - started >= 3000,
      `finished after ${Date.now() - started} ms, before the 3 s delay`,
    );
  });
});

describe('a Job pod that reboots its host', () => {
  test("reboots its node's simulated host once it runs, and then completes; the checker counts a Plan's own reboot", async () => {
    const fleet = new Fleet(cluster, { rebootMs: 500, budget: 1 });
    await fleet.start();
    try {
      const host = fleet.hosts.get('node-1');
      assert.ok(host);
      const bootBefore = host.bootIdValue;
      // As a Plan's Job: its pods carry the Plan's labels, and run 2 s before they complete.
      await batch.createNamespacedJob({
        namespace: 'default',
        body: job(
          'kernel-reboot',
          'node-1',
          { [SimJobLabels.rebootsHost]: 'true', [JobLabels.plan]: 'kernel' },
          { [SimJobAnnotations.completeDelay]: '2s' },
        ),
      });
      await pollUntil('the host to come back from its reboot', async () => {
        const n = await core.readNode({ name: 'node-1' });
        return host.reboots === 1 && isReady(n) && n.status?.nodeInfo?.bootID !== bootBefore
          ? true
          : undefined;
      });
      assert.equal(await finished('kernel-reboot'), 'Complete');
      await fleet.checker.settle();
      assert.equal(host.reboots, 1, 'one reboot for one pod');
      assert.equal(fleet.checker.planRebootsOf('node-1'), 1);
      assert.equal(fleet.checker.rebootsOf('node-1'), 0);
      assert.deepEqual(fleet.checker.violations, []);
      assert.equal(fleet.hosts.get('node-0')?.reboots, 0, 'no other host rebooted');
      // A pod that completes at once still rebooted its host while it ran: a Plan's own reboot too.
      await batch.createNamespacedJob({
        namespace: 'default',
        body: job('kernel-reboot-fast', 'node-0', {
          [SimJobLabels.rebootsHost]: 'true',
          [JobLabels.plan]: 'kernel',
        }),
      });
      assert.equal(await finished('kernel-reboot-fast'), 'Complete');
      await pollUntil('node-0 to reboot', () =>
        fleet.hosts.get('node-0')?.reboots === 1 ? true : undefined,
      );
      await fleet.checker.settle();
      assert.equal(fleet.checker.planRebootsOf('node-0'), 1);
      assert.deepEqual(fleet.checker.violations, []);
    } finally {
      await fleet.stop();
    }
  });
});
