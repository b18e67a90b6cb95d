import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Annotations } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import { releaseRefusal } from '../../src/cli/release.ts';
import { viewNode } from '../../src/operator/decide/node-view.ts';

test('releaseRefusal: only a Failed attempt, and not while its agent marks reboot-in-progress', () => {
  const state = (phase?: string, extra: Record<string, string> = {}) => ({
    ...(phase ? { [Annotations.state]: phase } : {}),
    ...extra,
  });
  assert.match(releaseRefusal(state()) ?? '', /^it is Idle, not Failed/);
  assert.match(
    releaseRefusal(state(Phase.rebooting)) ?? '',
    /^it is Rebooting, not Failed: .*its own timeout/,
  );
  assert.match(
    releaseRefusal(state(Phase.failed, { [Annotations.rebootInProgress]: 'true' })) ?? '',
    /reboot-in-progress, so it may be rebooting now; .*delete its Node object/,
  );
  assert.equal(releaseRefusal(state(Phase.failed)), undefined);
});

test('a release request that is not the JSON nuo release writes is ignored, naming it', () => {
  const view = (value: string) =>
    viewNode({ metadata: { name: 'n', annotations: { [Annotations.release]: value } } });
  assert.deepEqual(view('{"failedSince":"2026-11-27T10:00:00.000Z","reason":"gone"}').release, {
    failedSince: '2026-11-27T10:00:00.000Z',
    reason: 'gone',
  });
  for (const bad of ['yes', '{"reason":"gone"}', '[]', 'null']) {
    const n = view(bad);
    assert.equal(n.release, undefined, bad);
    assert.match(
      n.problems.join('; '),
      /nuo\.dev\/release.*is not \{"failedSince", "reason"\} JSON; ignored/,
      bad,
    );
  }
});
