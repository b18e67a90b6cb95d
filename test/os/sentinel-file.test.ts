/**
 * The sentinel-file detector against real files in a temp dir playing the host's root.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmod, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { resolveInHostRoot, SentinelFileDetector } from '../../src/agent/detect/sentinel-file.ts';
import { type Detection, Need } from '../../src/agent/os.ts';
import { deferrals } from './bus.ts';

async function hostRoot(t: Parameters<typeof deferrals>[0]): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'nuo-host-'));
  deferrals(t)(async () => {
    await chmod(join(root, 'var', 'run'), 0o755).catch(() => {});
    await rm(root, { recursive: true, force: true });
  });
  await chmod(root, 0o755);
  return root;
}

test('present → needed, absent → not needed', async (t) => {
  const root = await hostRoot(t);
  await mkdir(join(root, 'var', 'run'), { recursive: true });
  const detector = new SentinelFileDetector({ hostRoot: root });
  assert.equal(detector.path, '/var/run/reboot-required');

  const absent = await detector.check();
  assert.equal(absent.need, Need.notNeeded, absent.reason);
  assert.match(absent.reason, /\/var\/run\/reboot-required .*does not exist/);

  await writeFile(join(root, 'var', 'run', 'reboot-required'), '*** System restart required ***\n');
  const present = await detector.check();
  assert.equal(present.need, Need.needed);
  assert.match(present.reason, /\/var\/run\/reboot-required .*exists/);
});

test('an absolute symlink (/var/run -> /run) is followed inside the host root, not the container', async (t) => {
  const root = await hostRoot(t);
  await mkdir(join(root, 'var'), { recursive: true });
  await mkdir(join(root, 'run'));
  await symlink('/run', join(root, 'var', 'run'));
  assert.equal(
    await resolveInHostRoot(root, '/var/run/reboot-required'),
    join(root, 'run', 'reboot-required'),
  );
  const detector = new SentinelFileDetector({ hostRoot: root });
  assert.equal((await detector.check()).need, Need.notNeeded);
  await writeFile(join(root, 'run', 'reboot-required'), '');
  assert.equal((await detector.check()).need, Need.needed);

  // ".." never climbs out of the root.
  await symlink('../../../../../run', join(root, 'up'));
  assert.equal(await resolveInHostRoot(root, '/up/reboot-required'), join(root, 'run', 'reboot-required'));
});

test('a missing directory (host root not mounted) or a symlink loop is unknown, not "not needed"', async (t) => {
  const root = await hostRoot(t);
  const unmounted = await new SentinelFileDetector({ hostRoot: root }).check();
  assert.equal(unmounted.need, Need.unknown);
  assert.match(unmounted.reason, /directory \/var\/run does not exist \(is the host's root mounted/);

  await mkdir(join(root, 'var'));
  await symlink('/var/run', join(root, 'var', 'run'));
  const loop = await new SentinelFileDetector({ hostRoot: root }).check();
  assert.equal(loop.need, Need.unknown);
  assert.match(loop.reason, /too many levels of symbolic links/);
});

test('an unreadable directory is unknown with the permission error', async (t) => {
  const root = await hostRoot(t);
  const dir = join(root, 'var', 'run');
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'reboot-required'), '');
  await chmod(dir, 0o000);

  let detection: Detection;
  if (process.getuid?.() === 0) {
    // Root ignores permissions, so check as "nobody" in a child process.
    const module = join(fileURLToPath(new URL('../../src/agent/detect/sentinel-file.ts', import.meta.url)));
    const script = `const { SentinelFileDetector } = await import(${JSON.stringify(module)});
      process.stdout.write(JSON.stringify(await new SentinelFileDetector({ hostRoot: ${JSON.stringify(root)} }).check()));`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      uid: 65534,
      gid: 65534,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      out += c;
    });
    child.stderr.setEncoding('utf8').on('data', (c: string) => {
      err += c;
    });
    const code = await new Promise((resolve) => child.on('close', resolve));
    assert.equal(code, 0, err);
    detection = JSON.parse(out) as Detection;
  } else {
    detection = await new SentinelFileDetector({ hostRoot: root }).check();
  }
  assert.equal(detection.need, Need.unknown);
  assert.match(detection.reason, /EACCES|permission denied/i);
});

test('configuration is validated', () => {
  assert.throws(
    () => new SentinelFileDetector({ hostRoot: 'host' }),
    /hostRoot must be an absolute path, got "host"/,
  );
  assert.throws(
    () => new SentinelFileDetector({ path: 'var/run/x' }),
    /path must be an absolute path.*"var\/run\/x"/,
  );
  assert.throws(() => new SentinelFileDetector({ path: '/' }), /path must be an absolute path to a file/);
  assert.equal(new SentinelFileDetector().hostRoot, '/host');
});
