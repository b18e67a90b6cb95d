import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { reapAbandonedClusters } from '../../src/sim/cluster/reaper.ts';

const parent = await mkdtemp(join(tmpdir(), 'nuo-reaper-test-'));
after(() => rm(parent, { recursive: true, force: true }));

async function fakeCluster(name: string, owner: number): Promise<{ dir: string; exited: Promise<unknown> }> {
  const dir = join(parent, name);
  await mkdir(dir);
  // A stand-in component whose arguments name its cluster directory, as the real ones do.
  const child = spawn('sh', ['-c', 'sleep 600', dir], { stdio: 'ignore' });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  await writeFile(join(dir, 'owner'), String(owner));
  await writeFile(join(dir, 'pids'), `${child.pid}\n`);
  return { dir, exited };
}

test("a cluster whose owner died is killed and removed; a live owner's cluster is kept", async () => {
  const deadOwner = spawn('true');
  await new Promise((resolve) => deadOwner.on('exit', resolve));
  const abandoned = await fakeCluster('nuo-cluster-abandoned', deadOwner.pid ?? 0);
  const live = await fakeCluster('nuo-cluster-live', process.pid);

  assert.equal(await reapAbandonedClusters(parent, 'nuo-cluster-'), 1);
  await abandoned.exited;
  assert.equal(existsSync(abandoned.dir), false);
  assert.equal(existsSync(live.dir), true);

  // The live cluster's process must still be running: clean it up ourselves.
  await writeFile(join(live.dir, 'owner'), String(deadOwner.pid));
  assert.equal(await reapAbandonedClusters(parent, 'nuo-cluster-'), 1);
  await live.exited;
});

test('a recorded pid that now belongs to an unrelated process is left alone', async () => {
  const dir = join(parent, 'nuo-cluster-reused');
  await mkdir(dir);
  const unrelated = spawn('sleep', ['600'], { stdio: 'ignore' });
  const exited = new Promise((resolve) => unrelated.on('exit', resolve));
  await writeFile(join(dir, 'owner'), '999999999');
  await writeFile(join(dir, 'pids'), `${unrelated.pid}\n`);
  assert.equal(await reapAbandonedClusters(parent, 'nuo-cluster-'), 1);
  assert.equal(unrelated.exitCode, null, 'the unrelated process is still running');
  unrelated.kill();
  await exited;
});
