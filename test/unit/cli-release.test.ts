import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1NodeSystemInfo } from '@kubernetes/client-node';
import { Annotations } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import { releaseRefusal } from '../../src/cli/release.ts';
import { viewNode } from '../../src/operator/decide/node-view.ts';
import { stepHolder } from '../../src/operator/decide/phase-steps.ts';
import { decideConfig } from './operator-fixtures.ts';

test('releaseRefusal: only a Failed attempt, and not while its agent marks reboot-in-progress', () => {
  const state = (phase?: string, extra: Record<string, string> = {}, bootID = 'boot-1') => ({
    metadata: { name: 'n', annotations: { ...(phase ? { [Annotations.state]: phase } : {}), ...extra } },
    status: { nodeInfo: { bootID } as V1NodeSystemInfo },
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
  assert.match(
    releaseRefusal(
      state(Phase.failed, { [Annotations.rebootInProgress]: 'true', [Annotations.bootIdBefore]: 'boot-1' }),
    ) ?? '',
    /may be rebooting now/,
    'a mark from this very boot: the reboot may be under way',
  );
  assert.equal(
    releaseRefusal(
      state(Phase.failed, { [Annotations.rebootInProgress]: 'true', [Annotations.bootIdBefore]: 'boot-0' }),
    ),
    undefined,
    'a mark from an earlier boot: the reboot is over (the agent keeps it while Failed)',
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

test('a release names who asked, as the API server knew them, in the reason the attempt ends with; an older request without them still reads', () => {
  const failedSince = '2026-11-27T10:00:00.000Z';
  const failed = (request: object) =>
    viewNode({
      metadata: {
        name: 'n',
        annotations: {
          [Annotations.state]: Phase.failed,
          [Annotations.stateSince]: failedSince,
          [Annotations.release]: JSON.stringify(request),
        },
      },
      status: { nodeInfo: { bootID: 'boot-1' } as never, conditions: [{ type: 'Ready', status: 'False' }] },
    });
  const ended = (request: object) =>
    stepHolder(failed(request), {
      config: decideConfig,
      now: new Date('2026-11-27T10:05:00.000Z'),
      draining: new Set<string>(),
      health: new Map(),
      wake: () => {},
      slotOf: () => undefined,
    }).map((a) => (a.type === 'abort' ? a.reason : a.type));
  assert.deepEqual(ended({ failedSince, reason: 'machine replaced', by: 'alice@example.com' }), [
    'released by a person (alice@example.com): machine replaced',
  ]);
  assert.deepEqual(ended({ failedSince, reason: 'machine replaced' }), [
    'released by a person: machine replaced',
  ]);
  assert.deepEqual(failed({ failedSince, reason: 'x', by: 'alice@example.com' }).release, {
    failedSince,
    reason: 'x',
    by: 'alice@example.com',
  });
  assert.equal(
    failed({ failedSince, reason: 'x', by: 7 }).release?.by,
    undefined,
    'a by that is no name is left out',
  );
});
