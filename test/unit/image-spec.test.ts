import assert from 'node:assert/strict';
import { test } from 'node:test';
import { containerSpec, type RuntimeSpec, runcRefusal } from '../../tools/image/container.ts';
import { cacheKey, compressedBytes, evictions, imageIndex, manifestFor } from '../../tools/image/layout.ts';
import { imagePath } from '../../tools/image/runtime.ts';
import {
  imageConfig,
  layerOf,
  nodeArchitecture,
  ociArchitecture,
  ref,
  sourceOf,
  umociConfigFlags,
} from '../../tools/image/spec.ts';

const sha = 'f'.repeat(40);

test('files go to the layer that changes as often as they do', () => {
  const table: Array<[string, string]> = [
    ['/usr/local/bin/node', 'runtime'],
    ['/lib/x86_64-linux-gnu/libc.so.6', 'runtime'],
    ['/etc/passwd', 'runtime'],
    ['/tmp', 'runtime'],
    ['/app/node_modules', 'dependencies'],
    ['/app/node_modules/yaml/package.json', 'dependencies'],
    ['/app/package.json', 'nuo'],
    ['/app/dist/src/cli/run.js', 'nuo'],
    ['/application', 'runtime'],
  ];
  for (const [path, layer] of table) assert.equal(layerOf(path), layer, path);
});

test('the image is named as deploy/ runs it, tagged with the version; its source is its repository', () => {
  assert.equal(ref('0.1.0'), 'ghcr.io/nuo-dev/nuo:0.1.0');
  assert.equal(sourceOf('ghcr.io/nuo-dev/nuo'), 'https://github.com/nuo-dev/nuo');
  assert.throws(() => sourceOf('quay.io/nuo/nuo'), /not a ghcr.io\/OWNER\/NAME image/);
});

test('the configuration: user 65532, the compiled entry on Node, OCI labels with version and revision', () => {
  const config = imageConfig({ version: '0.1.0', revision: sha, created: '2026-11-25T09:00:00Z' });
  assert.equal(config.user, '65532:65532');
  assert.deepEqual(config.entrypoint, ['/usr/local/bin/node', '/app/dist/src/cli/run.js']);
  assert.equal(config.workingDir, '/app');
  assert.deepEqual(config.labels, {
    'org.opencontainers.image.title': 'nuo',
    'org.opencontainers.image.description': 'Kubernetes node update operator and agent',
    'org.opencontainers.image.licenses': 'Apache-2.0',
    'org.opencontainers.image.source': 'https://github.com/nuo-dev/nuo',
    'org.opencontainers.image.version': '0.1.0',
    'org.opencontainers.image.revision': sha,
    'org.opencontainers.image.created': '2026-11-25T09:00:00Z',
  });
});

test('umoci config flags clear what the image had, then set every field, one flag per argument', () => {
  const config = imageConfig({ version: '0.1.0', revision: sha, created: '2026-11-25T09:00:00Z' });
  const flags = umociConfigFlags(config, '2026-11-25T09:00:00Z', 'amd64');
  assert.deepEqual(flags.slice(0, 4), [
    '--clear=config.labels',
    '--clear=config.env',
    '--clear=config.entrypoint',
    '--clear=config.cmd',
  ]);
  assert.deepEqual(
    flags.filter((f) => f.startsWith('--config.entrypoint=')),
    ['--config.entrypoint=/usr/local/bin/node', '--config.entrypoint=/app/dist/src/cli/run.js'],
  );
  assert.ok(flags.includes('--config.user=65532:65532'));
  assert.ok(flags.includes(`--config.label=org.opencontainers.image.revision=${sha}`));
  assert.ok(flags.includes('--created=2026-11-25T09:00:00Z'));
  assert.ok(flags.includes('--architecture=amd64'));
  assert.equal(ociArchitecture('x64'), 'amd64');
  assert.equal(ociArchitecture('arm64'), 'arm64');
  assert.throws(() => ociArchitecture('mips'), /no OCI architecture for Node's "mips"/);
  assert.equal(nodeArchitecture('amd64'), 'x64');
  assert.equal(nodeArchitecture('arm64'), 'arm64');
  assert.throws(() => nodeArchitecture('mips'), /no Node architecture for OCI's "mips"/);
});

test('the cache key follows files, configuration and architecture, not the build time', () => {
  const at = (created: string, revision = sha) => imageConfig({ version: '0.1.0', revision, created });
  const key = cacheKey('digest-1', at('2026-01-01T00:00:00Z'), 'amd64');
  assert.equal(cacheKey('digest-1', at('2026-02-02T00:00:00Z'), 'amd64'), key, 'built later');
  assert.notEqual(cacheKey('digest-2', at('2026-01-01T00:00:00Z'), 'amd64'), key, 'other files');
  assert.notEqual(cacheKey('digest-1', at('2026-01-01T00:00:00Z', 'e'.repeat(40)), 'amd64'), key, 'revision');
  assert.notEqual(cacheKey('digest-1', at('2026-01-01T00:00:00Z'), 'arm64'), key, 'architecture');
});

test('the cache keeps the most recently used images, the current one always', () => {
  const entries = [
    { name: 'a', usedMs: 1 },
    { name: 'b', usedMs: 4 },
    { name: 'c', usedMs: 3 },
    { name: 'd', usedMs: 2 },
  ];
  assert.deepEqual(evictions(entries, 3, 'a'), ['d']);
  assert.deepEqual(evictions(entries, 1, 'b'), ['c', 'd', 'a']);
  assert.deepEqual(evictions(entries, 5, 'x'), []);
});

test("a layout's tagged manifest and its compressed size", () => {
  const tagged = (tag: string, digest: string) => ({
    mediaType: 'application/vnd.oci.image.manifest.v1+json',
    digest,
    size: 700,
    annotations: { 'org.opencontainers.image.ref.name': tag },
  });
  const index = { manifests: [tagged('0.1.0', 'sha256:1'), tagged('0.0.9', 'sha256:0')] };
  assert.equal(manifestFor(index, '0.1.0').digest, 'sha256:1');
  assert.throws(() => manifestFor(index, 'latest'), /0 manifests tagged "latest"/);
  const layer = (size: number) => ({ mediaType: 'layer', digest: 'sha256:x', size });
  assert.equal(
    compressedBytes(manifestFor(index, '0.1.0'), { config: layer(1000), layers: [layer(10), layer(20)] }),
    1730,
  );
});

test('a container as deploy/ runs one: no capabilities, read-only root, the host network when asked', () => {
  const base: RuntimeSpec = {
    ociVersion: '1.0.2',
    process: {
      terminal: true,
      user: { uid: 65532, gid: 65532 },
      args: ['/usr/local/bin/node', '/app/dist/src/cli/run.js', '--help'],
      env: ['PATH=/usr/local/bin:/usr/bin:/bin'],
      capabilities: { bounding: ['CAP_KILL'] },
      cwd: '/app',
    },
    root: { path: 'rootfs' },
    mounts: [{ destination: '/proc', type: 'proc', source: 'proc' }],
    linux: {
      namespaces: [{ type: 'pid' }, { type: 'network' }, { type: 'mount' }],
      maskedPaths: ['/proc/kcore'],
    },
  };
  const spec = containerSpec(base, {
    args: ['/usr/local/bin/node', '/app/dist/src/cli/run.js', '--version'],
    rootfs: '/tmp/x/rootfs',
    hostNetwork: true,
    binds: [{ source: '/tmp/kubeconfig', destination: '/etc/nuo/kubeconfig' }],
    env: ['NODE_NAME=node-0'],
  });
  assert.equal(spec.process.terminal, false);
  assert.deepEqual(spec.process.args.at(-1), '--version');
  assert.deepEqual(spec.process.user, { uid: 65532, gid: 65532 });
  assert.equal(spec.process.cwd, '/app', 'the rest of process kept');
  assert.deepEqual(spec.process.env, ['PATH=/usr/local/bin:/usr/bin:/bin', 'NODE_NAME=node-0']);
  assert.deepEqual(Object.values(spec.process.capabilities ?? {}).flat(), []);
  assert.equal(spec.process.noNewPrivileges, true);
  assert.deepEqual(spec.root, { path: '/tmp/x/rootfs', readonly: true });
  assert.deepEqual(
    spec.linux?.namespaces?.map((n) => n.type),
    ['pid', 'mount'],
  );
  assert.deepEqual(spec.linux?.maskedPaths, ['/proc/kcore']);
  assert.deepEqual(spec.mounts?.at(-1), {
    destination: '/etc/nuo/kubeconfig',
    type: 'bind',
    source: '/tmp/kubeconfig',
    options: ['rbind', 'ro', 'nosuid', 'nodev', 'noexec'],
  });
  const isolated = containerSpec(base, { args: ['x'], rootfs: '/r' });
  assert.deepEqual(
    isolated.linux?.namespaces?.map((n) => n.type),
    ['pid', 'network', 'mount'],
  );
});

test("runc's own refusal is told apart from the container's process failing", () => {
  const refused =
    'time="2026-11-25T09:30:00Z" level=error msg="runc run failed: unable to start container process: error during container init: error mounting \\"cgroup\\" to rootfs"';
  assert.equal(runcRefusal(`\n${refused}\n`), refused);
  assert.equal(runcRefusal('nuo agent: --node-name (or $NODE_NAME) is required\n'), undefined);
});

test("the image index: each architecture's manifest with its platform, in order; one image per architecture", () => {
  const manifest = (n: string) => ({
    mediaType: 'application/vnd.oci.image.manifest.v1+json',
    digest: `sha256:${n.repeat(64)}`,
    size: 700,
    annotations: { 'org.opencontainers.image.ref.name': '0.1.0' },
  });
  assert.deepEqual(
    imageIndex([
      { architecture: 'amd64', manifest: manifest('a') },
      { architecture: 'arm64', manifest: manifest('b') },
    ]),
    {
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.index.v1+json',
      manifests: [
        {
          mediaType: 'application/vnd.oci.image.manifest.v1+json',
          digest: `sha256:${'a'.repeat(64)}`,
          size: 700,
          platform: { os: 'linux', architecture: 'amd64' },
        },
        {
          mediaType: 'application/vnd.oci.image.manifest.v1+json',
          digest: `sha256:${'b'.repeat(64)}`,
          size: 700,
          platform: { os: 'linux', architecture: 'arm64' },
        },
      ],
    },
  );
  assert.throws(
    () =>
      imageIndex([
        { architecture: 'arm64', manifest: manifest('a') },
        { architecture: 'arm64', manifest: manifest('b') },
      ]),
    /two images of arm64/,
  );
});

test('a path the foreign loader prints, as the image sees it: its own path without the unpacked root', () => {
  const root = '/cache/image-arm64/debian-arm64-0123';
  const table: Array<[string, string]> = [
    [`${root}/lib/ld-linux-aarch64.so.1`, '/lib/ld-linux-aarch64.so.1'],
    ['/lib/aarch64-linux-gnu/libc.so.6', '/lib/aarch64-linux-gnu/libc.so.6'],
    [`${root}-other/lib/libc.so.6`, `${root}-other/lib/libc.so.6`],
  ];
  for (const [printed, path] of table) assert.equal(imagePath(printed, root), path, printed);
});
