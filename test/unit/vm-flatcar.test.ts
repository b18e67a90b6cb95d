import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FLATCAR_OS_RELEASE, fluoAgentOnVms } from '../../src/sim/vm/flatcar.ts';
import { agentObjects, fluoAgentManifests } from '../../tools/fluo/manifests.ts';
import type { Manifest } from '../../tools/manifests.ts';

const shipped = await fluoAgentManifests();
const kinds = (objects: Manifest[]) => objects.map((o) => `${o.kind}/${o.metadata?.name}`);

test("FLUO's agent manifests as shipped: its namespace, ServiceAccount, ClusterRole and binding, and DaemonSet; none of the operator's", () => {
  assert.deepEqual(kinds(shipped), [
    'Namespace/reboot-coordinator',
    'ServiceAccount/flatcar-linux-update-agent',
    'ClusterRole/flatcar-linux-update-agent',
    'ClusterRoleBinding/flatcar-linux-update-agent',
    'DaemonSet/flatcar-linux-update-agent',
  ]);
  assert.deepEqual(
    kinds(agentObjects([{ kind: 'ClusterRole', metadata: { name: 'flatcar-linux-update-operator' } }])),
    [],
  );
});

test("on VM nodes: the image built here, the pool's nodes, the stand-in's os-release; everything else as shipped", () => {
  const changed = fluoAgentOnVms(shipped, {
    image: 'registry.test/fluo:1',
    nodeSelector: { pool: 'flatcar' },
  });
  const ds = (objects: Manifest[]) =>
    objects.find((o) => o.kind === 'DaemonSet') as Manifest & {
      spec: {
        template: {
          spec: Record<string, unknown> & {
            containers: { image: string }[];
            volumes: { name: string; hostPath: { path: string } }[];
          };
        };
      };
    };
  const before = ds(shipped).spec.template.spec;
  const after = ds(changed).spec.template.spec;
  assert.equal(after.containers[0]?.image, 'registry.test/fluo:1');
  assert.match(
    before.containers[0]?.image ?? '',
    /^ghcr\.io\/flatcar\//,
    'the shipped image is left in the input',
  );
  assert.deepEqual(after.nodeSelector, { pool: 'flatcar' });
  const paths = (spec: typeof after) =>
    Object.fromEntries(spec.volumes.map((v) => [v.name, v.hostPath.path]));
  assert.deepEqual(paths(after), { ...paths(before), 'etc-os-release': FLATCAR_OS_RELEASE });
  const rest = (spec: typeof after) => ({
    ...spec,
    containers: spec.containers.map((c) => ({ ...c, image: '' })),
    volumes: [],
    nodeSelector: undefined,
  });
  assert.deepEqual(rest(after), rest(before), 'nothing else of the pod changes');
  assert.deepEqual(
    changed.filter((o) => o.kind !== 'DaemonSet'),
    shipped.filter((o) => o.kind !== 'DaemonSet'),
  );
});

test('a DaemonSet without the os-release volume is refused: FLUO changed its manifest', () => {
  const ds = structuredClone(shipped.find((o) => o.kind === 'DaemonSet')) as Manifest & {
    spec: { template: { spec: { volumes: unknown[] } } };
  };
  ds.spec.template.spec.volumes = [];
  assert.throws(() => fluoAgentOnVms([ds], { image: 'x', nodeSelector: {} }), /no \/etc\/os-release volume/);
});
