/**
 * The per-VM configuration, delivered at boot on a small second disk (ext4 labelled nuo-config, made by
 * `mkfs.ext4 -d` from a directory): the image's nuo-config unit copies its root/ tree over / before
 * containerd, the kubelet, kube-proxy and sshd start. One image serves every node.
 */
import { execFile } from 'node:child_process';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { HOST_FROM_GUEST } from './qemu.ts';

const exec = promisify(execFile);

/** What a VM node's kubelet registers it with. */
export const VM_NODE_LABEL = 'sim.nuo.dev/vm';

export interface VmConfigInput {
  name: string;
  zone: string;
  /** The API server's port on the host's loopback, reached from the guest at HOST_FROM_GUEST. */
  apiPort: number;
  caCert: string;
  kubelet: { cert: string; key: string };
  kubeProxy: { cert: string; key: string };
  /** The pods' subnet on this node (the CNI bridge's), distinct per node. */
  podSubnet: string;
  /** The cluster's pod network, which kube-proxy does not masquerade. */
  clusterCidr: string;
  sshPublicKey: string;
  /** A registry on the host's loopback (`127.0.0.1:port`) that image names may name as on the host. */
  registry?: string;
}

export interface ConfigFile {
  data: string;
  mode: number;
}

function kubeconfig(server: string, ca: string, user: string, cert: string, key: string): string {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  return `${JSON.stringify(
    {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'nuo-local', cluster: { server, 'certificate-authority-data': b64(ca) } }],
      users: [{ name: user, user: { 'client-certificate-data': b64(cert), 'client-key-data': b64(key) } }],
      contexts: [{ name: user, context: { cluster: 'nuo-local', user } }],
      'current-context': user,
    },
    null,
    2,
  )}\n`;
}

/** The files of the config disk's root/ tree, by path relative to the guest's /. */
export function vmConfigFiles(i: VmConfigInput): Record<string, ConfigFile> {
  const server = `https://${HOST_FROM_GUEST}:${i.apiPort}`;
  const file = (data: string, mode = 0o644): ConfigFile => ({ data, mode });
  const files: Record<string, ConfigFile> = {
    'etc/hostname': file(`${i.name}\n`),
    'etc/kubernetes/pki/ca.crt': file(i.caCert),
    'etc/kubernetes/kubelet.kubeconfig': file(
      kubeconfig(server, i.caCert, `system:node:${i.name}`, i.kubelet.cert, i.kubelet.key),
      0o600,
    ),
    'etc/kubernetes/kube-proxy.kubeconfig': file(
      kubeconfig(server, i.caCert, 'system:kube-proxy', i.kubeProxy.cert, i.kubeProxy.key),
      0o600,
    ),
    'etc/default/kubelet': file(
      `KUBELET_ARGS="--hostname-override=${i.name} --node-labels=topology.kubernetes.io/zone=${i.zone},${VM_NODE_LABEL}=true"\n`,
    ),
    'etc/kubernetes/kube-proxy-config.yaml': file(
      `${JSON.stringify({
        apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
        kind: 'KubeProxyConfiguration',
        clientConnection: { kubeconfig: '/etc/kubernetes/kube-proxy.kubeconfig' },
        hostnameOverride: i.name,
        mode: 'iptables',
        clusterCIDR: i.clusterCidr,
        nodePortAddresses: ['primary'],
      })}\n`,
    ),
    'etc/cni/net.d/10-nuo-bridge.conflist': file(
      `${JSON.stringify({
        cniVersion: '1.0.0',
        name: 'nuo-pods',
        plugins: [
          {
            type: 'bridge',
            bridge: 'cni0',
            isGateway: true,
            ipMasq: true,
            hairpinMode: true,
            ipam: { type: 'host-local', ranges: [[{ subnet: i.podSubnet }]], routes: [{ dst: '0.0.0.0/0' }] },
          },
          { type: 'portmap', capabilities: { portMappings: true } },
        ],
      })}\n`,
    ),
    'root/.ssh/authorized_keys': file(i.sshPublicKey, 0o600),
  };
  if (i.registry) {
    const port = i.registry.split(':')[1];
    // The guest pulls `127.0.0.1:port/…` (the name the host pushed it under) from the host's loopback.
    files[`etc/containerd/certs.d/${i.registry}/hosts.toml`] = file(
      `server = "http://${HOST_FROM_GUEST}:${port}"\n\n[host."http://${HOST_FROM_GUEST}:${port}"]\n  capabilities = ["pull", "resolve"]\n`,
    );
  }
  return files;
}

/** Directories whose modes the copy over / carries: /root and its .ssh must stay private for sshd. */
const PRIVATE_DIRS = new Set(['root', 'root/.ssh']);

/** Writes the files under `dir`/tree/root and makes the ext4 disk image `out` from that tree. */
export async function writeConfigDisk(
  dir: string,
  files: Record<string, ConfigFile>,
  out: string,
): Promise<void> {
  const tree = join(dir, 'tree');
  for (const [path, { data, mode }] of Object.entries(files)) {
    const target = join(tree, 'root', path);
    await mkdir(dirname(target), { recursive: true, mode: 0o755 });
    await writeFile(target, data, { mode });
    await chmod(target, mode);
  }
  for (const path of PRIVATE_DIRS) await chmod(join(tree, 'root', path), 0o700).catch(() => {});
  await chmod(join(tree, 'root'), 0o755);
  try {
    await exec('mkfs.ext4', ['-q', '-F', '-L', 'nuo-config', '-d', tree, out, '16M']);
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string };
    throw new Error(`mkfs.ext4 of the config disk ${out} failed: ${e.stderr?.trim() || e.message}`);
  }
}
