/** The checker's verdict on a reboot of a node whose agent speaks CLUO's or FLUO's protocol. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Node } from '@kubernetes/client-node';
import { AgentProtocol, Annotations, protocolKeys } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import { protocolGrantMissing, rebootMarkOf } from '../../src/sim/checker-protocols.ts';

const FLUO = AgentProtocol.flatcar;
const F = protocolKeys(FLUO);
const node = (annotations: Record<string, string>): V1Node => ({ metadata: { name: 'n', annotations } });
const granted = {
  [F.rebootOk]: 'true',
  [Annotations.state]: Phase.rebootGranted,
  [Annotations.grantedBootId]: 'b1',
};

test("a reboot is nuo's in the protocol only with its reboot-ok, in nuo's grant, for the boot it left", () => {
  const table: Array<[string, V1Node | undefined, string | undefined]> = [
    ['granted by nuo for this boot', node(granted), undefined],
    ['in Rebooting', node({ ...granted, [Annotations.state]: Phase.rebooting }), undefined],
    [
      'late, after nuo gave up waiting and left its grant standing (Failed, slot held)',
      node({ ...granted, [Annotations.state]: Phase.failed }),
      undefined,
    ],
    [
      'Failed before any grant (a drain that failed)',
      node({ [F.rebootOk]: 'true', [Annotations.state]: Phase.failed }),
      'nuo granted boot (none), the node rebooted from b1',
    ],
    ['no node', undefined, `no ${F.rebootOk}="true"`],
    ['no grant', node({ [Annotations.state]: Phase.rebootGranted }), `no ${F.rebootOk}="true"`],
    ['"false"', node({ ...granted, [F.rebootOk]: 'false' }), `no ${F.rebootOk}="true"`],
    [
      "nuo's signed key is not the protocol's",
      node({ ...granted, [F.rebootOk]: '', [Annotations.rebootOk]: 'v1.x' }),
      `no ${F.rebootOk}="true"`,
    ],
    [
      'written by another client outside an attempt',
      node({ [F.rebootOk]: 'true' }),
      `${F.rebootOk}="true" outside nuo's grant (phase none)`,
    ],
    [
      'while nuo is still draining',
      node({ ...granted, [Annotations.state]: Phase.draining }),
      `${F.rebootOk}="true" outside nuo's grant (phase Draining)`,
    ],
    [
      'a grant for an earlier boot',
      node({ ...granted, [Annotations.grantedBootId]: 'b0' }),
      'nuo granted boot b0, the node rebooted from b1',
    ],
  ];
  for (const [what, n, want] of table) assert.equal(protocolGrantMissing(n, FLUO, 'b1'), want, what);
  assert.equal(rebootMarkOf(FLUO), F.rebootInProgress);
  assert.equal(rebootMarkOf(AgentProtocol.nuo), Annotations.rebootInProgress);
});
