/**
 * Publishes a release of this checkout to an OCI registry: the multi-architecture image index (skopeo),
 * each architecture's SBOM attested on its manifest and the index signed with every manifest in it
 * (cosign), then the chart pushed as an OCI artifact (`helm push`) and signed. The release workflow and
 * test/integration/release.test.ts both run it.
 *
 *   npm run release:publish -- --registry ghcr.io/OWNER --key env://COSIGN_PRIVATE_KEY [--tlog]
 *   npm run release:publish -- --registry 127.0.0.1:5000/nuo-dev --key cosign.key --plain-http
 *
 * The image goes to REGISTRY/nuo:VERSION, the chart to oci://REGISTRY/charts (REGISTRY/charts/nuo:VERSION).
 * The key is cosign's (a file, or env://VAR holding it; its password in $COSIGN_PASSWORD). `--tlog` also
 * records the signatures in Sigstore's public transparency log; without it they are only in the registry.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ensureCosign } from '../cosign/build.ts';
import { ensureHelm } from '../helm/build.ts';
import { CHART_DIR } from '../helm/run.ts';
import { buildImageIndex } from '../image/multi-arch.ts';
import { generateSbom } from './sbom.ts';

export interface PublishOptions {
  /** Where the image and the chart go: host[:port]/path, e.g. ghcr.io/nuo-dev. */
  registry: string;
  /** cosign's key reference: a file or env://VAR. */
  key: string;
  /** A registry without TLS (a loopback test registry). */
  plainHttp?: boolean;
  /** Record the signatures in Sigstore's transparency log too. */
  tlog?: boolean;
  /** The tools' environment: COSIGN_PASSWORD, registry credentials, HELM_* directories. */
  env?: NodeJS.ProcessEnv;
  log?: (line: string) => void;
}

export interface Published {
  image: { repository: string; tag: string; digest: string; platforms: Record<string, string> };
  chart: { repository: string; version: string; digest: string };
}

/** cosign's flags for where it signs: no transparency log unless asked, HTTP for a plain registry. */
export function cosignFlags(o: { plainHttp?: boolean; tlog?: boolean }): string[] {
  return [
    ...(o.tlog ? [] : ['--tlog-upload=false', '--use-signing-config=false']),
    ...(o.plainHttp ? ['--allow-http-registry', '--allow-insecure-registry'] : []),
  ];
}

/** The digest `helm push` reports for the chart it pushed. */
export function pushedDigest(output: string): string {
  const digest = output.match(/^Digest: (sha256:[0-9a-f]{64})$/m)?.[1];
  if (!digest) throw new Error(`helm push printed no digest:\n${output}`);
  return digest;
}

export async function publish(o: PublishOptions): Promise<Published> {
  const log = o.log ?? (() => {});
  const env = o.env ?? process.env;
  const run = (command: string, args: string[]): string => {
    log(`$ ${[command.split('/').at(-1), ...args].join(' ')}`);
    const r = spawnSync(command, args, { encoding: 'utf8', env, timeout: 600_000 });
    if (r.status !== 0)
      throw new Error(
        `${command} ${args.join(' ')} failed (${r.error?.message ?? `exit ${r.status}`}):\n${r.stdout}${r.stderr}`,
      );
    return `${r.stdout}${r.stderr}`;
  };
  const [cosign, { path: helm }] = await Promise.all([ensureCosign(log), ensureHelm(log)]);
  const signFlags = ['--key', o.key, ...cosignFlags(o), '--yes'];

  const index = buildImageIndex(log);
  const repository = `${o.registry}/nuo`;
  const tls = o.plainHttp ? ['--dest-tls-verify=false'] : [];
  run('skopeo', [
    'copy',
    '--all',
    ...tls,
    `oci:${index.layout}:${index.tag}`,
    `docker://${repository}:${index.tag}`,
  ]);
  const platforms: Record<string, string> = {};
  const work = mkdtempSync(join(tmpdir(), 'nuo-publish-'));
  try {
    for (const image of index.images) {
      platforms[image.architecture] = image.digest;
      const sbom = join(work, `sbom-${image.architecture}.cdx.json`);
      writeFileSync(sbom, `${JSON.stringify(generateSbom(image.architecture), null, 2)}\n`);
      run(cosign, [
        'attest',
        ...signFlags,
        '--type',
        'cyclonedx',
        '--predicate',
        sbom,
        `${repository}@${image.digest}`,
      ]);
    }
    run(cosign, ['sign', ...signFlags, '--recursive', `${repository}@${index.digest}`]);

    const packaged = run(helm, ['package', CHART_DIR, '--destination', work]);
    const archive = packaged.match(/saved it to: (\S+\.tgz)/)?.[1];
    if (!archive) throw new Error(`helm package printed no archive:\n${packaged}`);
    const pushed = run(helm, [
      'push',
      archive,
      `oci://${o.registry}/charts`,
      ...(o.plainHttp ? ['--plain-http'] : []),
    ]);
    const chartDigest = pushedDigest(pushed);
    const chartRepository = `${o.registry}/charts/nuo`;
    run(cosign, ['sign', ...signFlags, `${chartRepository}@${chartDigest}`]);
    return {
      image: { repository, tag: index.tag, digest: index.digest, platforms },
      chart: { repository: chartRepository, version: index.tag, digest: chartDigest },
    };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      registry: { type: 'string' },
      key: { type: 'string' },
      'plain-http': { type: 'boolean', default: false },
      tlog: { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (!values.registry || !values.key) {
    process.stderr.write('usage: publish.ts --registry HOST/PATH --key KEY [--plain-http] [--tlog]\n');
    process.exit(2);
  }
  const published = await publish({
    registry: values.registry,
    key: values.key,
    plainHttp: values['plain-http'],
    tlog: values.tlog,
    log: (line) => process.stderr.write(`${line}\n`),
  });
  process.stdout.write(`${JSON.stringify(published, null, 2)}\n`);
}
