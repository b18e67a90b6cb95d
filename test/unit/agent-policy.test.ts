/**
 * The agent's admission policy names the agent's keys as src/api/keys.ts does: a key added to one list
 * and not the other would either be refused at the API server or let the agent write a key not its own.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { parse } from 'yaml';
import {
  AGENT_ANNOTATIONS,
  AGENT_LABELS,
  AgentProtocol,
  type CoreosProtocol,
  protocolAgentKeys,
} from '../../src/api/keys.ts';

interface Policy {
  kind: string;
  spec?: { variables?: Array<{ name: string; expression: string }> };
}

const policy = readFileSync(new URL('../../deploy/base/agent-policy.yaml', import.meta.url), 'utf8')
  .split(/^---$/m)
  .map((doc) => parse(doc) as Policy)
  .find((doc) => doc.kind === 'ValidatingAdmissionPolicy');
/** The quoted strings of a CEL list literal. */
const listedIn = (p: Policy | undefined, name: string) => {
  const expression = p?.spec?.variables?.find((v) => v.name === name)?.expression ?? '';
  return [...expression.matchAll(/'([^']+)'/g)].map((m) => m[1]).sort();
};
const listed = (name: string) => listedIn(policy, name);

test("the agent's admission policy lets it change exactly the keys keys.ts gives the agent", () => {
  assert.deepEqual(listed('agentAnnotations'), [...AGENT_ANNOTATIONS].sort());
  assert.deepEqual(listed('agentLabels'), [...AGENT_LABELS].sort());
});

/** The admission policies of CLUO's and FLUO's update-agent, by name. */
const protocolPolicies = readFileSync(
  new URL('../../deploy/base/protocol-agent-policy.yaml', import.meta.url),
  'utf8',
)
  .split(/^---$/m)
  .map((doc) => parse(doc) as Policy & { metadata?: { name?: string } })
  .filter((doc) => doc.kind === 'ValidatingAdmissionPolicy');

test("CLUO's and FLUO's agents' admission policies let each change exactly the keys keys.ts gives that agent", () => {
  const cases: Array<[string, CoreosProtocol]> = [
    ['nuo-flatcar-agent-own-node-keys', AgentProtocol.flatcar],
    ['nuo-container-linux-agent-own-node-keys', AgentProtocol.containerLinux],
  ];
  assert.equal(protocolPolicies.length, cases.length);
  for (const [name, protocol] of cases) {
    const p = protocolPolicies.find((d) => d.metadata?.name === name);
    const keys = protocolAgentKeys(protocol);
    assert.deepEqual(listedIn(p, 'agentAnnotations'), [...keys.annotations].sort(), name);
    assert.deepEqual(listedIn(p, 'agentLabels'), [...keys.labels].sort(), name);
  }
});
