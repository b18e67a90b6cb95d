/**
 * The SBOM of one architecture's image, CycloneDX JSON: npm's own (`npm sbom`, from the lock file: the
 * production packages the image's /app/node_modules holds), its subject made the image, with the runtime
 * beside them: Node (the npm package its binary comes from) and the Debian packages of nsenter and the
 * libraries. `cosign attest --type cyclonedx` attaches it to the image's manifest.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { DEBIAN_PACKAGES, debianVersions, nodePackage } from '../image/runtime.ts';
import { IMAGE_NAME } from '../image/spec.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));

export interface CycloneDx {
  bomFormat: 'CycloneDX';
  specVersion: string;
  metadata: { component?: Record<string, unknown>; [key: string]: unknown };
  components: Record<string, unknown>[];
  [key: string]: unknown;
}

export interface ImageSubject {
  version: string;
  architecture: string;
  nodeVersion: string;
  /** Debian package → version, of the image's architecture. */
  debian: Record<string, string>;
}

/**
 * npm's SBOM of the production packages made the image's: the image as its subject (a container, named
 * and versioned as the registry names it), Node and the Debian packages added as components.
 */
export function imageSbom(npm: CycloneDx, s: ImageSubject): CycloneDx {
  if (npm.bomFormat !== 'CycloneDX') throw new Error('npm sbom: not a CycloneDX document');
  const node = nodePackage(s.architecture);
  const app = npm.metadata.component;
  const runtime = [
    {
      'bom-ref': `${node}@${s.nodeVersion}`,
      type: 'application',
      name: node,
      version: s.nodeVersion,
      purl: `pkg:npm/${node}@${s.nodeVersion}`,
      licenses: [{ license: { id: 'MIT' } }],
    },
    ...Object.entries(s.debian)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([name, version]) => ({
        'bom-ref': `deb:${name}@${version}`,
        type: 'library',
        name,
        version,
        purl: `pkg:deb/debian/${name}@${encodeURIComponent(version)}?arch=${s.architecture}`,
      })),
  ];
  return {
    ...npm,
    metadata: {
      ...npm.metadata,
      component: {
        'bom-ref': `${IMAGE_NAME}:${s.version}`,
        type: 'container',
        name: IMAGE_NAME,
        version: s.version,
        properties: [{ name: 'oci:architecture', value: s.architecture }],
      },
    },
    // npm's subject stays a component (its dependencies name it), named as the package is, not as the
    // directory it was generated in.
    components: [...(app ? [{ ...app, name: 'nuo' }] : []), ...runtime, ...npm.components],
  };
}

/** The SBOM of the image of `architecture` of this checkout. */
export function generateSbom(architecture: string): CycloneDx {
  const npm = JSON.parse(
    execFileSync('npm', ['sbom', '--sbom-format=cyclonedx', '--omit=dev', '--package-lock-only'], {
      cwd: root,
      encoding: 'utf8',
      maxBuffer: 64 * 2 ** 20,
    }),
  ) as CycloneDx;
  const pkg = (path: string) => JSON.parse(readFileSync(`${root}/${path}`, 'utf8')) as { version: string };
  const debian = debianVersions(architecture);
  return imageSbom(npm, {
    version: pkg('package.json').version,
    architecture,
    nodeVersion: pkg('node_modules/node/package.json').version,
    debian: Object.fromEntries(DEBIAN_PACKAGES.map((name) => [name, debian[name] ?? ''])),
  });
}
