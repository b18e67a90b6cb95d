import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { moveIntoCache } from '../../tools/image/build.ts';

const root = mkdtempSync(join(tmpdir(), 'nuo-image-cache-test-'));
after(() => rmSync(root, { recursive: true, force: true }));

function build(name: string, content: string): string {
  const work = join(root, name);
  mkdirSync(work);
  writeFileSync(join(work, 'image.json'), content);
  return work;
}

test('a finished build goes into the cache; one finished later by another process leaves the first in place', () => {
  const dir = join(root, 'key');
  const first = build('key.tmp-1', 'first');
  const second = build('key.tmp-2', 'second');
  assert.equal(moveIntoCache(first, dir), true);
  assert.equal(moveIntoCache(second, dir), false);
  assert.equal(readFileSync(join(dir, 'image.json'), 'utf8'), 'first', 'the one a test may be reading');
  assert.ok(!existsSync(first) && !existsSync(second), 'no work directory left');
});
