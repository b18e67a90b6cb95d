/**
 * Real nodes for the local control plane: KVM virtual machines booted from the VM node image
 * (tools/vm), each with systemd, containerd, a real kubelet and kube-proxy, joined with credentials the
 * harness mints, beside any KWOK nodes (KWOK plays only the nodes annotated for it). Each VM boots from a
 * copy-on-write overlay of the image; `systemctl reboot` inside resets it and it boots again from its
 * overlay with a new boot ID.
 */
import { execFile } from 'node:child_process';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CoreV1Api, type V1Node } from '@kubernetes/client-node';
import { ensureVmImage, type VmImage } from '../../../tools/vm/image.ts';
import { pollUntil } from '../../util/poll.ts';
import type { LocalCluster } from '../cluster/cluster.ts';
import { freePort } from '../cluster/net.ts';
import { isReady, zoneName } from '../cluster/nodes.ts';
import { Component } from '../cluster/process.ts';
import { publishApiEndpoint } from './api-endpoint.ts';
import { vmConfigFiles, writeConfigDisk } from './config-disk.ts';
import { kubeletCert, kubeProxyCert, sshKey } from './credentials.ts';
import { type Accel, detectAccel, qemuArgs } from './qemu.ts';
import { watchShutdowns } from './shutdown-watch.ts';
import { type ExecResult, SSH_CONNECTION_LOST, scpTo, sshExec } from './ssh.ts';

const run = promisify(execFile);

export const QEMU = 'qemu-system-x86_64';
/** The pod network of all VM nodes; each node's bridge takes one /24 of it. */
export const VM_CLUSTER_CIDR = '10.244.0.0/16';

export interface VmNodeSpec {
  name: string;
  zone: string;
}

export interface VmOptions {
  /** The VMs to start (default two, vm-0 and vm-1, in zone-a and zone-b). */
  nodes?: VmNodeSpec[];
  /** The image to boot (default: the one tools/vm builds, built first if missing). */
  image?: VmImage;
  /** A registry on the host's loopback (`127.0.0.1:port`) the VMs pull from under the same name. */
  registry?: string;
  cpus?: number;
  memoryMiB?: number;
  /** How long to wait for every node Ready (default 240 s on KVM, 1200 s under TCG). */
  readyTimeoutMs?: number;
  log?: (line: string) => void;
}

export interface VmNode {
  name: string;
  zone: string;
  sshPort: number;
  serialLog: string;
  qemu: Component;
  /** Runs a shell command line in the VM as root; never throws for a non-zero exit. */
  exec(command: string, timeoutMs?: number): Promise<ExecResult>;
  /** Copies the host's file `local` to `remote` in the VM (scp); throws if it cannot. */
  copyTo(local: string, remote: string): Promise<void>;
  /** /proc/sys/kernel/random/boot_id, read in the VM. */
  bootId(): Promise<string>;
  /** `systemctl reboot` in the VM; returns the boot ID it had. The VM boots again on its own. */
  reboot(): Promise<string>;
}

export interface VmFleet {
  /** KVM, or TCG (emulation) when KVM cannot boot the image: every wait is then five times longer. */
  accel: Accel;
  /** Why this accelerator: printed with the test's results. */
  accelReason: string;
  image: VmImage;
  nodes: VmNode[];
  node(name: string): VmNode;
  /** Waits until the Node passes `check` (e.g. Ready with a boot ID other than the last), or fails. */
  waitForNode(
    name: string,
    what: string,
    check: (node: V1Node) => boolean,
    timeoutMs?: number,
  ): Promise<V1Node>;
  /** Milliseconds from the first qemu start to the last node Ready. */
  bootToReadyMs: number;
  /**
   * Calls `listener` as a VM's boot ends (a reboot or a poweroff), with the boot ID its Node still shows:
   * a real machine's reboot hook, e.g. for the safety checker's onReboot.
   */
  onShutdown(listener: (node: string, bootId: string) => void): void;
  stop(): Promise<void>;
}

/** `count` VMs named vm-0, vm-1…, spread over `zones` zones round-robin as a cluster's KWOK nodes are. */
export const vmNodeSpecs = (count: number, zones: number): VmNodeSpec[] =>
  Array.from({ length: count }, (_, i) => ({ name: `vm-${i}`, zone: zoneName(i, zones) }));

const DEFAULT_NODES = vmNodeSpecs(2, 2);

/** Fails loudly (never a silent skip) when qemu is missing. */
async function checkQemu(): Promise<void> {
  try {
    await run(QEMU, ['--version']);
  } catch (err) {
    throw new Error(
      `${QEMU} cannot run (${(err as Error).message}): install Debian's qemu-system-x86 and qemu-utils (.ci/run does)`,
    );
  }
}

export async function startVmNodes(cluster: LocalCluster, options: VmOptions = {}): Promise<VmFleet> {
  const log = options.log ?? (() => {});
  const specs = options.nodes ?? DEFAULT_NODES;
  const { accel, reason } = detectAccel();
  if (accel === 'tcg') {
    process.stderr.write(
      `\n*** VM nodes run under TCG emulation, not KVM (${reason}): many times slower, with timeouts five times longer ***\n\n`,
    );
  }
  const slow = accel === 'tcg' ? 5 : 1;
  await checkQemu();
  const image = options.image ?? (await ensureVmImage(log));
  const dir = join(cluster.dir, 'vms');
  const logs = join(cluster.dir, 'logs');
  await mkdir(dir, { recursive: true });
  const key = join(dir, 'ssh-key');
  const sshPublicKey = await sshKey(key);
  const apiPort = Number(new URL(cluster.server).port);
  await publishApiEndpoint(cluster.kubeconfig, apiPort);
  const kubeProxy = await kubeProxyCert(cluster.dir);
  const caCert = cluster.caCert.toString();
  const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
  const nodes: VmNode[] = [];
  const started = Date.now();
  const listeners: ((node: string, bootId: string) => void)[] = [];
  const unwatch: (() => void)[] = [];
  const stop = async () => {
    for (const u of unwatch) u();
    await Promise.all(nodes.map((n) => n.qemu.stop()));
  };
  const unregister = cluster.beforeStop(stop);
  try {
    for (const [index, spec] of specs.entries()) {
      const vmDir = join(dir, spec.name);
      await mkdir(vmDir);
      const overlay = join(vmDir, 'root.qcow2');
      await run('qemu-img', ['create', '-q', '-f', 'qcow2', '-b', image.rootfs, '-F', 'raw', overlay]).catch(
        (err: Error) => {
          throw new Error(`qemu-img create of ${overlay} failed: ${err.message}`);
        },
      );
      const configDisk = join(vmDir, 'config.img');
      const files = vmConfigFiles({
        name: spec.name,
        zone: spec.zone,
        apiPort,
        caCert,
        kubelet: await kubeletCert(cluster.dir, spec.name),
        kubeProxy,
        podSubnet: `10.244.${10 + index}.0/24`,
        clusterCidr: VM_CLUSTER_CIDR,
        sshPublicKey,
        ...(options.registry ? { registry: options.registry } : {}),
      });
      await writeConfigDisk(join(vmDir, 'config'), files, configDisk);
      const sshPort = await freePort();
      const serialLog = join(logs, `${spec.name}.serial.log`);
      const qemu = new Component({
        name: `${spec.name} (qemu)`,
        binary: QEMU,
        args: qemuArgs({
          name: spec.name,
          accel,
          kernel: image.kernel,
          initrd: image.initrd,
          overlay,
          configDisk,
          sshPort,
          serialLog,
          cpus: options.cpus ?? (accel === 'kvm' ? 2 : 1),
          memoryMiB: options.memoryMiB ?? 1536,
        }),
        logFile: join(logs, `${spec.name}.qemu.log`),
        pidFile: cluster.pidFile,
      });
      const target = { port: sshPort, key };
      const node: VmNode = {
        name: spec.name,
        zone: spec.zone,
        sshPort,
        serialLog,
        qemu,
        exec: (command, timeoutMs) => sshExec(target, command, timeoutMs),
        async copyTo(local, remote) {
          const r = await scpTo(target, local, remote);
          if (r.code !== 0)
            throw new Error(`${spec.name}: scp ${local} to ${remote} exited ${r.code}: ${r.stderr}`);
        },
        async bootId() {
          const r = await sshExec(target, 'cat /proc/sys/kernel/random/boot_id');
          if (r.code !== 0)
            throw new Error(`${spec.name}: reading the boot ID exited ${r.code}: ${r.stderr}`);
          return r.stdout.trim();
        },
        async reboot() {
          const before = await node.bootId();
          const r = await sshExec(target, 'systemctl reboot');
          // sshd may be stopped before ssh reads the exit status: the connection drops instead.
          if (r.code !== 0 && r.code !== SSH_CONNECTION_LOST) {
            throw new Error(`${spec.name}: systemctl reboot exited ${r.code}: ${r.stderr}`);
          }
          return before;
        },
      };
      nodes.push(node);
      unwatch.push(
        watchShutdowns(serialLog, () => {
          void core.readNode({ name: spec.name }).then(
            (n) => {
              for (const l of listeners) l(spec.name, n.status?.nodeInfo?.bootID ?? '');
            },
            (err: Error) =>
              process.stderr.write(`${spec.name}: reading its Node at shutdown: ${err.message}\n`),
          );
        }),
      );
      log(
        `${spec.name}: qemu started (${accel}), ssh on 127.0.0.1:${sshPort}, serial console in ${serialLog}`,
      );
    }
    const waitForNode: VmFleet['waitForNode'] = (name, what, check, timeoutMs = 240_000 * slow) => {
      const vm = nodes.find((n) => n.name === name);
      return pollUntil(
        `${name}: ${what}`,
        async () => {
          if (vm && vm.qemu.exitCode !== undefined) {
            throw new VmExited(`${name}'s qemu exited (${vm.qemu.exitCode}):\n${vm.qemu.tail(20)}`);
          }
          const found = await core.readNode({ name }).catch(() => undefined);
          return found && check(found) ? found : undefined;
        },
        { timeoutMs, intervalMs: 500 },
      ).catch(async (err: Error) => {
        const serial = vm ? await readFile(vm.serialLog, 'utf8').catch(() => '') : '';
        throw new Error(
          `${err.message}\n--- ${name} serial console (last 40 lines) ---\n${tail(serial, 40)}`,
        );
      });
    };
    await Promise.all(
      nodes.map((n) => waitForNode(n.name, 'Ready', isReady, options.readyTimeoutMs ?? 240_000 * slow)),
    );
    const bootToReadyMs = Date.now() - started;
    log(`${nodes.length} VM nodes Ready in ${bootToReadyMs} ms (${accel})`);
    return {
      accel,
      accelReason: reason,
      image,
      nodes,
      node(name) {
        const found = nodes.find((n) => n.name === name);
        if (!found) throw new Error(`no VM node ${name} (have ${nodes.map((n) => n.name).join(', ')})`);
        return found;
      },
      waitForNode,
      bootToReadyMs,
      onShutdown: (listener) => void listeners.push(listener),
      async stop() {
        unregister();
        await stop();
      },
    };
  } catch (err) {
    unregister();
    await stop();
    throw err;
  }
}

class VmExited extends Error {}

function tail(text: string, lines: number): string {
  return text.split('\n').slice(-lines).join('\n');
}
