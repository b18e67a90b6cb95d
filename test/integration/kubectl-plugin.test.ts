/**
 * `kubectl nuo …` with the real kubectl: the package's kubectl-nuo entry on PATH (linked as npm links a
 * package.json "bin"), found by `kubectl plugin list`, and run as nuo on the local control plane.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { CoreV1Api } from '@kubernetes/client-node';
import { Annotations } from '../../src/api/keys.ts';
import { useCluster } from './support.ts';

const cluster = await useCluster({ nodes: 2 });
const core = cluster.kubeconfig.makeApiClient(CoreV1Api);

const binDir = mkdtempSync(join(tmpdir(), 'nuo-kubectl-plugin-'));
after(() => rmSync(binDir, { recursive: true, force: true }));
symlinkSync(fileURLToPath(new URL('../../bin/kubectl-nuo.js', import.meta.url)), join(binDir, 'kubectl-nuo'));

/**
 * kubectl with a PATH of only the plugin's directory and Node 24's (the entry's `env node`): `plugin
 * list` fails on any other plugin's warning, so none from the machine's PATH may be seen.
 */
function kubectl(args: string[], env: Record<string, string | undefined> = {}) {
  const { KUBECONFIG: _, ...rest } = process.env;
  return spawnSync(cluster.binaries.path.kubectl, args, {
    encoding: 'utf8',
    env: { ...rest, PATH: [binDir, dirname(process.execPath)].join(delimiter), ...env },
  });
}

describe('kubectl nuo', () => {
  test('kubectl plugin list finds kubectl-nuo on PATH', () => {
    const r = kubectl(['plugin', 'list']);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^${join(binDir, 'kubectl-nuo')}$`, 'm'));
  });

  test('kubectl nuo status shows every node, reading $KUBECONFIG as kubectl does', () => {
    const r = kubectl(['nuo', 'status'], { KUBECONFIG: cluster.kubeconfigPath });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^leader: \(none\)$/m);
    for (const node of ['node-0', 'node-1']) assert.match(r.stdout, new RegExp(`^${node}\\s`, 'm'), node);
  });

  test('kubectl nuo takes --kubeconfig and --context before or after its command', () => {
    const context = cluster.kubeconfig.getCurrentContext();
    for (const args of [
      ['nuo', 'status', `--kubeconfig=${cluster.kubeconfigPath}`, '--context', context],
      ['nuo', '--kubeconfig', cluster.kubeconfigPath, `--context=${context}`, 'status'],
    ]) {
      const r = kubectl(args);
      assert.equal(r.status, 0, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stdout, /^node-1\s/m, args.join(' '));
    }
    const wrong = kubectl([
      'nuo',
      '--context',
      'elsewhere',
      'status',
      `--kubeconfig=${cluster.kubeconfigPath}`,
    ]);
    assert.equal(wrong.status, 2);
    assert.match(wrong.stderr, /nuo status: context "elsewhere" not found in the kubeconfig/);
  });

  test('kubectl nuo pause and resume change the node as nuo does', async () => {
    const env = { KUBECONFIG: cluster.kubeconfigPath };
    const paused = kubectl(['nuo', 'pause', 'node-1'], env);
    assert.equal(paused.status, 0, paused.stderr);
    const annotations = async () => (await core.readNode({ name: 'node-1' })).metadata?.annotations ?? {};
    assert.equal((await annotations())[Annotations.paused], 'true');
    const resumed = kubectl(['nuo', 'resume', 'node-1'], env);
    assert.equal(resumed.status, 0, resumed.stderr);
    assert.equal((await annotations())[Annotations.paused], undefined);
  });

  test('a kubectl global flag nuo does not take is refused with what to use instead', () => {
    const r = kubectl(['nuo', 'status', '--server', cluster.server]);
    assert.equal(r.status, 2);
    assert.match(
      r.stderr,
      /kubectl nuo: --server is a kubectl flag that nuo does not take: .*--kubeconfig FILE/,
    );
  });
});
