import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { apiEndpointSlice } from '../../src/sim/vm/api-endpoint.ts';
import { VM_NODE_LABEL, vmConfigFiles } from '../../src/sim/vm/config-disk.ts';
import { detectAccel, qemuArgs } from '../../src/sim/vm/qemu.ts';
import { watchShutdowns } from '../../src/sim/vm/shutdown-watch.ts';

const qemuInput = {
  name: 'vm-0',
  accel: 'kvm' as const,
  kernel: '/img/vmlinuz',
  initrd: '/img/initrd.img',
  overlay: '/c/vms/vm-0/root.qcow2',
  configDisk: '/c/vms/vm-0/config.img',
  sshPort: 2222,
  serialLog: '/c/logs/vm-0.serial.log',
  cpus: 2,
  memoryMiB: 1536,
};

test('qemuArgs: a guest reboot resets the machine (no -no-reboot), root on the overlay, sshd forwarded on loopback only', () => {
  const args = qemuArgs(qemuInput);
  assert.ok(!args.includes('-no-reboot'));
  assert.equal(args[args.indexOf('-action') + 1], 'reboot=reset,shutdown=poweroff');
  assert.ok(args.includes('file=/c/vms/vm-0/root.qcow2,if=virtio,format=qcow2,cache=unsafe'));
  assert.ok(args.includes('file=/c/vms/vm-0/config.img,if=virtio,format=raw,readonly=on'));
  assert.match(args[args.indexOf('-netdev') + 1] ?? '', /hostfwd=tcp:127\.0\.0\.1:2222-10\.0\.2\.15:22$/);
  assert.match(args[args.indexOf('-append') + 1] ?? '', /^root=\/dev\/vda rw console=ttyS0 /);
  assert.equal(args[args.indexOf('-machine') + 1], 'q35,accel=kvm');
  assert.equal(args[args.indexOf('-cpu') + 1], 'host');
  const tcg = qemuArgs({ ...qemuInput, accel: 'tcg' });
  assert.equal(tcg[tcg.indexOf('-machine') + 1], 'q35,accel=tcg');
  assert.equal(tcg[tcg.indexOf('-cpu') + 1], 'max');
});

test('detectAccel: KVM only where it is hardware-assisted; TCG with the reason otherwise; the environment forces either', () => {
  const modules =
    (...names: string[]) =>
    (path: string) =>
      names.some((n) => path === `/sys/module/${n}`);
  const yes = () => true;
  const no = () => false;
  assert.deepEqual(detectAccel({}, modules('kvm', 'kvm_intel'), yes).accel, 'kvm');
  assert.deepEqual(detectAccel({}, modules('kvm', 'kvm_amd'), yes).accel, 'kvm');
  const pvm = detectAccel({}, modules('kvm', 'kvm_pvm'), yes);
  assert.equal(pvm.accel, 'tcg');
  assert.match(pvm.reason, /PVM/);
  const missing = detectAccel({}, modules('kvm', 'kvm_intel'), no);
  assert.equal(missing.accel, 'tcg');
  assert.match(missing.reason, /\/dev\/kvm is missing/);
  assert.equal(detectAccel({ NUO_VM_ACCEL: 'kvm' }, modules('kvm_pvm'), yes).accel, 'kvm');
  assert.equal(detectAccel({ NUO_VM_ACCEL: 'tcg' }, modules('kvm_intel'), yes).accel, 'tcg');
  assert.throws(() => detectAccel({ NUO_VM_ACCEL: 'hvf' }, no, yes), /expected kvm or tcg/);
});

test('vmConfigFiles: the kubelet joins as its node through 10.0.2.2 with its zone; the registry is mapped to the host', () => {
  const files = vmConfigFiles({
    name: 'vm-1',
    zone: 'zone-b',
    apiPort: 6443,
    caCert: 'CA',
    kubelet: { cert: 'KC', key: 'KK' },
    kubeProxy: { cert: 'PC', key: 'PK' },
    podSubnet: '10.244.11.0/24',
    clusterCidr: '10.244.0.0/16',
    sshPublicKey: 'ssh-ed25519 AAA nuo-harness\n',
    registry: '127.0.0.1:5000',
  });
  assert.equal(files['etc/hostname']?.data, 'vm-1\n');
  const kubeconfig = JSON.parse(files['etc/kubernetes/kubelet.kubeconfig']?.data ?? '{}');
  assert.equal(kubeconfig.clusters[0].cluster.server, 'https://10.0.2.2:6443');
  assert.equal(kubeconfig.users[0].name, 'system:node:vm-1');
  assert.equal(Buffer.from(kubeconfig.users[0].user['client-key-data'], 'base64').toString(), 'KK');
  assert.equal(files['etc/kubernetes/kubelet.kubeconfig']?.mode, 0o600);
  assert.match(
    files['etc/default/kubelet']?.data ?? '',
    new RegExp(
      `--hostname-override=vm-1 --node-labels=topology.kubernetes.io/zone=zone-b,${VM_NODE_LABEL}=true`,
    ),
  );
  const proxy = JSON.parse(files['etc/kubernetes/kube-proxy-config.yaml']?.data ?? '{}');
  assert.equal(proxy.hostnameOverride, 'vm-1');
  const cni = JSON.parse(files['etc/cni/net.d/10-nuo-bridge.conflist']?.data ?? '{}');
  assert.equal(cni.plugins[0].ipam.ranges[0][0].subnet, '10.244.11.0/24');
  assert.match(
    files['etc/containerd/certs.d/127.0.0.1:5000/hosts.toml']?.data ?? '',
    /http:\/\/10\.0\.2\.2:5000/,
  );
  assert.equal(files['root/.ssh/authorized_keys']?.mode, 0o600);
});

test("apiEndpointSlice: the kubernetes Service's endpoint is the host's loopback as VMs reach it, not the controller's", () => {
  const slice = apiEndpointSlice(6443);
  assert.equal(slice.metadata?.labels?.['kubernetes.io/service-name'], 'kubernetes');
  assert.notEqual(
    slice.metadata?.labels?.['endpointslice.kubernetes.io/managed-by'],
    'endpointslice-controller.k8s.io',
  );
  assert.deepEqual(slice.endpoints?.[0]?.addresses, ['10.0.2.2']);
  assert.deepEqual(slice.ports?.[0], { name: 'https', port: 6443, protocol: 'TCP' });
});

test("watchShutdowns: the kernel's last line on the serial console, once per boot, across partial writes", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'nuo-shutdown-watch-'));
  const log = join(dir, 'serial.log');
  writeFileSync(log, '[  1.0] Run /init as init process\r\n');
  let seen = 0;
  const stop = watchShutdowns(log, () => seen++, 10);
  const settle = () => new Promise((r) => setTimeout(r, 100));
  try {
    // As a Debian VM's console shows a reboot: systemd-shutdown syncs twice, then the kernel's line.
    appendFileSync(log, '[ 99.1] systemd-shutdown[1]: Syncing filesystems and block devices.\r\n');
    appendFileSync(log, '[ 99.2] systemd-shutdown[1]: Syncing filesystems and block devices.\r\n');
    appendFileSync(log, '[ 99.3] reboot: Restarting sys');
    await settle();
    assert.equal(seen, 0, "half a line is not a line, nor are systemd-shutdown's");
    appendFileSync(log, 'tem\r\n[ 99.4] reboot: machine restart\r\n');
    await settle();
    assert.equal(seen, 1);
    appendFileSync(log, '[  0.0] Linux version 6.1.0\r\n');
    await settle();
    assert.equal(seen, 1, 'the next boot is not another shutdown');
    appendFileSync(log, '[ 50.0] reboot: Power down\r\n');
    await settle();
    assert.equal(seen, 2, 'a poweroff ends a boot too');
  } finally {
    stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
