/**
 * The agent in a container of the image as a node runs it, for the image's tests and bench/image.ts: on
 * the host network (to reach a local API server), a kubeconfig and a host root with an os-release bound
 * in, deploy/base's sentinel-file detector, and the signal rebooter (never fired while idle); `args` adds
 * flags. The operator likewise, with the same kubeconfig, metrics on a port of its own choosing.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Container, Runc, Unpacked } from './runc.ts';
import { ENTRYPOINT } from './spec.ts';

export function startAgent(
  runc: Runc,
  unpacked: Unpacked,
  o: { work: string; kubeconfigPath: string; args?: string[] },
): Container {
  // Readable by the container's user: a copy of the kubeconfig, and a host / with an os-release.
  const kubeconfig = containerKubeconfig(o);
  const host = join(o.work, 'host');
  mkdirSync(join(host, 'etc'), { recursive: true, mode: 0o755 });
  writeFileSync(join(host, 'etc/os-release'), 'ID=flatcar\nVERSION_ID=4152.2.0\n', { mode: 0o644 });
  return runc.start(unpacked, {
    args: [
      ...ENTRYPOINT,
      'agent',
      '--node-name=node-0',
      '--kubeconfig=/etc/nuo/kubeconfig',
      '--host-root=/host',
      '--detector=sentinel-file',
      '--rebooter=signal',
      ...(o.args ?? []),
    ],
    hostNetwork: true,
    binds: [
      { source: kubeconfig, destination: '/etc/nuo/kubeconfig' },
      { source: host, destination: '/host' },
    ],
  });
}

/** A copy of the kubeconfig the container's user can read. */
function containerKubeconfig(o: { work: string; kubeconfigPath: string }): string {
  const kubeconfig = join(o.work, 'kubeconfig');
  writeFileSync(kubeconfig, readFileSync(o.kubeconfigPath), { mode: 0o644 });
  return kubeconfig;
}

export function startOperator(
  runc: Runc,
  unpacked: Unpacked,
  o: { work: string; kubeconfigPath: string; args?: string[] },
): Container {
  return runc.start(unpacked, {
    args: [
      ...ENTRYPOINT,
      'operator',
      '--kubeconfig=/etc/nuo/kubeconfig',
      '--metrics-port=0',
      ...(o.args ?? []),
    ],
    hostNetwork: true,
    binds: [{ source: containerKubeconfig(o), destination: '/etc/nuo/kubeconfig' }],
  });
}
