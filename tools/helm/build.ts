/**
 * Builds Helm from its Go module (helm.sh/helm/v3, pinned in the go.mod beside this file) into a cache
 * outside the repository, keyed by the pinned versions and the module's go.sum, so a second run returns
 * at once. A module of its own, not tools/cluster's: its go.sum changing must not rebuild the cluster.
 *
 *   node tools/helm/build.ts          build Helm if it is missing, with progress
 *   node tools/helm/build.ts --print  print the binary's path and exit (no build)
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildCommand, cacheRoot, type GoTarget, goBuild, requiredVersion, withLock } from '../go-build.ts';

const here = dirname(fileURLToPath(import.meta.url));

export interface HelmBinary {
  path: string;
  versions: { helm: string; clientGo: string };
}

/** The `-X` flags Helm's own Makefile sets: its version, and the Kubernetes version it assumes offline. */
export function helmLdflags(helm: string, clientGo: string): string {
  // client-go v0.N.x is Kubernetes 1.N: `helm template` and `helm lint` render for that version
  // (.Capabilities.KubeVersion, a chart's kubeVersion); unset, Helm assumes an old default.
  const minor = clientGo.replace(/^v/, '').split('.')[1];
  if (!minor) throw new Error(`cannot read a minor version from k8s.io/client-go ${clientGo}`);
  return [
    '-s -w',
    `-X helm.sh/helm/v3/internal/version.version=${helm}`,
    '-X helm.sh/helm/v3/internal/version.gitTreeState=clean',
    ...['helm.sh/helm/v3/pkg/lint/rules', 'helm.sh/helm/v3/pkg/chartutil'].flatMap((pkg) => [
      `-X ${pkg}.k8sVersionMajor=1`,
      `-X ${pkg}.k8sVersionMinor=${minor}`,
    ]),
  ].join(' ');
}

async function plan(): Promise<{ binary: HelmBinary; target: GoTarget; dir: string }> {
  const versions = {
    helm: await requiredVersion(here, 'helm.sh/helm/v3'),
    clientGo: await indirectVersion('k8s.io/client-go'),
  };
  const target: GoTarget = {
    name: 'helm',
    moduleDir: here,
    pkg: 'helm.sh/helm/v3/cmd/helm',
    ldflags: helmLdflags(versions.helm, versions.clientGo),
  };
  const hash = createHash('sha256');
  for (const file of ['go.mod', 'go.sum', 'tools.go']) hash.update(await readFile(join(here, file)));
  hash.update(JSON.stringify([target.pkg, target.ldflags]));
  const dir = join(cacheRoot(), 'helm', `helm-${versions.helm}_${hash.digest('hex').slice(0, 12)}`);
  return { binary: { path: join(dir, 'bin', 'helm'), versions }, target, dir };
}

/** A version the go.mod records for a module it needs indirectly (inside its require block). */
async function indirectVersion(modulePath: string): Promise<string> {
  const gomod = await readFile(join(here, 'go.mod'), 'utf8');
  const match = gomod.match(new RegExp(`^\\s+${modulePath.replaceAll('.', '\\.')} (v\\S+)`, 'm'));
  if (!match?.[1]) throw new Error(`${join(here, 'go.mod')}: no version of ${modulePath}`);
  return match[1];
}

/** Returns Helm, building it if it is missing. Throws (never skips) if the build fails. */
export async function ensureHelm(
  log: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Promise<HelmBinary> {
  const { binary, target, dir } = await plan();
  if (existsSync(binary.path)) return binary;
  await mkdir(dirname(binary.path), { recursive: true });
  await withLock(
    dir,
    async () => {
      if (existsSync(binary.path)) return;
      log(`building Helm ${binary.versions.helm} into ${dir}`);
      await goBuild(target, binary.path, log);
    },
    log,
  );
  return binary;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await buildCommand({
    print: async () => (await plan()).binary.path,
    build: async () => `helm in ${(await ensureHelm()).path}`,
  });
}
