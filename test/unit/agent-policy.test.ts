/**
 * The agent's admission policy names the agent's keys as src/api/keys.ts does: a key added to one list
 * and not the other would either be refused at the API server or let the agent write a key not its own.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { parse } from 'yaml';
import { AGENT_ANNOTATIONS, AGENT_LABELS } from '../../src/api/keys.ts';

interface Policy {
  kind: string;
  spec?: { variables?: Array<{ name: string; expression: string }> };
}

const policy = readFileSync(new URL('../../deploy/base/agent-policy.yaml', import.meta.url), 'utf8')
  .split(/^---$/m)
  .map((doc) => parse(doc) as Policy)
  .find((doc) => doc.kind === 'ValidatingAdmissionPolicy');
/** The quoted strings of a CEL list literal. */
const listed = (name: string) => {
  const expression = policy?.spec?.variables?.find((v) => v.name === name)?.expression ?? '';
  return [...expression.matchAll(/'([^']+)'/g)].map((m) => m[1]).sort();
};

test("the agent's admission policy lets it change exactly the keys keys.ts gives the agent", () => {
  assert.deepEqual(listed('agentAnnotations'), [...AGENT_ANNOTATIONS].sort());
  assert.deepEqual(listed('agentLabels'), [...AGENT_LABELS].sort());
});
