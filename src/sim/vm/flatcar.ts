/**
 * A VM node as FLUO's update-agent needs a Flatcar host to be: the update_engine stand-in on its system
 * bus (tools/vm/update-engine, installed as Flatcar installs update_engine: its D-Bus policy and its
 * systemd unit), Flatcar's update.conf, and an os-release of Flatcar's that the stand-in keeps (the VM
 * itself stays Debian). And FLUO's own agent manifests, changed only where a VM node must differ.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Manifest } from '../../../tools/manifests.ts';
import type { VmNode } from './vms.ts';

/** Where the stand-in keeps the offered, staged and running versions, and the os-release it writes. */
export const UPDATE_ENGINE_DIR = '/var/lib/update-engine';
export const FLATCAR_OS_RELEASE = `${UPDATE_ENGINE_DIR}/os-release`;
const BINARY = '/usr/local/sbin/update-engine';

/** The root part of update_engine's com.coreos.update1.conf: root owns the name and calls it. */
const DBUS_POLICY = `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
  "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <policy user="root">
    <allow own="com.coreos.update1" />
    <allow send_destination="com.coreos.update1" />
  </policy>
  <policy context="default">
    <deny send_destination="com.coreos.update1" />
  </policy>
</busconfig>
`;

/** update_engine's systemd unit (Type=dbus on its bus name, restarted always), running the stand-in. */
const UNIT = `[Unit]
Description=Update Engine (stand-in: tools/vm/update-engine)

[Service]
Type=dbus
BusName=com.coreos.update1
ExecStart=${BINARY} --state-dir ${UPDATE_ENGINE_DIR} --os-release ${FLATCAR_OS_RELEASE}
Restart=always
RestartSec=5

[Install]
WantedBy=multi-user.target
`;

/** Flatcar's /usr/share/flatcar/update.conf: the channel FLUO's agent labels the node with. */
const UPDATE_CONF = 'SERVER=https://public.update.flatcar-linux.net/v1/update/\nGROUP=stable\n';

async function run(vm: VmNode, what: string, command: string, timeoutMs?: number): Promise<string> {
  const r = await vm.exec(command, timeoutMs);
  if (r.code !== 0) throw new Error(`${vm.name}: ${what} exited ${r.code}: ${r.stderr}${r.stdout}`);
  return r.stdout;
}

/**
 * Installs and starts the update_engine stand-in (`binary`, built on the host) on `vm`, with the files
 * FLUO's agent reads; returns once it owns its bus name.
 */
export async function playFlatcar(vm: VmNode, binary: string, work: string): Promise<void> {
  const files = { policy: DBUS_POLICY, unit: UNIT, conf: UPDATE_CONF };
  for (const [name, content] of Object.entries(files)) await writeFile(join(work, name), content);
  await vm.copyTo(binary, BINARY);
  await vm.copyTo(join(work, 'policy'), '/etc/dbus-1/system.d/com.coreos.update1.conf');
  await vm.copyTo(join(work, 'unit'), '/etc/systemd/system/update-engine.service');
  await run(
    vm,
    'making the Flatcar directories',
    `mkdir -p /usr/share/flatcar /etc/flatcar ${UPDATE_ENGINE_DIR}`,
  );
  await vm.copyTo(join(work, 'conf'), '/usr/share/flatcar/update.conf');
  await run(
    vm,
    'starting update-engine',
    `chmod 755 ${BINARY} && systemctl reload dbus && systemctl daemon-reload && systemctl enable --now update-engine.service`,
    300_000,
  );
}

/** Tells the stand-in what the update server offers, then asks it to check (`update_engine_client -update`). */
export async function offerUpdate(vm: VmNode, version: string): Promise<void> {
  await run(
    vm,
    'offering an update',
    `echo ${version} > ${UPDATE_ENGINE_DIR}/offer && dbus-send --system --print-reply --dest=com.coreos.update1 /com/coreos/update1 com.coreos.update1.Manager.AttemptUpdate`,
  );
}

/** The stand-in's GetStatus, as dbus-send prints it. */
export const updateEngineStatus = (vm: VmNode) =>
  run(
    vm,
    'GetStatus',
    'dbus-send --system --print-reply --dest=com.coreos.update1 /com/coreos/update1 com.coreos.update1.Manager.GetStatus',
  );

type DaemonSet = Manifest & {
  spec: {
    template: {
      spec: {
        nodeSelector?: Record<string, string>;
        containers: { image?: string }[];
        volumes: { name: string; hostPath?: { path: string } }[];
      };
    };
  };
};

/**
 * FLUO's agent objects for VM nodes (pure): the DaemonSet's image is `image` (built here from FLUO's
 * source and pushed to the local registry, where its ghcr.io reference cannot be pulled), it runs on the
 * nodes `nodeSelector` selects (its pool), and its /etc/os-release is the one the stand-in keeps. Nothing
 * else changes.
 */
export function fluoAgentOnVms(
  objects: Manifest[],
  o: { image: string; nodeSelector: Record<string, string> },
): Manifest[] {
  return objects.map((object) => {
    if (object.kind !== 'DaemonSet') return object;
    const ds = structuredClone(object) as DaemonSet;
    const pod = ds.spec.template.spec;
    const [container] = pod.containers;
    const osRelease = pod.volumes.find((v) => v.hostPath?.path === '/etc/os-release');
    if (!container || !osRelease?.hostPath) {
      throw new Error(
        "FLUO's update-agent DaemonSet has no container or no /etc/os-release volume: its manifest changed",
      );
    }
    container.image = o.image;
    pod.nodeSelector = { ...pod.nodeSelector, ...o.nodeSelector };
    osRelease.hostPath.path = FLATCAR_OS_RELEASE;
    return ds;
  });
}
