/**
 * Builds the local control plane's binaries from the Go modules beside this file into a cache outside
 * the repository, keyed by the pinned versions and the modules' go.sum, so a second run returns at once.
 *
 *   node tools/cluster/build.ts          build whatever is missing, with progress
 *   node tools/cluster/build.ts --print  print the cache directory and exit (no build)
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildCommand, buildMissing, cacheRoot, type GoTarget, requiredVersion } from '../go-build.ts';

const here = dirname(fileURLToPath(import.meta.url));

export const BINARY_NAMES = [
  'etcd',
  'kube-apiserver',
  'kube-controller-manager',
  'kube-scheduler',
  'kubectl',
  'kwok',
  'kwok-stages',
] as const;
export type BinaryName = (typeof BINARY_NAMES)[number];

export interface ClusterBinaries {
  dir: string;
  versions: { kubernetes: string; etcd: string; kwok: string };
  path: Record<BinaryName, string>;
}

interface Target extends GoTarget {
  name: BinaryName;
}

async function plan(): Promise<{ binaries: ClusterBinaries; targets: Target[] }> {
  const k8sDir = here;
  const etcdDir = join(here, 'etcd');
  const kwokDir = join(here, 'kwok');
  const versions = {
    kubernetes: await requiredVersion(k8sDir, 'k8s.io/kubernetes'),
    etcd: await requiredVersion(etcdDir, 'go.etcd.io/etcd/server/v3'),
    kwok: await requiredVersion(kwokDir, 'sigs.k8s.io/kwok'),
  };
  const [major, minor] = versions.kubernetes.replace(/^v/, '').split('.');
  // Without these the binaries report v0.0.0-master, which kubectl's version skew check and KWOK dislike.
  const k8sLdflags = [
    '-s -w',
    ...['k8s.io/component-base/version', 'k8s.io/client-go/pkg/version'].flatMap((pkg) => [
      `-X ${pkg}.gitVersion=${versions.kubernetes}`,
      `-X ${pkg}.gitMajor=${major}`,
      `-X ${pkg}.gitMinor=${minor}`,
      `-X ${pkg}.gitTreeState=clean`,
    ]),
  ].join(' ');
  const targets: Target[] = [
    { name: 'etcd', moduleDir: etcdDir, pkg: 'go.etcd.io/etcd/server/v3', ldflags: '-s -w' },
    ...(['kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kubectl'] as const).map((name) => ({
      name,
      moduleDir: k8sDir,
      pkg: `k8s.io/kubernetes/cmd/${name}`,
      ldflags: k8sLdflags,
    })),
    { name: 'kwok', moduleDir: kwokDir, pkg: 'sigs.k8s.io/kwok/cmd/kwok', ldflags: '-s -w' },
    { name: 'kwok-stages', moduleDir: kwokDir, pkg: 'nuo.dev/tools/cluster/kwok/stages', ldflags: '-s -w' },
  ];
  const hash = createHash('sha256');
  for (const file of [
    'go.mod',
    'go.sum',
    'etcd/go.mod',
    'etcd/go.sum',
    'kwok/go.mod',
    'kwok/go.sum',
    'kwok/stages/main.go',
    'kwok/stages/pod-complete.yaml',
    'kwok/stages/job-fail.yaml',
  ]) {
    hash.update(await readFile(join(here, file)));
  }
  hash.update(JSON.stringify(targets.map((t) => [t.name, t.pkg, t.ldflags])));
  const key = `k8s-${versions.kubernetes}_etcd-${versions.etcd}_kwok-${versions.kwok}_${hash.digest('hex').slice(0, 12)}`;
  const dir = join(cacheRoot(), 'cluster', key);
  const path = Object.fromEntries(BINARY_NAMES.map((n) => [n, join(dir, 'bin', n)])) as Record<
    BinaryName,
    string
  >;
  return { binaries: { dir, versions, path }, targets };
}

/** Returns the binaries, building any that are missing. Throws (never skips) if a build fails. */
export async function ensureClusterBinaries(
  log: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Promise<ClusterBinaries> {
  const { binaries, targets } = await plan();
  await buildMissing(
    binaries.dir,
    targets,
    (t) => binaries.path[t.name],
    `Kubernetes ${binaries.versions.kubernetes}, etcd ${binaries.versions.etcd}, KWOK ${binaries.versions.kwok}`,
    log,
  );
  return binaries;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await buildCommand({
    print: async () => (await plan()).binaries.dir,
    build: async () => `cluster binaries in ${(await ensureClusterBinaries()).dir}/bin`,
  });
}
