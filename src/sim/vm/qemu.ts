/**
 * A VM node's qemu command line: a pure builder, so what every VM runs with is read in one place.
 */
import { accessSync, constants, existsSync } from 'node:fs';

/** The guest's view of qemu's user-mode network: the host's loopback is reached at HOST_FROM_GUEST. */
export const HOST_FROM_GUEST = '10.0.2.2';
export const GUEST_IP = '10.0.2.15';

export type Accel = 'kvm' | 'tcg';

/** NUO_VM_ACCEL=kvm|tcg forces the choice, for a host whose KVM is misjudged below. */
export const ACCEL_ENV = 'NUO_VM_ACCEL';

/**
 * KVM when /dev/kvm can be opened and is hardware-assisted; else TCG (emulation, many times slower),
 * with the reason. A host whose KVM is PVM (module kvm_pvm without kvm_intel or kvm_amd: nested
 * virtualisation without VMX, as in some sandboxes) runs only guest kernels built for PVM; Debian's
 * kernel hangs under it right after its real-mode setup.
 */
export function detectAccel(
  env: NodeJS.ProcessEnv = process.env,
  exists: (path: string) => boolean = existsSync,
  usable: (path: string) => boolean = canOpen,
): { accel: Accel; reason: string } {
  const forced = env[ACCEL_ENV];
  if (forced === 'kvm' || forced === 'tcg') return { accel: forced, reason: `${ACCEL_ENV}=${forced}` };
  if (forced) throw new Error(`${ACCEL_ENV}=${forced}: expected kvm or tcg`);
  if (!usable('/dev/kvm')) return { accel: 'tcg', reason: '/dev/kvm is missing or cannot be opened' };
  const hardware = exists('/sys/module/kvm_intel') || exists('/sys/module/kvm_amd');
  if (exists('/sys/module/kvm_pvm') && !hardware) {
    return {
      accel: 'tcg',
      reason:
        "/dev/kvm is PVM (kvm_pvm, no kvm_intel or kvm_amd), which boots only PVM guest kernels, not Debian's",
    };
  }
  return { accel: 'kvm', reason: '/dev/kvm is usable' };
}

function canOpen(path: string): boolean {
  try {
    accessSync(path, constants.R_OK | constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

export interface QemuInput {
  name: string;
  accel: Accel;
  kernel: string;
  initrd: string;
  /** The VM's copy-on-write qcow2 overlay of the image's root disk. */
  overlay: string;
  /** The per-VM configuration disk (raw ext4, labelled nuo-config). */
  configDisk: string;
  /** The loopback port forwarded to the guest's sshd. */
  sshPort: number;
  serialLog: string;
  cpus: number;
  memoryMiB: number;
}

export function qemuArgs(i: QemuInput): string[] {
  return [
    '-name',
    i.name,
    '-machine',
    `q35,accel=${i.accel}`,
    '-cpu',
    i.accel === 'kvm' ? 'host' : 'max',
    '-smp',
    String(i.cpus),
    '-m',
    String(i.memoryMiB),
    '-nodefaults',
    '-no-user-config',
    '-display',
    'none',
    '-kernel',
    i.kernel,
    '-initrd',
    i.initrd,
    '-append',
    // net.ifnames=0: the one NIC is eth0, whatever PCI slot it gets.
    'root=/dev/vda rw console=ttyS0 net.ifnames=0 systemd.show_status=1',
    '-drive',
    // cache=unsafe: a throwaway overlay; a host crash loses nothing that matters.
    `file=${i.overlay},if=virtio,format=qcow2,cache=unsafe`,
    '-drive',
    `file=${i.configDisk},if=virtio,format=raw,readonly=on`,
    '-netdev',
    `user,id=net0,net=10.0.2.0/24,host=${HOST_FROM_GUEST},hostfwd=tcp:127.0.0.1:${i.sshPort}-${GUEST_IP}:22`,
    '-device',
    'virtio-net-pci,netdev=net0',
    '-device',
    'virtio-rng-pci',
    '-serial',
    `file:${i.serialLog}`,
    // A guest reboot (`systemctl reboot`) resets the machine and boots it again; a poweroff ends qemu.
    '-action',
    'reboot=reset,shutdown=poweroff',
  ];
}
