/**
 * Real nodes: two KVM virtual machines (systemd, containerd 2, a kubelet and kube-proxy built from the
 * control plane's release) join the local control plane beside KWOK nodes, run a pod pulled from a local
 * registry in containerd, and reboot for real. Under TCG (no /dev/kvm) the run says so and waits longer.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, describe, test } from 'node:test';
import { CoreV1Api, type V1Node, type V1Pod } from '@kubernetes/client-node';
import { KWOK_NODE } from '../../src/sim/cluster/component-args.ts';
import { isReady } from '../../src/sim/cluster/nodes.ts';
import { VM_NODE_LABEL } from '../../src/sim/vm/config-disk.ts';
import { startVmNodes } from '../../src/sim/vm/vms.ts';
import { pollUntil } from '../../src/util/poll.ts';
import { PAUSE_TAG } from '../../tools/vm/pause-image.ts';
import { startRegistry } from './registry.ts';
import { useCluster } from './support.ts';

const log = (line: string) => process.stderr.write(`# ${line}\n`);
const cluster = await useCluster({ nodes: 2, zones: 2, log });
const registry = await startRegistry();
after(() => registry.stop());
const fleet = await startVmNodes(cluster, { registry: registry.host, log });
after(() => fleet.stop());
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
