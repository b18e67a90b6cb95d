/**
 * `nuo demo` as a newcomer runs it, made small: the command in a child process, its own local cluster,
 * its exit code and the summary it prints. Once with reboots only, once with the upgrade Plan.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const nuo = fileURLToPath(new URL('../../bin/nuo.js', import.meta.url));
const SMALL = [
  '--nodes',
  '6',
  '--zones',
  '2',
  '--max-unavailable',
  '2',
  '--reboot-time',
  '1s',
  '--soak',
  '1s',
];

async function demo(args: string[]): Promise<string> {
  const { stdout } = await promisify(execFile)(process.execPath, [nuo, 'demo', ...SMALL, ...args], {
    timeout: 600_000,
    maxBuffer: 16 * 1024 * 1024,
  });
  return stdout;
}

/** The value on the summary line that starts with `label`. */
function summary(out: string, label: string): string {
  const line = out.split('\n').find((l) => l.trimStart().startsWith(label));
  assert.ok(line, `the summary has a "${label}" line:\n${out}`);
  return line.trimStart().slice(label.length).trim();
}

describe('nuo demo', () => {
  test('reboots every node once under the policy, with no violation, and exits 0', async () => {
    const out = await demo([]);
    assert.equal(summary(out, 'nodes rebooted'), '6 (each exactly once: yes)');
    assert.match(summary(out, 'most nodes disrupted'), /^2 \(maxUnavailable 2, at most 1 per zone\)/);
    for (const label of ['budget violations', 'PDB violations', 'other safety violations'])
      assert.equal(summary(out, label), '0', label);
    assert.match(out, /Progressing\s+False\s+UpToDate/);
    assert.doesNotMatch(out, /Plan /, 'no Plan unless asked for');
  });

  test('--plan: every node upgraded and rebooted in one attempt, the Plan Complete, no violation', async () => {
    const out = await demo(['--plan']);
    assert.match(out, /reboot: true/, 'the Plan is shown before the rollout');
    assert.equal(summary(out, 'nodes rebooted'), '6 (each exactly once: yes)');
    assert.match(summary(out, 'Plan os-upgrade applied'), /^6 nodes; most at once [12] \(concurrency 2\)$/);
    assert.match(out, /Complete\s+True\s+Complete: applied on all 6 selected node\(s\) at version v1\.1\.0/);
    for (const label of ['budget violations', 'PDB violations', 'other safety violations'])
      assert.equal(summary(out, label), '0', label);
  });
});
