import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Node } from '@kubernetes/client-node';
import { Annotations } from '../../src/api/keys.ts';
import { viewNode } from '../../src/operator/decide/node-view.ts';
import type { EventRecorder } from '../../src/operator/write/events.ts';
import { ProblemReports } from '../../src/operator/write/problem-reports.ts';

const node = (name: string, annotations: Record<string, string>): V1Node => ({
  metadata: { name, annotations },
});

test('each problem a node shows is reported once: again only when it changes, or comes back after it was gone', () => {
  const events: string[] = [];
  const lines: string[] = [];
  const recorder = {
    warning: (n: string, reason: string) => events.push(`${n} ${reason}`),
  } as unknown as EventRecorder;
  const reports = new ProblemReports(recorder, (_level, msg, fields) => lines.push(`${fields?.node} ${msg}`));
  const hostile = node('a', { [Annotations.failures]: 'abc' });
  const agent = node('b', { [Annotations.agentProblem]: 'reboot did not happen' });
  reports.report([hostile, agent].map(viewNode));
  reports.report([hostile, agent].map(viewNode));
  assert.deepEqual(events, ['a MalformedAnnotation', 'b AgentProblem'], 'once while it stays');
  reports.report([node('a', { [Annotations.failures]: 'xyz' }), agent].map(viewNode));
  assert.deepEqual(events.slice(2), ['a MalformedAnnotation'], 'a changed problem is new');
  reports.report([node('a', {}), node('b', {})].map(viewNode));
  reports.report([hostile, agent].map(viewNode));
  assert.deepEqual(events.slice(3), ['a MalformedAnnotation', 'b AgentProblem'], 'gone, then back');
  reports.clear();
  reports.report([hostile].map(viewNode));
  assert.deepEqual(events.slice(5), ['a MalformedAnnotation'], 'a new leadership reports afresh');
  assert.equal(lines.length, events.length, 'a log line with every Event');
});
