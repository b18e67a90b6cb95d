import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  booted,
  nextVersion,
  osRelease,
  staged,
  updateConf,
  updateEngineStatus,
} from '../../src/sim/fluo-os.ts';

const now = new Date('2026-11-27T08:00:00Z');

test('the release after a version bumps its last number', () => {
  assert.equal(nextVersion('4152.2.0'), '4152.2.1');
  assert.equal(nextVersion('4152.2.9'), '4152.2.10');
  assert.throws(() => nextVersion('4152.2.beta'), /after "4152\.2\.beta"/);
});

test('needing a reboot stages the next release once; not needing one stages nothing', () => {
  const os = { version: '4152.2.0' };
  assert.deepEqual(staged(os, false), os);
  const once = staged(os, true);
  assert.deepEqual(once, { version: '4152.2.0', staged: '4152.2.1' });
  assert.deepEqual(staged(once, true), once, 'a second sync keeps the staged release');
});

test('a boot runs the staged release, unless the host still needs a reboot', () => {
  const os = { version: '4152.2.0', staged: '4152.2.1' };
  assert.deepEqual(booted(os, false), { version: '4152.2.1' });
  assert.deepEqual(booted(os, true), os, 'the update did not take: still staged');
  assert.deepEqual(booted({ version: '4152.2.0' }, false), { version: '4152.2.0' }, 'nothing staged');
});

test('update_engine reports UPDATED_NEED_REBOOT with the staged version, else IDLE', () => {
  const need = updateEngineStatus({ version: '4152.2.0', staged: '4152.2.1' }, true, now);
  assert.equal(need.currentOperation, 'UPDATE_STATUS_UPDATED_NEED_REBOOT');
  assert.equal(need.newVersion, '4152.2.1');
  assert.equal(need.lastCheckedTime, BigInt(now.getTime() / 1000));
  const idle = updateEngineStatus({ version: '4152.2.1' }, false, now);
  assert.equal(idle.currentOperation, 'UPDATE_STATUS_IDLE');
  assert.equal(idle.newVersion, '');
  const typed = [need.lastCheckedTime, need.progress, need.currentOperation, need.newVersion, need.newSize];
  assert.deepEqual(
    typed.map((v) => typeof v),
    ['bigint', 'number', 'string', 'string', 'bigint'],
    "the body FLUO's agent reads (D-Bus xdssx)",
  );
});

test('os-release names Flatcar and its version; update.conf names the group', () => {
  const text = osRelease('4152.2.1');
  assert.match(text, /^ID=flatcar$/m);
  assert.match(text, /^VERSION=4152\.2\.1$/m);
  assert.equal(updateConf('beta'), 'GROUP=beta\n');
  assert.throws(() => updateConf('a b'), /not a plain name/);
});
