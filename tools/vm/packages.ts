/** The Debian bookworm packages of the VM node image, each with what needs it (mmdebstrap's minbase adds the essentials). */
export const VM_PACKAGES: Record<string, string> = {
  systemd: 'init, and logind, through which nuo agent reboots the node',
  'systemd-sysv': '/sbin/init and `systemctl reboot`',
  dbus: 'the system bus the agent talks to logind on',
  polkitd: "logind asks it whether a caller that is not root (nuo's agent) may reboot",
  udev: 'the config disk by its label; kernel modules loaded as devices appear',
  'linux-image-amd64': 'the kernel and its modules, booted with -kernel',
  'initramfs-tools': 'the initrd that loads the virtio disk drivers',
  kmod: 'modprobe of overlay and br_netfilter',
  iproute2: 'the CNI plugins and the kubelet configure interfaces',
  iptables: "kube-proxy's Service rules and the CNI bridge's masquerade",
  conntrack: 'kube-proxy clears stale connections of changed Services',
  runc: "containerd's OCI runtime",
  'containernetworking-plugins': "the pods' bridge network (bridge, host-local, loopback, portmap)",
  'openssh-server': 'the harness runs commands in the VM with a key it mints',
  e2fsprogs: 'fsck of the root file system at boot',
  procps: 'ps, pgrep and sysctl for commands the tests run',
};
