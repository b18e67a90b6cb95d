import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { OperatorMetrics } from '../../src/operator/metrics.ts';
import {
  buildInfo,
  chooseRevision,
  describeGit,
  formatVersion,
  type GitState,
} from '../../src/util/build-info.ts';

const sha = 'a'.repeat(40);

test('a git state names its commit, marked dirty when tracked files changed; anything else is unknown', () => {
  const table: Array<[GitState | undefined, string]> = [
    [{ head: sha, dirty: false }, sha],
    [{ head: sha, dirty: true }, `${sha}-dirty`],
    [{ head: 'b'.repeat(64), dirty: false }, 'b'.repeat(64)],
    [{ head: 'HEAD', dirty: false }, 'unknown'],
    [{ head: '', dirty: false }, 'unknown'],
    [undefined, 'unknown'],
  ];
  for (const [git, want] of table) assert.equal(describeGit(git), want, JSON.stringify(git));
});

test('the compiled output keeps the revision recorded at build time; a checkout asks git', () => {
  const git = { head: sha, dirty: false };
  const table: Array<[Parameters<typeof chooseRevision>[0], string]> = [
    [{ compiled: true, recorded: 'c'.repeat(40), git }, 'c'.repeat(40)],
    [{ compiled: true, recorded: ' ', git }, 'unknown'],
    [{ compiled: true, git }, 'unknown'],
    [{ compiled: false, recorded: 'c'.repeat(40), git }, sha],
    [{ compiled: false }, 'unknown'],
  ];
  for (const [input, want] of table) assert.equal(chooseRevision(input), want, JSON.stringify(input));
});

test('nuo --version names the version, the revision and Node', () => {
  assert.equal(
    formatVersion({ version: '0.1.0', revision: sha, node: '24.21.0' }),
    `nuo 0.1.0 (revision ${sha}, Node 24.21.0)`,
  );
});

test("from this checkout, the build is the package's version at git's HEAD", () => {
  const root = new URL('../../', import.meta.url);
  const head = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
  const info = buildInfo();
  assert.match(info.revision, new RegExp(`^${head}(-dirty)?$`));
  assert.equal(info.node, process.versions.node);
  assert.match(info.version, /^\d+\.\d+\.\d+/);
});

test('the operator exports its build as nuo_build_info = 1', async () => {
  const metrics = new OperatorMetrics({ version: '0.1.0', revision: sha, node: '24.21.0' });
  const text = await metrics.registry.metrics();
  assert.match(text, /^# TYPE nuo_build_info gauge$/m);
  assert.match(
    text,
    new RegExp(`^nuo_build_info\\{version="0.1.0",revision="${sha}",node="24.21.0"\\} 1$`, 'm'),
  );
});
