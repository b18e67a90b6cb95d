import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import test from 'node:test';
import { planKey, planLabel, sucPlanLabel } from '../../src/api/keys.ts';
import { safeConcatName } from '../../src/kube/names.ts';

const LABEL_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9]$/;
const sha = (s: string) => createHash('sha256').update(s).digest('hex');

test("safeConcatName: SUC's shortening (wrangler's SafeConcatName), past 63 characters only", () => {
  assert.equal(safeConcatName('apply', 'os', 'on', 'n'), 'apply-os-on-n');
  assert.equal(safeConcatName('x'.repeat(63)), 'x'.repeat(63), '63 characters stay');
  const long = 'a'.repeat(64);
  assert.equal(
    safeConcatName(long),
    `${'a'.repeat(57)}-${sha(long).slice(0, 5)}`,
    'cut after a letter: 57 + 5',
  );
  const dash = `${'a'.repeat(56)}-${'b'.repeat(10)}`;
  assert.equal(safeConcatName(dash), `${'a'.repeat(56)}-${sha(dash).slice(0, 6)}`, 'cut at a dash: 56 + 6');
  const dot = `${'a'.repeat(56)}.${'b'.repeat(10)}`;
  assert.equal(safeConcatName(dot), `${'a'.repeat(56)}-${sha(dot).slice(0, 6)}`, 'cut at a dot: 56 + 6');
  assert.notEqual(
    safeConcatName(`${long}x`),
    safeConcatName(`${long}y`),
    'names differing past the cut differ',
  );
  for (const name of [long, dash, dot]) assert.equal(safeConcatName(name).length, 63);
});

test('planKey: a Plan name of any length makes valid label keys and values', () => {
  for (const name of ['os', 'k'.repeat(63), 'k'.repeat(64), `${'a.b-'.repeat(40)}z`, 'x'.repeat(253)]) {
    const key = planKey(name);
    assert.match(key, LABEL_NAME, `${name.length} characters: a label value`);
    assert.match(planLabel(name).split('/')[1] ?? '', LABEL_NAME, 'the name part of plan.nuo.dev/');
    assert.match(
      sucPlanLabel(name).split('/')[1] ?? '',
      LABEL_NAME,
      'the name part of plan.upgrade.cattle.io/',
    );
    if (name.length <= 63) assert.equal(key, name, 'a name that fits is itself');
  }
});
