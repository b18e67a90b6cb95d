import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { FLUO, FLUO_PREFIXES, fluoLdflags, withPrefix } from '../../tools/fluo/build.ts';
import { checkDigest, pinnedSource, thirdPartyDir } from '../../tools/third-party.ts';

const fluoSource = (env: NodeJS.ProcessEnv, dir: string, exists: (p: string) => boolean) =>
  pinnedSource(FLUO, env, dir, exists);

test("FLUO's ldflags set its version from the VERSION file, trimmed, and its commit", () => {
  const flags = fluoLdflags('0.10.0-dev\n', FLUO.commit).split(' -X ');
  assert.ok(flags.includes(`${FLUO.module}/pkg/version.Version=0.10.0-dev`), flags.join('\n'));
  assert.ok(flags.includes(`${FLUO.module}/pkg/version.Commit=${FLUO.commit}`), flags.join('\n'));
});

test('a version the agent could not parse as semver is refused before building', () => {
  for (const bad of ['v0.9.0', '0.10', 'UNKNOWN', '']) {
    assert.throws(() => fluoLdflags(bad, FLUO.commit), /not the X\.Y\.Z\[-pre\] semver/, bad);
  }
});

test('the archives are beside the checkout, in ../shared/third-party, unless NUO_THIRD_PARTY_DIR says', () => {
  assert.equal(thirdPartyDir({}, '/work/nuo'), '/work/shared/third-party');
  assert.equal(thirdPartyDir({ NUO_THIRD_PARTY_DIR: '/srv/tp' }, '/work/nuo'), '/srv/tp');
});

test('the archive is the source when it is there', () => {
  const archive = join('/work/shared/third-party', FLUO.archive);
  assert.deepEqual(
    fluoSource({}, '/work/nuo', (p) => p === archive),
    { kind: 'archive', path: archive },
  );
});

test('a clone named by NUO_FLUO_SOURCE wins over the archive, and must hold cmd/update-agent', () => {
  const env = { NUO_FLUO_SOURCE: '/src/fluo' };
  assert.deepEqual(
    fluoSource(env, '/work/nuo', () => true),
    { kind: 'checkout', dir: '/src/fluo' },
  );
  assert.throws(() => fluoSource(env, '/work/nuo', () => false), /has no cmd\/update-agent.*8dd83d71/);
});

test('no source at all fails, naming the missing archive, the commit and how to get it', () => {
  assert.throws(
    () => fluoSource({}, '/work/nuo', () => false),
    (err: Error) => {
      assert.match(
        err.message,
        /no \/work\/shared\/third-party\/flatcar-linux-update-operator-8dd83d71\.tar\.gz/,
      );
      assert.match(err.message, new RegExp(`checkout ${FLUO.commit}`));
      assert.match(err.message, /NUO_FLUO_SOURCE/);
      assert.match(err.message, new RegExp(FLUO.sha256));
      return true;
    },
  );
});

test('an archive whose digest is not the pinned one is refused', () => {
  assert.doesNotThrow(() => checkDigest(FLUO, 'a.tar.gz', FLUO.sha256));
  assert.throws(
    () => checkDigest(FLUO, 'a.tar.gz', '00'.repeat(32)),
    /a\.tar\.gz: sha256 0+, expected fb34527d/,
  );
});

test("CLUO's variant changes FLUO's key prefix constant and nothing else", () => {
  const constants = [
    'const (',
    '\t// Prefix used by all label and annotation keys.',
    `\tPrefix = "${FLUO_PREFIXES.flatcar}"`,
    '\tAnnotationRebootNeeded = Prefix + "reboot-needed"',
    ')',
  ].join('\n');
  const coreos = withPrefix(constants, 'coreos');
  assert.equal(coreos, constants.replace(FLUO_PREFIXES.flatcar, 'container-linux-update.v1.coreos.com/'));
  assert.equal(withPrefix(constants, 'flatcar'), constants);
});

test('a FLUO source whose prefix constant is not there exactly once is refused, not half-edited', () => {
  assert.throws(() => withPrefix('package constants', 'coreos'), /0 times, not once: its source changed/);
  const twice = `Prefix = "${FLUO_PREFIXES.flatcar}"\nPrefix = "${FLUO_PREFIXES.flatcar}"`;
  assert.throws(() => withPrefix(twice, 'coreos'), /2 times/);
});
