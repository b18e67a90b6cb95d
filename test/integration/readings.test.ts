/**
 * Readings that hang, on the real control plane: a policy's health check reads a custom resource at a
 * version the API server converts through a conversion webhook (as CRDs with several versions do); when
 * the webhook stops answering and the object changes, the API server's list hangs for its webhook timeout
 * (30 s; it keeps the last conversion of an unchanged object). nuo's read of
 * it fails at readings.timeout, and the pool is held from then on, naming why, instead of keeping the
 * last healthy reading in force while the list hangs. The API server holds readings' bounds itself.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { ApiextensionsV1Api, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, UPDATE_POLICY } from '../../src/api/crd.ts';
import type { Condition, UpdatePolicy } from '../../src/api/update-policy.ts';
import { mergePatch } from '../../src/kube/patch.ts';
import { FLEET_POLICY, Fleet } from '../../src/sim/fleet.ts';
import { installPolicyCrd } from '../../src/sim/policies.ts';
import { pollUntil } from '../../src/util/poll.ts';
import { FAST_LEASE, rebootedOnce, useCluster } from './support.ts';

const cluster = await useCluster({ nodes: 3 });
const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
const custom = cluster.kubeconfig.makeApiClient(CustomObjectsApi);
const ref = { group: API_GROUP, version: API_VERSION, plural: UPDATE_POLICY.plural };
const GADGETS = { group: 'test.nuo.dev', plural: 'gadgets' };
/** How long one reading may take (readings.timeout), and how soon the hold must show after the hang. */
const TIMEOUT_S = 2;
const HELD_WITHIN_MS = 12_000;

/**
 * A conversion webhook for Gadgets: v1 and v2 hold the same fields, so converting is renaming the
 * apiVersion. While `stalled`, it takes requests and never answers.
 */
class ConversionWebhook {
  stalled = false;
  readonly server: Server;

  constructor() {
    // The API server's own serving certificate (127.0.0.1), signed by the cluster's CA.
    this.server = createServer(
      {
        cert: readFileSync(join(cluster.dir, 'apiserver.crt')),
        key: readFileSync(join(cluster.dir, 'apiserver.key')),
      },
      (req, res) => {
        let body = '';
        req.on('data', (chunk) => {
          body += chunk;
        });
        req.on('end', () => {
          if (this.stalled) return;
          const review = JSON.parse(body) as {
            request: { uid: string; desiredAPIVersion: string; objects: Record<string, unknown>[] };
          };
          const { uid, desiredAPIVersion, objects } = review.request;
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(
            JSON.stringify({
              apiVersion: 'apiextensions.k8s.io/v1',
              kind: 'ConversionReview',
              response: {
                uid,
                result: { status: 'Success' },
                convertedObjects: objects.map((o) => ({ ...o, apiVersion: desiredAPIVersion })),
              },
            }),
          );
        });
      },
    );
  }

  async listen(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return (this.server.address() as { port: number }).port;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

const webhook = new ConversionWebhook();
let fleet: Fleet | undefined;
after(async () => {
  await fleet?.stop();
  await webhook.close();
});

async function installGadgets(port: number): Promise<void> {
  const schema = {
    openAPIV3Schema: {
      type: 'object',
      properties: { status: { type: 'object', properties: { health: { type: 'string' } } } },
    },
  };
  await cluster.kubeconfig.makeApiClient(ApiextensionsV1Api).createCustomResourceDefinition({
    body: {
      metadata: { name: `${GADGETS.plural}.${GADGETS.group}` },
      spec: {
        group: GADGETS.group,
        scope: 'Namespaced',
        names: { kind: 'Gadget', plural: GADGETS.plural, singular: 'gadget', listKind: 'GadgetList' },
        versions: [
          { name: 'v1', served: true, storage: true, schema },
          { name: 'v2', served: true, storage: false, schema },
        ],
        conversion: {
          strategy: 'Webhook',
          webhook: {
            conversionReviewVersions: ['v1'],
            clientConfig: {
              url: `https://127.0.0.1:${port}/convert`,
              caBundle: cluster.caCert.toString('base64'),
            },
          },
        },
      },
    },
  });
  await pollUntil('Gadgets to be served at v2', () =>
    custom.listNamespacedCustomObject({ ...GADGETS, version: 'v2', namespace: 'default' }).then(
      () => true,
      () => undefined,
    ),
  );
  await custom.createNamespacedCustomObject({
    ...GADGETS,
    version: 'v1',
    namespace: 'default',
    body: {
      apiVersion: `${GADGETS.group}/v1`,
      kind: 'Gadget',
      metadata: { name: 'ceph' },
      status: { health: 'HEALTH_OK' },
    },
  });
}

async function blocked(): Promise<Condition | undefined> {
  const p = (await custom.getClusterCustomObject({ ...ref, name: FLEET_POLICY })) as UpdatePolicy;
  return p.status?.conditions?.find((c) => c.type === 'Blocked');
}

test('a health check whose read hangs holds the pool within readings.timeout, naming why, and lets it go once reads answer again; the API server refuses readings out of bounds', async () => {
  await core.createNamespace({ body: { metadata: { name: 'nuo-system' } } });
  await installPolicyCrd(cluster);
  await installGadgets(await webhook.listen());

  const f = new Fleet(cluster, { rebootMs: 300, budget: 1, agentCheckIntervalMs: 2000 });
  fleet = f;
  await f.start();
  await f.applyPolicy({
    maxUnavailable: 1,
    reboot: { soak: '1s' },
    readings: { maxAge: '20s', timeout: `${TIMEOUT_S}s` },
    healthChecks: [
      {
        name: 'ceph',
        object: {
          apiVersion: `${GADGETS.group}/v2`,
          kind: 'Gadget',
          namespace: 'default',
          name: 'ceph',
          expression: "object.status.health == 'HEALTH_OK'",
        },
      },
    ],
  });
  f.startOperator('op', [...FAST_LEASE, '--blocker-interval=1s']);
  await pollUntil('the health check to pass: nothing blocks', async () =>
    (await blocked())?.status === 'False' ? true : undefined,
  );

  webhook.stalled = true;
  // The object changes: the API server must convert it anew (it keeps the last conversion), and waits.
  await custom.patchNamespacedCustomObject(
    {
      ...GADGETS,
      version: 'v1',
      namespace: 'default',
      name: 'ceph',
      body: { metadata: { annotations: { 'test.nuo.dev/touched': 'yes' } } },
    },
    mergePatch,
  );
  const hung = Date.now();
  const held = await pollUntil(
    'the pool held once the read hangs',
    async () => {
      const c = await blocked();
      return c?.status === 'True' && c.reason === 'HealthCheck' ? c : undefined;
    },
    { timeoutMs: 25_000, intervalMs: 200 },
  );
  const after = Date.now() - hung;
  assert.ok(after < HELD_WITHIN_MS, `held ${after} ms after the read began to hang`);
  assert.match(
    held.message,
    /health check ceph fails: .*could not be read: no answer within readings\.timeout/,
  );

  webhook.stalled = false;
  await pollUntil('the pool free again once reads answer', async () =>
    (await blocked())?.status === 'False' ? true : undefined,
  );
  // The rollout goes on: a node is updated under the healthy check.
  f.stageUpdates(['node-0']);
  await rebootedOnce(core, f, ['node-0']);
  await f.checker.finalCheck();
  assert.deepEqual(f.checker.violations, []);

  // The CRD's rules refuse what the operator could not honour, with the bound in the message.
  const refused = await custom
    .createClusterCustomObject({
      ...ref,
      body: {
        apiVersion: `${API_GROUP}/${API_VERSION}`,
        kind: UPDATE_POLICY.kind,
        metadata: { name: 'too-fresh' },
        spec: { readings: { maxAge: '5s' } },
      },
    })
    .then(
      () => 'accepted',
      (err: { body?: unknown }) => String(err.body),
    );
  assert.match(refused, /maxAge must be from 10s to 1h/);
});
