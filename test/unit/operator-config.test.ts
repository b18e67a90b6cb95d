import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadOperatorConfig } from '../../src/operator/config.ts';

const dir = mkdtempSync(join(tmpdir(), 'nuo-config-test-'));
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

test('defaults are bounded and safe', () => {
  const c = loadOperatorConfig({});
  assert.equal(c.maxUnavailable, '1');
  assert.equal(c.drainTimeoutMs, 600_000);
  assert.equal(c.soakMs, 30_000);
  assert.deepEqual(c.beforeRebootAnnotations, []);
  assert.equal(c.paused, false);
});

test('file < environment < flags', () => {
  const path = file(
    'c.yaml',
    'max-unavailable: "2"\nsoak: 1m\nbeforeRebootAnnotations: [hook.example/a, hook.example/b]\ndrain-force: true\n',
  );
  const fromFile = loadOperatorConfig({ file: path });
  assert.equal(fromFile.maxUnavailable, '2');
  assert.equal(fromFile.soakMs, 60_000);
  assert.deepEqual(fromFile.beforeRebootAnnotations, ['hook.example/a', 'hook.example/b']);
  assert.equal(fromFile.drainForce, true);
  const fromEnv = loadOperatorConfig({ file: path, env: { NUO_MAX_UNAVAILABLE: '10%', NUO_SOAK: '5s' } });
  assert.equal(fromEnv.maxUnavailable, '10%');
  assert.equal(fromEnv.soakMs, 5000);
  const fromFlags = loadOperatorConfig({
    file: path,
    env: { NUO_MAX_UNAVAILABLE: '10%' },
    flags: { 'max-unavailable': '3' },
  });
  assert.equal(fromFlags.maxUnavailable, '3');
});

test('every problem is reported at once, by the name the user wrote', () => {
  const path = file('bad.yaml', 'maxUnavailable: 0\nwhatever: 1\n');
  assert.throws(
    () =>
      loadOperatorConfig({
        file: path,
        env: { NUO_DRAIN_FORCE: 'yes' },
        flags: { soak: 'soon', 'before-reboot-annotations': 'not a key' },
      }),
    (err: Error) => {
      assert.match(err.message, /bad\.yaml: unknown setting "whatever"/);
      assert.match(err.message, /env NUO_DRAIN_FORCE drain-force: must be true or false, got "yes"/);
      assert.match(err.message, /flag soak: invalid duration "soon"/);
      assert.match(err.message, /max-unavailable: must be a positive count/);
      return true;
    },
  );
  assert.throws(
    () => loadOperatorConfig({ flags: { 'drain-timeout': '0s' } }),
    /drain-timeout: must be greater than 0/,
  );
  assert.throws(
    () => loadOperatorConfig({ flags: { 'before-reboot-annotations': 'bad key!' } }),
    /hook annotation "bad key!" is not a valid annotation key/,
  );
  assert.throws(() => loadOperatorConfig({ file: join(dir, 'missing.yaml') }), /cannot read .*missing\.yaml/);
  assert.throws(() => loadOperatorConfig({ file: file('list.yaml', '- a\n- b\n') }), /must hold a mapping/);
});
