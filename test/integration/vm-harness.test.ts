/**
 * Real nodes: two KVM virtual machines (systemd, containerd 2, a kubelet and kube-proxy built from the
 * control plane's release) join the local control plane beside KWOK nodes, run a pod pulled from a local
 * registry in containerd, and reboot for real. Under TCG (no /dev/kvm) the run says so and waits longer.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, describe, test } from 'node:test';
import { AppsV1Api, CoreV1Api, PolicyV1Api, type V1Node, type V1Pod } from '@kubernetes/client-node';
import { Annotations, Labels } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import { SafetyChecker } from '../../src/sim/checker.ts';
import { KWOK_NODE } from '../../src/sim/cluster/component-args.ts';
import { isReady } from '../../src/sim/cluster/nodes.ts';
import { VM_NODE_LABEL } from '../../src/sim/vm/config-disk.ts';
import { startVmNodes } from '../../src/sim/vm/vms.ts';
import { pollUntil } from '../../src/util/poll.ts';
import { PAUSE_TAG } from '../../tools/vm/pause-image.ts';
import { buildDeb, serveRepo, writeFlatRepo } from './apt-repo.ts';
import { useHelm } from './helm.ts';
import { startRegistry } from './registry.ts';
import { useCluster } from './support.ts';
import { installFromRegistry, NS } from './vm-nuo.ts';

const log = (line: string) => process.stderr.write(`# ${line}\n`);
const cluster = await useCluster({ nodes: 2, zones: 2, log });
const registry = await startRegistry();
after(() => registry.stop());
const fleet = await startVmNodes(cluster, { registry: registry.host, log });
after(() => fleet.stop());
const helm = await useHelm();
const work = mkdtempSync(join(tmpdir(), 'nuo-vm-test-'));
after(() => rmSync(work, { recursive: true, force: true }));
const slow = fleet.accel === 'tcg' ? 5 : 1;
const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
process.stderr.write(
  `# VM nodes run under ${fleet.accel.toUpperCase()}; ${fleet.nodes.length} Ready ${fleet.bootToReadyMs} ms after qemu started\n`,
);

const bootIdOf = (node: V1Node) => node.status?.nodeInfo?.bootID ?? '';

describe(`VM nodes (${fleet.accel.toUpperCase()})`, () => {
  test('two VM nodes join beside two KWOK nodes: Ready, zone-labelled, a real kubelet and containerd 2, and the boot ID the VM reads', async (t) => {
    t.diagnostic(`accelerator: ${fleet.accel}; boot to Ready: ${fleet.bootToReadyMs} ms`);
    const nodes = (await core.listNode()).items;
    const names = nodes.map((n) => n.metadata?.name).sort();
    assert.deepEqual(names, ['node-0', 'node-1', 'vm-0', 'vm-1']);
    for (const vm of fleet.nodes) {
      const node = nodes.find((n) => n.metadata?.name === vm.name) as V1Node;
      assert.ok(isReady(node), `${vm.name} Ready`);
      assert.equal(node.metadata?.labels?.['topology.kubernetes.io/zone'], vm.zone);
      assert.equal(node.metadata?.labels?.[VM_NODE_LABEL], 'true');
      assert.equal(node.metadata?.annotations?.[KWOK_NODE], undefined, `${vm.name} is not KWOK's`);
      const info = node.status?.nodeInfo;
      assert.equal(info?.kubeletVersion, fleet.image.manifest.kubernetes);
      assert.equal(
        info?.containerRuntimeVersion,
        `containerd://${fleet.image.manifest.containerd.replace(/^v/, '')}`,
      );
      assert.match(info?.osImage ?? '', /^Debian GNU\/Linux 12/);
      assert.equal(info?.kernelVersion, fleet.image.manifest.kernel);
      assert.equal(bootIdOf(node), await vm.bootId(), `${vm.name}'s Node shows the boot ID the VM reads`);
    }
    for (const name of ['node-0', 'node-1']) {
      const node = nodes.find((n) => n.metadata?.name === name) as V1Node;
      assert.equal(node.metadata?.annotations?.[KWOK_NODE], 'fake');
      assert.ok(isReady(node), `${name} Ready`);
    }
  });

  test("the API server answers through the kubernetes Service's ClusterIP inside a VM (kube-proxy's rules)", async () => {
    const vm = fleet.node('vm-1');
    const service = await core.readNamespacedService({ name: 'kubernetes', namespace: 'default' });
    const ip = service.spec?.clusterIP;
    assert.ok(ip, 'the kubernetes Service has a ClusterIP');
    // Plain HTTP to the HTTPS port: Go's TLS server answers with a telling 400, so the reply is the API server's.
    const probe = `exec 3<>/dev/tcp/${ip}/443 && printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3 && timeout 5 cat <&3`;
    const answer = await pollUntil(
      `an answer from ${ip}:443 in ${vm.name}`,
      async () => {
        const r = await vm.exec(`timeout 10 bash -c "${probe.replaceAll('"', '\\"')}"`);
        return r.stdout.includes('Client sent an HTTP request to an HTTPS server') ? r.stdout : undefined;
      },
      { timeoutMs: 60_000 * slow, intervalMs: 1000 },
    );
    assert.match(answer, /400 Bad Request/);
  });

  let pod: V1Pod | undefined;
  test('a pod of an image pushed to the local registry runs in containerd on a VM', async () => {
    const image = `${registry.host}/nuo/pause:${PAUSE_TAG}`;
    const push = spawnSync(
      'skopeo',
      ['copy', '--dest-tls-verify=false', `oci:${fleet.image.pauseLayout}:${PAUSE_TAG}`, `docker://${image}`],
      { encoding: 'utf8', timeout: 120_000 },
    );
    assert.equal(push.status, 0, `skopeo copy: ${push.stderr}`);
    await core.createNamespacedPod({
      namespace: 'default',
      body: {
        metadata: { name: 'on-vm' },
        spec: {
          nodeSelector: { 'kubernetes.io/hostname': 'vm-0' },
          containers: [{ name: 'main', image }],
          terminationGracePeriodSeconds: 5,
        },
      },
    });
    pod = await pollUntil(
      'pod on-vm Running and Ready on vm-0',
      async () => {
        const p = await core.readNamespacedPod({ name: 'on-vm', namespace: 'default' });
        const ready = p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
        return p.status?.phase === 'Running' && ready ? p : undefined;
      },
      { timeoutMs: 120_000 * slow, intervalMs: 500 },
    );
    assert.equal(pod.spec?.nodeName, 'vm-0');
    assert.match(pod.status?.podIP ?? '', /^10\.244\.10\.\d+$/, 'an address of vm-0 bridge subnet');
    const containerId = pod.status?.containerStatuses?.[0]?.containerID ?? '';
    assert.match(containerId, /^containerd:\/\/[0-9a-f]{64}$/);
    const tasks = await fleet.node('vm-0').exec('ctr --namespace k8s.io tasks list');
    assert.equal(tasks.code, 0, tasks.stderr);
    assert.match(tasks.stdout, new RegExp(`${containerId.slice('containerd://'.length)}\\s+\\d+\\s+RUNNING`));
  });

  test('systemctl reboot in a VM: it boots again with a new boot ID, which its kubelet posts, Ready again with its pod restarted', async (t) => {
    const vm = fleet.node('vm-0');
    const shutdowns: string[] = [];
    fleet.onShutdown((node, bootId) => shutdowns.push(`${node} ${bootId}`));
    const before = await vm.reboot();
    const started = Date.now();
    const node = await fleet.waitForNode(
      vm.name,
      'a new boot ID in status.nodeInfo and Ready',
      (n) => bootIdOf(n) !== '' && bootIdOf(n) !== before && isReady(n),
    );
    const roundTripMs = Date.now() - started;
    t.diagnostic(`reboot round trip (systemctl reboot to Ready under a new boot ID): ${roundTripMs} ms`);
    process.stderr.write(`# ${vm.name}: reboot round trip ${roundTripMs} ms\n`);
    assert.equal(bootIdOf(node), await vm.bootId(), 'the posted boot ID is the one the VM now reads');
    assert.notEqual(await vm.bootId(), before);
    assert.deepEqual(
      shutdowns,
      [`vm-0 ${before}`],
      'the harness saw the boot end on the serial console, once',
    );
    const other = await core.readNode({ name: 'vm-1' });
    assert.ok(isReady(other), 'vm-1 stayed Ready');
    if (!pod) return assert.fail('the pod test did not start a pod to follow across the reboot');
    const restarted = await pollUntil(
      'pod on-vm Running again after the reboot',
      async () => {
        const p = await core.readNamespacedPod({ name: 'on-vm', namespace: 'default' });
        const ready = p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
        const id = p.status?.containerStatuses?.[0]?.containerID;
        return p.status?.phase === 'Running' &&
          ready &&
          id &&
          id !== pod?.status?.containerStatuses?.[0]?.containerID
          ? p
          : undefined;
      },
      { timeoutMs: 120_000 * slow, intervalMs: 500 },
    );
    assert.equal(restarted.metadata?.uid, pod.metadata?.uid, 'the same pod, its containers started again');
  });
});

const onVms = { [VM_NODE_LABEL]: 'true' };
/** nuo's operators run here; the reboot-required path is taken by the other VM, REBOOTED. */
const OPERATOR_NODE = 'vm-1';
const REBOOTED = 'vm-0';
const PAUSE = () => `${registry.host}/nuo/pause:${PAUSE_TAG}`;

describe(`nuo installed from its chart on the VM nodes (${fleet.accel.toUpperCase()})`, () => {
  afterEach(async (t) => {
    // TestContext.passed exists since Node 21.7 but is missing from @types/node.
    if ((t as { passed?: boolean }).passed !== false) return;
    // The API server cannot reach a VM's kubelet (no `kubectl logs`): the logs are read in the VM.
    for (const vm of fleet.nodes) {
      const r = await vm.exec('tail -n 60 /var/log/pods/nuo-system_*/*/*.log', 60_000).catch(() => undefined);
      process.stderr.write(`--- nuo's pods' logs on ${vm.name} ---\n${r?.stdout ?? '(unreachable)'}\n`);
    }
  });
  // Under TCG the image's pull and the operator's first start take minutes each.
  test("helm install oci://… from the local registry: nuo's operator and agents run on the VM nodes under the chart's ServiceAccounts and report the real OS", {
    timeout: 1_800_000,
  }, async () => {
    await core
      .deleteNamespacedPod({ name: 'on-vm', namespace: 'default', gracePeriodSeconds: 0 })
      .catch(() => {});
    // The operators on the node the next test leaves alone: under TCG an operator's start, which
    // an eviction from a drained node costs, takes minutes.
    const installed = installFromRegistry({
      registry: registry.host,
      helm,
      kubeconfigPath: cluster.kubeconfigPath,
      operatorNode: OPERATOR_NODE,
      log,
    });
    assert.match(installed.stdout, /STATUS: deployed/);
    const apps = cluster.kubeconfig.makeApiClient(AppsV1Api);
    await pollUntil(
      "nuo's agent Ready on both VM nodes and an operator available",
      async () => {
        const ds = await apps.readNamespacedDaemonSet({ name: 'nuo-agent', namespace: NS });
        const op = await apps.readNamespacedDeployment({ name: 'nuo-operator', namespace: NS });
        return ds.status?.numberReady === 2 && (op.status?.availableReplicas ?? 0) >= 1 ? true : undefined;
      },
      { timeoutMs: 1_500_000, intervalMs: 1000 },
    );
    const pods = (await core.listNamespacedPod({ namespace: NS })).items;
    const agents = pods.filter((p) => p.metadata?.labels?.['app.kubernetes.io/component'] === 'agent');
    assert.deepEqual(agents.map((p) => p.spec?.nodeName).sort(), ['vm-0', 'vm-1']);
    for (const pod of pods) {
      assert.equal(
        pod.spec?.containers[0]?.image,
        installed.image,
        `${pod.metadata?.name} runs the pushed image`,
      );
      assert.match(pod.spec?.serviceAccountName ?? '', /^nuo-(agent|operator)$/);
    }
    await pollUntil(
      "each agent to label its node with the VM's real OS",
      async () => {
        for (const vm of fleet.nodes) {
          const labels = (await core.readNode({ name: vm.name })).metadata?.labels ?? {};
          if (labels[Labels.osId] !== 'debian' || labels[Labels.osVersion] !== '12') return undefined;
        }
        return true;
      },
      { timeoutMs: 120_000 * slow, intervalMs: 1000 },
    );
  });

  test("Debian's reboot-required path: a package's postinst leaves the sentinel, nuo drains real pods, the agent reboots the VM through logind, once, and uncordons it; the other VM is left alone", {
    timeout: 1_800_000,
  }, async (t) => {
    const apps = cluster.kubeconfig.makeApiClient(AppsV1Api);
    const policy = cluster.kubeconfig.makeApiClient(PolicyV1Api);
    const labels = { app: 'web' };
    await apps.createNamespacedDeployment({
      namespace: 'default',
      body: {
        metadata: { name: 'web' },
        spec: {
          replicas: 2,
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: {
              nodeSelector: onVms,
              topologySpreadConstraints: [
                {
                  maxSkew: 1,
                  topologyKey: 'kubernetes.io/hostname',
                  whenUnsatisfiable: 'DoNotSchedule',
                  labelSelector: { matchLabels: labels },
                },
              ],
              containers: [{ name: 'main', image: PAUSE() }],
              terminationGracePeriodSeconds: 10,
            },
          },
        },
      },
    });
    await policy.createNamespacedPodDisruptionBudget({
      namespace: 'default',
      body: { metadata: { name: 'web' }, spec: { minAvailable: 1, selector: { matchLabels: labels } } },
    });
    const webPods = async () =>
      (await core.listNamespacedPod({ namespace: 'default', labelSelector: 'app=web' })).items.filter(
        (p) => !p.metadata?.deletionTimestamp,
      );
    const before = await pollUntil(
      'web: one Running pod on each VM',
      async () => {
        const pods = await webPods();
        const running = pods.filter((p) => p.status?.phase === 'Running');
        const nodes = new Set(running.map((p) => p.spec?.nodeName));
        return running.length === 2 && nodes.size === 2 ? running : undefined;
      },
      { timeoutMs: 120_000 * slow, intervalMs: 1000 },
    );
    const bootBefore = new Map<string, string>();
    for (const vm of fleet.nodes) bootBefore.set(vm.name, bootIdOf(await core.readNode({ name: vm.name })));

    const checker = new SafetyChecker(cluster.kubeconfig, 1, { namespace: NS });
    await checker.start();
    // The one reboot the package's sentinel asks for; the checker is told of each as it happens.
    checker.allowReboots(REBOOTED);
    fleet.onShutdown((node, bootId) => checker.onReboot(node, bootId));
    const repoDir = join(work, 'apt');
    const deb = buildDeb(join(work, 'debs'), {
      name: 'nuo-test-kernel',
      version: '1.0',
      postinst: 'touch /var/run/reboot-required\necho nuo-test-kernel >> /var/run/reboot-required.pkgs',
    });
    mkdirSync(repoDir, { recursive: true });
    copyFileSync(deb, join(repoDir, 'nuo-test-kernel_1.0_all.deb'));
    writeFlatRepo(repoDir, [join(repoDir, 'nuo-test-kernel_1.0_all.deb')]);
    const repo = await serveRepo(repoDir);
    t.after(() => repo.close());
    const started = Date.now();
    try {
      // What an unattended upgrade does, from this repository alone (the image's Debian mirrors are not reachable).
      const apt = `-o Dir::Etc::SourceList=/etc/apt/sources.list.d/nuo-test.list -o Dir::Etc::SourceParts=-`;
      for (const vm of [fleet.node(REBOOTED)]) {
        const r = await vm.exec(
          `echo 'deb [trusted=yes] http://10.0.2.2:${repo.port} ./' > /etc/apt/sources.list.d/nuo-test.list && apt-get ${apt} update -q && DEBIAN_FRONTEND=noninteractive apt-get ${apt} install -y -q nuo-test-kernel && test -e /var/run/reboot-required`,
          300_000 * slow,
        );
        assert.equal(r.code, 0, `${vm.name}: apt-get install: ${r.stdout}${r.stderr}`);
      }
      assert.ok(
        repo.requests.includes('/nuo-test-kernel_1.0_all.deb'),
        'the package came from the local repository',
      );
      const done = (n: V1Node) =>
        bootIdOf(n) !== bootBefore.get(n.metadata?.name ?? '') &&
        isReady(n) &&
        !n.spec?.unschedulable &&
        n.metadata?.annotations?.[Annotations.rebootNeeded] !== 'true' &&
        (n.metadata?.annotations?.[Annotations.state] ?? Phase.idle) === Phase.idle;
      await fleet.waitForNode(REBOOTED, 'rebooted by nuo, Ready, uncordoned and Idle', done, 1_200_000);
      t.diagnostic(
        `${REBOOTED} rebooted by nuo ${Math.round((Date.now() - started) / 1000)} s after its package was installed`,
      );
    } finally {
      await checker.finalCheck();
      await checker.stop();
    }
    assert.deepEqual(checker.violations, [], 'the independent checker saw no violation');
    assert.equal(checker.rebootsOf(REBOOTED), 1, `${REBOOTED} rebooted exactly once`);
    const sentinel = await fleet.node(REBOOTED).exec('test -e /var/run/reboot-required');
    assert.equal(sentinel.code, 1, `${REBOOTED}: the sentinel went with the reboot`);
    assert.equal(
      checker.rebootsOf(OPERATOR_NODE),
      0,
      `${OPERATOR_NODE}, which needed no reboot, was not rebooted`,
    );
    const other = await core.readNode({ name: OPERATOR_NODE });
    assert.equal(bootIdOf(other), bootBefore.get(OPERATOR_NODE));
    assert.ok(!other.spec?.unschedulable, `${OPERATOR_NODE} never left cordoned`);
    assert.ok(
      checker.maxDisrupted <= 1,
      `never more than the budget of 1 disrupted (${checker.maxDisrupted})`,
    );
    const after = await pollUntil(
      'web: two Running pods again',
      async () => {
        const running = (await webPods()).filter((p) => p.status?.phase === 'Running');
        return running.length === 2 ? running : undefined;
      },
      { timeoutMs: 120_000 * slow, intervalMs: 1000 },
    );
    const evicted = before.find((p) => p.spec?.nodeName === REBOOTED);
    assert.ok(evicted, `a web pod ran on ${REBOOTED} before`);
    assert.ok(
      after.every((p) => p.metadata?.uid !== evicted.metadata?.uid),
      `the web pod on ${REBOOTED} was evicted by the drain and replaced`,
    );
  });
});
