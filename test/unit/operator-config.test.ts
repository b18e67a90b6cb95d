import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadOperatorConfig, movedSetting } from '../../src/operator/config.ts';

const dir = mkdtempSync(join(tmpdir(), 'nuo-config-test-'));
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

test('defaults: the ledger in nuo-system, not paused, 50 evictions in flight, blockers asked every 15 s, channels every 15 min', () => {
  assert.deepEqual(loadOperatorConfig({}), {
    namespace: 'nuo-system',
    paused: false,
    drainConcurrency: 50,
    blockerIntervalMs: 15_000,
    planPollingIntervalMs: 900_000,
  });
});

test('file < environment < flags', () => {
  const path = file('c.yaml', 'namespace: ops\ndrainConcurrency: 10\nblocker-interval: 1m\n');
  const fromFile = loadOperatorConfig({ file: path });
  assert.equal(fromFile.namespace, 'ops');
  assert.equal(fromFile.drainConcurrency, 10);
  assert.equal(fromFile.blockerIntervalMs, 60_000);
  const fromEnv = loadOperatorConfig({ file: path, env: { NUO_NAMESPACE: 'ops-env', NUO_PAUSED: 'true' } });
  assert.equal(fromEnv.namespace, 'ops-env');
  assert.equal(fromEnv.paused, true);
  const fromFlags = loadOperatorConfig({
    file: path,
    env: { NUO_NAMESPACE: 'ops-env' },
    flags: { namespace: 'ops-flag' },
  });
  assert.equal(fromFlags.namespace, 'ops-flag');
});

test('every problem is reported at once, by the name the user wrote', () => {
  const path = file('bad.yaml', 'drainConcurrency: 0\nwhatever: 1\n');
  assert.throws(
    () =>
      loadOperatorConfig({
        file: path,
        env: { NUO_PAUSED: 'yes' },
        flags: { 'blocker-interval': 'soon', namespace: 'Not_A_Namespace' },
      }),
    (err: Error) => {
      assert.match(err.message, /bad\.yaml: unknown setting "whatever"/);
      assert.match(err.message, /env NUO_PAUSED paused: must be true or false, got "yes"/);
      assert.match(err.message, /flag blocker-interval: invalid duration "soon"/);
      return true;
    },
  );
  assert.throws(
    () => loadOperatorConfig({ flags: { 'drain-concurrency': '0', namespace: 'Not_A_Namespace' } }),
    (err: Error) => {
      assert.match(err.message, /drain-concurrency: must be at least 1/);
      assert.match(err.message, /namespace: "Not_A_Namespace" is not a valid namespace name/);
      return true;
    },
  );
  assert.throws(
    () => loadOperatorConfig({ flags: { 'blocker-interval': '0s' } }),
    /blocker-interval: must be/,
  );
  assert.throws(
    () => loadOperatorConfig({ flags: { 'plan-polling-interval': '10ms' } }),
    /plan-polling-interval: must be at least 1s/,
  );
  assert.throws(() => loadOperatorConfig({ file: join(dir, 'missing.yaml') }), /cannot read .*missing\.yaml/);
  assert.throws(() => loadOperatorConfig({ file: file('list.yaml', '- a\n- b\n') }), /must hold a mapping/);
});

test('a pool setting is refused with the UpdatePolicy field it moved to, from a file or the environment', () => {
  const path = file('old.yaml', 'maxUnavailable: 2\nsoakMs: 1000\ndrain-delete-emptydir-data: true\n');
  assert.throws(
    () => loadOperatorConfig({ file: path, env: { NUO_DRAIN_TIMEOUT: '5m' } }),
    (err: Error) => {
      assert.match(
        err.message,
        /old\.yaml: "maxUnavailable" is an UpdatePolicy setting now \(spec\.maxUnavailable\)/,
      );
      assert.match(err.message, /old\.yaml: "soakMs" is an UpdatePolicy setting now \(spec\.reboot\.soak\)/);
      assert.match(
        err.message,
        /"drain-delete-emptydir-data" is an UpdatePolicy setting now \(spec\.drain\.deleteEmptyDirData\)/,
      );
      assert.match(
        err.message,
        /env NUO_DRAIN_TIMEOUT: "drain-timeout" is an UpdatePolicy setting now \(spec\.drain\.timeout\)/,
      );
      return true;
    },
  );
  assert.equal(movedSetting('retryBackoffMaxMs')?.includes('spec.reboot.retryBackoffMax'), true);
  assert.equal(movedSetting('namespace'), undefined);
  assert.equal(movedSetting('nonsense'), undefined);
});
