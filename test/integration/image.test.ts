/**
 * The container image under a real OCI runtime, Debian's runc: built by tools/image/build.ts (or found in
 * the cache when nothing it is made of changed), unpacked with umoci, its contents checked, `nuo
 * --version`, `nuo agent --help` and nsenter run in it, then the agent run in it against the local control
 * plane until it labels its node. A container that runc refuses to start fails its test with runc's own
 * words; the contents are checked either way.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { CoreV1Api } from '@kubernetes/client-node';
import { Labels } from '../../src/api/keys.ts';
import { formatVersion } from '../../src/util/build-info.ts';
import { pollUntil } from '../../src/util/poll.ts';
import { checkoutRevision } from '../../tools/build-info.ts';
import { buildImage } from '../../tools/image/build.ts';
import { runcRefusal } from '../../tools/image/container.ts';
import { startAgent } from '../../tools/image/containers.ts';
import { type Descriptor, manifestFor } from '../../tools/image/layout.ts';
import { Runc, type RunResult } from '../../tools/image/runc.ts';
import { ENTRYPOINT, NSENTER_PATH, USER_ID } from '../../tools/image/spec.ts';
import { useCluster } from './support.ts';

const root = new URL('../../', import.meta.url);
const nodeVersion = (
  JSON.parse(readFileSync(new URL('node_modules/node/package.json', root), 'utf8')) as {
    version: string;
  }
).version;

const image = buildImage((line) => process.stderr.write(`# ${line}\n`));
const work = mkdtempSync(join(tmpdir(), 'nuo-image-test-'));
const unpacked = Runc.unpack(image.layout, image.tag, join(work, 'unpacked'));
const runc = new Runc();
after(() => {
  runc.close();
  rmSync(work, { recursive: true, force: true });
});
const cluster = await useCluster({ nodes: 1 });

/** Fails with runc's own words when runc refused the container, else with what the container wrote. */
function assertRan(r: RunResult, what: string) {
  const refusal = runcRefusal(r.stderr);
  assert.equal(
    refusal,
    undefined,
    `runc refused to start the container on this machine (${what}): ${refusal}`,
  );
  assert.equal(r.code, 0, `${what}: exit ${r.code}\n${r.stdout}${r.stderr}`);
}

function imageConfig(): {
  config: { User?: string; Entrypoint?: string[]; Labels?: Record<string, string> };
} {
  const blob = (d: Descriptor) => join(image.layout, 'blobs', ...d.digest.split(':'));
  const index = JSON.parse(readFileSync(join(image.layout, 'index.json'), 'utf8'));
  const manifest = JSON.parse(readFileSync(blob(manifestFor(index, image.tag)), 'utf8'));
  return JSON.parse(readFileSync(blob(manifest.config), 'utf8'));
}

/** Every path under `dir`, relative to it. */
function walk(dir: string, prefix = ''): string[] {
  return readdirSync(join(dir, prefix), { withFileTypes: true }).flatMap((e) => {
    const rel = `${prefix}/${e.name}`;
    return e.isDirectory() ? [rel, ...walk(dir, rel)] : [rel];
  });
}

describe('the container image', () => {
  test("its configuration: this checkout's version and revision, user 65532, the compiled entry on Node", () => {
    assert.equal(image.revision, checkoutRevision(), 'built from this checkout');
    const { config } = imageConfig();
    assert.equal(config.User, `${USER_ID}:${USER_ID}`);
    assert.deepEqual(config.Entrypoint, [...ENTRYPOINT]);
    const labels = config.Labels ?? {};
    assert.equal(labels['org.opencontainers.image.version'], image.version);
    assert.equal(labels['org.opencontainers.image.revision'], image.revision);
    assert.equal(labels['org.opencontainers.image.source'], 'https://github.com/nuo-dev/nuo');
    assert.match(labels['org.opencontainers.image.created'] ?? '', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.equal(unpacked.base.process.user.uid, USER_ID, "umoci's runtime config runs it as 65532");
  });

  test('built again from the same checkout, it comes from the cache: same manifest, same creation time', () => {
    const again = buildImage();
    assert.equal(again.reused, true);
    assert.equal(again.digest, image.digest);
    assert.equal(again.created, image.created);
    assert.equal(again.layout, image.layout);
  });

  test('its files: Node, nsenter and their libraries, the build, production packages; no shell, no package manager', () => {
    const files = walk(unpacked.rootfs);
    const names = new Set(files.map((f) => f.split('/').at(-1)));
    for (const tool of [
      'sh',
      'bash',
      'dash',
      'busybox',
      'npm',
      'npx',
      'corepack',
      'apt',
      'apt-get',
      'dpkg',
    ]) {
      assert.ok(!names.has(tool), `no ${tool} in the image`);
    }
    assert.ok(!existsSync(join(unpacked.rootfs, 'bin')), 'no /bin at all');
    for (const path of ['/usr/local/bin/node', NSENTER_PATH]) {
      const mode = statSync(join(unpacked.rootfs, path)).mode;
      assert.equal(mode & 0o777, 0o755, `${path} is executable`);
    }
    for (const lib of [
      '/lib64/ld-linux-x86-64.so.2',
      '/lib/x86_64-linux-gnu/libc.so.6',
      '/lib/x86_64-linux-gnu/libstdc++.so.6',
    ]) {
      assert.ok(files.includes(lib), lib);
    }
    const recorded = JSON.parse(readFileSync(join(unpacked.rootfs, 'app/dist/build-info.json'), 'utf8'));
    assert.deepEqual(recorded, { version: image.version, revision: image.revision });
    assert.ok(files.includes('/app/dist/src/cli/run.js'));
    assert.ok(!files.some((f) => f.startsWith('/app/dist/src/sim')), 'no simulation harness');
    assert.ok(
      files.includes('/app/node_modules/@kubernetes/client-node/package.json'),
      'production packages',
    );
    for (const dev of ['typescript', '@biomejs', 'node', '@types/luxon']) {
      assert.ok(!files.includes(`/app/node_modules/${dev}`), `no devDependency ${dev}`);
    }
    assert.ok(
      !files.some((f) => f.endsWith('.d.ts') || f.endsWith('.js.map')),
      'no declarations or source maps',
    );
    const entry = statSync(join(unpacked.rootfs, 'app/dist/src/cli/run.js'));
    assert.equal(entry.uid, 0, 'owned by root: the user 65532 cannot change nuo');
    assert.equal(entry.mode & 0o022, 0, 'writable by its owner only');
  });

  test('nuo --version in the container prints the version, the revision and the Node it ships', async () => {
    const r = await runc.run(unpacked, { args: [...ENTRYPOINT, '--version'] });
    assertRan(r, 'nuo --version');
    assert.equal(
      r.stdout,
      `${formatVersion({ version: image.version, revision: image.revision, node: nodeVersion })}\n`,
    );
    assert.doesNotMatch(r.stdout, /revision unknown/);
  });

  test('nuo agent --help in the container prints its usage', async () => {
    const r = await runc.run(unpacked, { args: [...ENTRYPOINT, 'agent', '--help'] });
    assertRan(r, 'nuo agent --help');
    assert.match(r.stdout, /^Usage: nuo agent \[flags\]\n/);
    assert.match(r.stdout, /--detector LIST/);
  });

  test('nsenter, which the command detector and rebooter run, starts in the container', async () => {
    const r = await runc.run(unpacked, { args: [NSENTER_PATH, '--version'] });
    assertRan(r, 'nsenter --version');
    assert.match(r.stdout, /^nsenter from util-linux/);
  });

  test('the agent in the container, on the host network, labels its node on the local control plane', async () => {
    const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
    const agent = startAgent(runc, unpacked, { work, kubeconfigPath: cluster.kubeconfigPath });
    try {
      const node = await pollUntil(
        'the agent in the container to label node-0',
        async () => {
          if (agent.process.exitCode !== null) {
            const refusal = runcRefusal(agent.output());
            if (refusal) throw new Error(`runc refused to start the container on this machine: ${refusal}`);
            throw new Error(`the container exited ${agent.process.exitCode}:\n${agent.output()}`);
          }
          const n = await core.readNode({ name: 'node-0' });
          return n.metadata?.labels?.[Labels.osId] === 'flatcar' ? n : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 250 },
      ).catch((err: Error) => {
        throw new Error(`${err.message}\ncontainer output:\n${agent.output()}`);
      });
      assert.equal(node.metadata?.labels?.[Labels.osVersion], '4152.2.0');
      const status = readFileSync(`/proc/${agent.pid()}/status`, 'utf8');
      assert.match(status, new RegExp(`^Uid:\\s+${USER_ID}\\s+${USER_ID}\\s+${USER_ID}\\s+${USER_ID}$`, 'm'));
      assert.match(status, /^CapEff:\s+0+$/m, 'no capabilities');
      assert.match(agent.output(), /agent starting: detector sentinel-file, rebooter signal/);
    } finally {
      await agent.stop();
    }
  });
});
