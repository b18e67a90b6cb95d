import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { KURED } from '../../tools/kured/build.ts';
import { checkDigest, pinnedSource } from '../../tools/third-party.ts';

test("kured's archive is the source when it is there; a clone named by NUO_KURED_SOURCE wins", () => {
  const archive = join('/work/shared/third-party', KURED.archive);
  assert.deepEqual(
    pinnedSource(KURED, {}, '/work/nuo', (p) => p === archive),
    { kind: 'archive', path: archive },
  );
  assert.deepEqual(
    pinnedSource(KURED, { NUO_KURED_SOURCE: '/src/kured' }, '/work/nuo', () => true),
    {
      kind: 'checkout',
      dir: '/src/kured',
    },
  );
});

test('no kured source fails loudly, naming the archive, its digest, the commit and the clone to make', () => {
  assert.throws(
    () => pinnedSource(KURED, {}, '/work/nuo', () => false),
    (err: Error) => {
      assert.match(
        err.message,
        /^kured's source is missing: no \/work\/shared\/third-party\/kured-1\.23\.0\.tar\.gz/,
      );
      assert.match(err.message, new RegExp(KURED.sha256));
      assert.match(
        err.message,
        /git clone https:\/\/github\.com\/kubereboot\/kured && git -C kured checkout ef3c90b2/,
      );
      assert.match(err.message, /set NUO_KURED_SOURCE/);
      return true;
    },
  );
});

test("a kured archive that is not 1.23.0's is refused", () => {
  assert.throws(
    () => checkDigest(KURED, 'k.tar.gz', '11'.repeat(32)),
    /k\.tar\.gz: sha256 1+, expected 3fe82a09.*kured ef3c90b2/,
  );
});
