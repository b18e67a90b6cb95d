import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { readOsRelease } from '../../src/agent/os-release.ts';

test('readOsRelease reads /etc/os-release under the host root, through an absolute symlink', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'nuo-osr-'));
  t.after(() => rm(root, { recursive: true, force: true }));
  await mkdir(join(root, 'etc'));
  await mkdir(join(root, 'usr', 'lib'), { recursive: true });
  await writeFile(
    join(root, 'usr', 'lib', 'os-release'),
    'ID=flatcar\nVERSION_ID=4081.2.0\nNAME="Flatcar Container Linux by Kinvolk"\n',
  );
  await symlink('/usr/lib/os-release', join(root, 'etc', 'os-release'));
  const os = await readOsRelease(root);
  assert.deepEqual(
    { id: os.id, versionId: os.versionId, path: os.path },
    { id: 'flatcar', versionId: '4081.2.0', path: '/etc/os-release' },
  );
  assert.equal(os.fields.NAME, 'Flatcar Container Linux by Kinvolk');
});

test('readOsRelease falls back to /usr/lib/os-release, and fails naming both paths', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'nuo-osr-'));
  t.after(() => rm(root, { recursive: true, force: true }));
  await assert.rejects(
    readOsRelease(root),
    /cannot read os-release under .*\/etc\/os-release: .*ENOENT.*\/usr\/lib\/os-release: .*ENOENT/,
  );
  await mkdir(join(root, 'usr', 'lib'), { recursive: true });
  await writeFile(join(root, 'usr', 'lib', 'os-release'), "ID='cos'\nVERSION_ID='113'\n");
  const os = await readOsRelease(root);
  assert.deepEqual(
    { id: os.id, versionId: os.versionId, path: os.path },
    { id: 'cos', versionId: '113', path: '/usr/lib/os-release' },
  );
});
