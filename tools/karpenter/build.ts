/**
 * Builds Karpenter with its KWOK cloud provider (`sigs.k8s.io/karpenter/kwok`, unmodified, at the version
 * the go.mod beside this file pins) into a cache outside the repository, beside the CRDs of that version
 * (NodePool, NodeClaim, NodeOverlay, CapacityBuffer and KWOKNodeClass, as its chart installs them), keyed
 * by the module's files, so a second run returns at once. The testing ground runs it against the local
 * control plane: it creates Nodes for its NodeClaims, and the harness's KWOK plays their kubelets.
 *
 * Karpenter's go.mod requires a newer Go than the other tools: the go command fetches that release from
 * the Go module proxy (GOTOOLCHAIN=auto) for this build and for reading the module.
 *
 *   node tools/karpenter/build.ts          build it if it is missing, with progress
 *   node tools/karpenter/build.ts --print  print the binary's path and exit (no build)
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, readFile, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { buildCommand, cacheRoot, type GoTarget, goBuild, requiredVersion, withLock } from '../go-build.ts';

const here = dirname(fileURLToPath(import.meta.url));
const MODULE = 'sigs.k8s.io/karpenter';

/** The CRDs of the KWOK provider's chart and its node class, as paths inside Karpenter's module. */
export const KARPENTER_CRDS = [
  'kwok/charts/crds/karpenter.sh_nodepools.yaml',
  'kwok/charts/crds/karpenter.sh_nodeclaims.yaml',
  'kwok/charts/crds/karpenter.sh_nodeoverlays.yaml',
  'kwok/charts/crds/autoscaling.x-k8s.io_capacitybuffers.yaml',
  'kwok/apis/crds/karpenter.kwok.sh_kwoknodeclasses.yaml',
] as const;

export interface KarpenterBuild {
  /** Karpenter's controller with the KWOK cloud provider. */
  binary: string;
  /** Its CRDs' files, to apply before it starts. */
  crds: string[];
  version: string;
}

async function plan(): Promise<{ build: KarpenterBuild; target: GoTarget; dir: string }> {
  const version = await requiredVersion(here, MODULE);
  const target: GoTarget = {
    name: 'karpenter-kwok',
    moduleDir: here,
    pkg: `${MODULE}/kwok`,
    ldflags: `-s -w -X ${MODULE}/pkg/operator.Version=${version}`,
    toolchain: 'auto',
  };
  const hash = createHash('sha256');
  for (const file of ['go.mod', 'go.sum', 'tools.go']) hash.update(await readFile(join(here, file)));
  hash.update(JSON.stringify([target.pkg, target.ldflags]));
  const dir = join(cacheRoot(), 'karpenter', `karpenter-${version}_${hash.digest('hex').slice(0, 12)}`);
  const build = {
    binary: join(dir, 'bin', 'karpenter-kwok'),
    crds: KARPENTER_CRDS.map((path) => join(dir, 'crds', basename(path))),
    version,
  };
  return { build, target, dir };
}

/** Where the go command keeps Karpenter's module (downloaded through the proxy, checked against go.sum). */
async function moduleDir(): Promise<string> {
  const { stdout } = await promisify(execFile)('go', ['mod', 'download', '-json', MODULE], {
    cwd: here,
    env: { ...process.env, GOFLAGS: '-mod=readonly', GOTOOLCHAIN: 'auto' },
  }).catch((err: Error & { stdout?: string }) => {
    throw new Error(`go mod download ${MODULE} (in ${here}): ${err.message}\n${err.stdout ?? ''}`);
  });
  const { Dir, Error: error } = JSON.parse(stdout) as { Dir?: string; Error?: string };
  if (!Dir) throw new Error(`go mod download ${MODULE}: ${error ?? 'no directory'}`);
  return Dir;
}

/** Returns Karpenter and its CRDs, building what is missing. Throws (never skips) if the build fails. */
export async function ensureKarpenter(
  log: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Promise<KarpenterBuild> {
  const { build, target, dir } = await plan();
  const ready = () => [build.binary, ...build.crds].every((f) => existsSync(f));
  if (ready()) return build;
  await mkdir(join(dir, 'bin'), { recursive: true });
  await withLock(
    dir,
    async () => {
      if (ready()) return;
      // The CRDs are copied whole into a directory of their own first, so a half-done copy is never read.
      const source = await moduleDir();
      const staging = join(dir, `crds-${process.pid}`);
      await mkdir(staging, { recursive: true });
      for (const path of KARPENTER_CRDS) await copyFile(join(source, path), join(staging, basename(path)));
      await rm(join(dir, 'crds'), { recursive: true, force: true });
      await rename(staging, join(dir, 'crds'));
      if (!existsSync(build.binary)) {
        log(`building Karpenter ${build.version} with its KWOK provider into ${dir}`);
        await goBuild(target, build.binary, log);
      }
    },
    log,
  );
  return build;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await buildCommand({
    print: async () => (await plan()).build.binary,
    build: async () => {
      const built = await ensureKarpenter();
      return `Karpenter ${built.version} (KWOK provider) in ${built.binary}, its CRDs in ${dirname(built.crds[0] ?? '')}`;
    },
  });
}
