/**
 * What the container image is: its name, where its files go, its layers and its configuration. Pure: the
 * build (tools/image/build.ts), the Containerfile's test and the runtime tests all read it from here.
 */

/** The name deploy/base runs; the package version is the tag. */
export const IMAGE_NAME = 'ghcr.io/nuo-dev/nuo';
/** The uid and gid deploy/base runs the operator as (runAsUser 65532), owning nothing in the image. */
export const USER_ID = 65532;
export const APP_DIR = '/app';
export const NODE_PATH = '/usr/local/bin/node';
/** The command detector and rebooter run host commands through nsenter (deploy/variants/command). */
export const NSENTER_PATH = '/usr/bin/nsenter';
export const ENTRYPOINT = [NODE_PATH, `${APP_DIR}/dist/src/cli/run.js`] as const;

/**
 * Layers from the least to the most often changed, so a new build of nuo reuses the runtime and, when
 * the lock file did not change, the dependencies.
 */
export const LAYERS = ['runtime', 'dependencies', 'nuo'] as const;
export type Layer = (typeof LAYERS)[number];

/** The layer an image path belongs to. */
export function layerOf(path: string): Layer {
  if (path === `${APP_DIR}/node_modules` || path.startsWith(`${APP_DIR}/node_modules/`))
    return 'dependencies';
  if (path === APP_DIR || path.startsWith(`${APP_DIR}/`)) return 'nuo';
  return 'runtime';
}

export const ref = (version: string) => `${IMAGE_NAME}:${version}`;

/** The repository an image on ghcr.io/OWNER/NAME is built from: what its source label names. */
export function sourceOf(imageName: string): string {
  const m = imageName.match(/^ghcr\.io\/([^/]+)\/([^/:]+)$/);
  if (!m)
    throw new Error(`${imageName}: not a ghcr.io/OWNER/NAME image, so its source repository is unknown`);
  return `https://github.com/${m[1]}/${m[2]}`;
}

export interface ImageConfig {
  user: string;
  entrypoint: string[];
  cmd: string[];
  workingDir: string;
  env: string[];
  labels: Record<string, string>;
}

export function imageConfig(o: { version: string; revision: string; created: string }): ImageConfig {
  return {
    user: `${USER_ID}:${USER_ID}`,
    entrypoint: [...ENTRYPOINT],
    cmd: ['--help'],
    workingDir: APP_DIR,
    // PATH: where the command detector and rebooter find nsenter.
    env: ['PATH=/usr/local/bin:/usr/bin:/bin'],
    labels: {
      'org.opencontainers.image.title': 'nuo',
      'org.opencontainers.image.description': 'Kubernetes node update operator and agent',
      'org.opencontainers.image.licenses': 'Apache-2.0',
      'org.opencontainers.image.source': sourceOf(IMAGE_NAME),
      'org.opencontainers.image.version': o.version,
      'org.opencontainers.image.revision': o.revision,
      'org.opencontainers.image.created': o.created,
    },
  };
}

const OCI_ARCHITECTURES: Record<string, string> = {
  x64: 'amd64',
  arm64: 'arm64',
  ppc64: 'ppc64le',
  s390x: 's390x',
};

/** OCI's name for the architecture Node reports (`process.arch`). */
export function ociArchitecture(nodeArch: string): string {
  const name = OCI_ARCHITECTURES[nodeArch];
  if (!name) throw new Error(`no OCI architecture for Node's "${nodeArch}"`);
  return name;
}

/** Node's name (`process.arch`) for an OCI architecture. */
export function nodeArchitecture(ociArch: string): string {
  const found = Object.entries(OCI_ARCHITECTURES).find(([, oci]) => oci === ociArch);
  if (!found) throw new Error(`no Node architecture for OCI's "${ociArch}"`);
  return found[0];
}

/** The flags of `umoci config` that give an image this configuration, replacing whatever it had. */
export function umociConfigFlags(config: ImageConfig, created: string, architecture: string): string[] {
  return [
    ...['config.labels', 'config.env', 'config.entrypoint', 'config.cmd'].map((c) => `--clear=${c}`),
    `--config.user=${config.user}`,
    `--config.workingdir=${config.workingDir}`,
    ...config.entrypoint.map((a) => `--config.entrypoint=${a}`),
    ...config.cmd.map((a) => `--config.cmd=${a}`),
    ...config.env.map((e) => `--config.env=${e}`),
    ...Object.entries(config.labels).map(([k, v]) => `--config.label=${k}=${v}`),
    `--created=${created}`,
    '--os=linux',
    `--architecture=${architecture}`,
  ];
}
