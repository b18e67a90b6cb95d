/**
 * The Go-built programs of the VM node image, built into a cache outside the repository keyed by their
 * modules' pinned versions and go.sum: the kubelet and kube-proxy (from the control plane's
 * k8s.io/kubernetes release), containerd 2 with its runc shim and ctr, and the sandbox ("pause") program.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildMissing, cacheRoot, type GoTarget, requiredVersion } from '../go-build.ts';

const here = dirname(fileURLToPath(import.meta.url));

export const VM_BINARY_NAMES = [
  'kubelet',
  'kube-proxy',
  'containerd',
  'containerd-shim-runc-v2',
  'ctr',
  'pause',
] as const;
export type VmBinaryName = (typeof VM_BINARY_NAMES)[number];

export interface VmBinaries {
  dir: string;
  versions: { kubernetes: string; containerd: string };
  path: Record<VmBinaryName, string>;
  /** The hash of every input, which the image's cache key includes. */
  key: string;
}

interface Target extends GoTarget {
  name: VmBinaryName;
}

/** The same -X stamps tools/cluster/build.ts gives the control plane: the kubelet reports this version. */
function kubernetesLdflags(version: string): string {
  const [major, minor] = version.replace(/^v/, '').split('.');
  return [
    '-s -w',
    ...['k8s.io/component-base/version', 'k8s.io/client-go/pkg/version'].flatMap((pkg) => [
      `-X ${pkg}.gitVersion=${version}`,
      `-X ${pkg}.gitMajor=${major}`,
      `-X ${pkg}.gitMinor=${minor}`,
      `-X ${pkg}.gitTreeState=clean`,
    ]),
  ].join(' ');
}

async function plan(): Promise<{ binaries: VmBinaries; targets: Target[] }> {
  const kubeletDir = join(here, 'kubelet');
  const containerdDir = join(here, 'containerd');
  const pauseDir = join(here, 'pause');
  const kubernetes = await requiredVersion(kubeletDir, 'k8s.io/kubernetes');
  const controlPlane = await requiredVersion(join(here, '..', 'cluster'), 'k8s.io/kubernetes');
  if (kubernetes !== controlPlane) {
    throw new Error(
      `tools/vm/kubelet/go.mod requires k8s.io/kubernetes ${kubernetes} but the control plane (tools/cluster/go.mod) runs ${controlPlane}: pin both to one release`,
    );
  }
  const containerd = await requiredVersion(containerdDir, 'github.com/containerd/containerd/v2');
  const k8s = kubernetesLdflags(kubernetes);
  // containerd's own release build stamps these; `containerd --version` and the CRI's version report them.
  const ctrd = `-s -w -X github.com/containerd/containerd/v2/version.Version=${containerd} -X github.com/containerd/containerd/v2/version.Package=github.com/containerd/containerd/v2`;
  const targets: Target[] = [
    { name: 'kubelet', moduleDir: kubeletDir, pkg: 'k8s.io/kubernetes/cmd/kubelet', ldflags: k8s },
    { name: 'kube-proxy', moduleDir: kubeletDir, pkg: 'k8s.io/kubernetes/cmd/kube-proxy', ldflags: k8s },
    ...(['containerd', 'containerd-shim-runc-v2', 'ctr'] as const).map((name) => ({
      name,
      moduleDir: containerdDir,
      pkg: `github.com/containerd/containerd/v2/cmd/${name}`,
      ldflags: ctrd,
    })),
    { name: 'pause', moduleDir: pauseDir, pkg: '.', ldflags: '-s -w' },
  ];
  const hash = createHash('sha256');
  for (const file of [
    'kubelet/go.mod',
    'kubelet/go.sum',
    'kubelet/tools.go',
    'containerd/go.mod',
    'containerd/go.sum',
    'containerd/tools.go',
    'pause/go.mod',
    'pause/main.go',
  ]) {
    hash.update(await readFile(join(here, file)));
  }
  hash.update(JSON.stringify(targets.map((t) => [t.name, t.pkg, t.ldflags])));
  const key = hash.digest('hex').slice(0, 12);
  const dir = join(cacheRoot(), 'vm-bin', `k8s-${kubernetes}_containerd-${containerd}_${key}`);
  const path = Object.fromEntries(VM_BINARY_NAMES.map((n) => [n, join(dir, 'bin', n)])) as Record<
    VmBinaryName,
    string
  >;
  return { binaries: { dir, versions: { kubernetes, containerd }, path, key }, targets };
}

export async function vmBinariesDir(): Promise<string> {
  return (await plan()).binaries.dir;
}

/** Returns the binaries, building any that are missing (once, across processes). Throws if a build fails. */
export async function ensureVmBinaries(
  log: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Promise<VmBinaries> {
  const { binaries, targets } = await plan();
  await buildMissing(
    binaries.dir,
    targets,
    (t) => binaries.path[t.name],
    `Kubernetes ${binaries.versions.kubernetes}, containerd ${binaries.versions.containerd}`,
    log,
  );
  return binaries;
}
