import assert from 'node:assert/strict';
import test from 'node:test';
import { mungeVersion, resolveVersion } from '../../src/plan/version.ts';

const never = async (url: string): Promise<string> => {
  throw new Error(`the channel ${url} is not read when spec.version is set`);
};

test("resolveVersion: SUC's munge, '+' written '-', from spec.version and from the channel alike", async () => {
  const cases: [string, Parameters<typeof resolveVersion>[0], (url: string) => Promise<string>, string][] = [
    ['k3s version', { version: 'v1.20.11+k3s1' }, never, 'v1.20.11-k3s1'],
    ['every +', { version: 'v1.2.3+a+b' }, never, 'v1.2.3-a-b'],
    ['plain version', { version: 'jammy' }, never, 'jammy'],
    ['spec.version wins', { version: 'v1', channel: 'https://c.example/stable' }, never, 'v1'],
    ['channel', { channel: 'https://c.example/stable' }, async () => 'v1.30.1+k3s1', 'v1.30.1-k3s1'],
  ];
  for (const [what, spec, channel, want] of cases)
    assert.equal(await resolveVersion(spec, channel), want, what);
});

test('resolveVersion: the channel is asked its own URL; its error passes through', async () => {
  const asked: string[] = [];
  await resolveVersion({ channel: 'https://c.example/stable' }, async (url) => {
    asked.push(url);
    return 'v2';
  });
  assert.deepEqual(asked, ['https://c.example/stable']);
  await assert.rejects(
    resolveVersion({ channel: 'https://c.example/x' }, async () => {
      throw new Error('channel https://c.example/x: unexpected response 500');
    }),
    /unexpected response 500/,
  );
});

test('mungeVersion: a resolved version is a valid image tag and label value', () => {
  const v = mungeVersion('v1.20.11+k3s1');
  assert.match(v, /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/);
  assert.equal(mungeVersion(v), v, 'munging twice changes nothing');
});
