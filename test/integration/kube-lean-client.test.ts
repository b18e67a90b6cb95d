/**
 * The agent's lean client under API Priority and Fairness on a real API server. A FlowSchema puts one
 * ServiceAccount's requests in a priority level with no seats. APF still runs a request of a level when
 * none of that level's is running, so the test keeps one running: a ConfigMap create that an admission
 * webhook of the test holds. While it is held, APF answers the ServiceAccount's node GETs with 429 and a
 * Retry-After; the client must send them again as told, give up after its limit with the server's answer,
 * and succeed once the held request ends. The API server's own metrics count the refusals.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer, request } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, test } from 'node:test';
import {
  AdmissionregistrationV1Api,
  CoreV1Api,
  FlowcontrolApiserverV1Api,
  RbacAuthorizationV1Api,
} from '@kubernetes/client-node';
import { LeanApiError, LeanClient } from '../../src/kube/lean-client.ts';
import { pollUntil } from '../../src/util/poll.ts';
import { useCluster } from './support.ts';

const cluster = await useCluster({ nodes: 1 });
const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
const rbac = cluster.kubeconfig.makeApiClient(RbacAuthorizationV1Api);
const flowcontrol = cluster.kubeconfig.makeApiClient(FlowcontrolApiserverV1Api);
const admission = cluster.kubeconfig.makeApiClient(AdmissionregistrationV1Api);
const NAME = 'lean-throttled';

// The webhook: answers every review it gets, but only when the test releases it.
let onReview: (() => void) | undefined;
let releases: Array<() => void> = [];
const webhook = createServer(
  // The API server's own serving certificate: signed by the cluster's CA, for 127.0.0.1.
  {
    cert: readFileSync(join(cluster.dir, 'apiserver.crt')),
    key: readFileSync(join(cluster.dir, 'apiserver.key')),
  },
  (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const review = JSON.parse(Buffer.concat(chunks).toString()) as { request: { uid: string } };
      releases.push(() =>
        res.setHeader('Content-Type', 'application/json').end(
          JSON.stringify({
            apiVersion: 'admission.k8s.io/v1',
            kind: 'AdmissionReview',
            response: { uid: review.request.uid, allowed: true },
          }),
        ),
      );
      onReview?.();
    });
  },
);
await new Promise<void>((resolve) => webhook.listen(0, '127.0.0.1', resolve));
after(() => {
  for (const release of releases) release();
  webhook.close();
});

await core.createNamespacedServiceAccount({ namespace: 'default', body: { metadata: { name: NAME } } });
await rbac.createClusterRole({
  body: {
    metadata: { name: NAME },
    rules: [
      { apiGroups: [''], resources: ['nodes'], verbs: ['get'] },
      { apiGroups: [''], resources: ['configmaps'], verbs: ['create'] },
    ],
  },
});
await rbac.createClusterRoleBinding({
  body: {
    metadata: { name: NAME },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: NAME },
    subjects: [{ kind: 'ServiceAccount', name: NAME, namespace: 'default' }],
  },
});
const token =
  (
    await core.createNamespacedServiceAccountToken({
      name: NAME,
      namespace: 'default',
      body: { spec: { audiences: [], expirationSeconds: 3600 } },
    })
  ).status?.token ?? '';
await flowcontrol.createPriorityLevelConfiguration({
  body: {
    metadata: { name: NAME },
    spec: {
      type: 'Limited',
      limited: {
        nominalConcurrencyShares: 0,
        lendablePercent: 0,
        borrowingLimitPercent: 0,
        limitResponse: { type: 'Reject' },
      },
    },
  },
});
await flowcontrol.createFlowSchema({
  body: {
    metadata: { name: NAME },
    spec: {
      priorityLevelConfiguration: { name: NAME },
      matchingPrecedence: 100,
      distinguisherMethod: { type: 'ByUser' },
      rules: [
        {
          subjects: [{ kind: 'ServiceAccount', serviceAccount: { name: NAME, namespace: 'default' } }],
          resourceRules: [
            {
              verbs: ['*'],
              apiGroups: [''],
              resources: ['nodes', 'configmaps'],
              clusterScope: true,
              namespaces: ['*'],
            },
          ],
        },
      ],
    },
  },
});
await admission.createValidatingWebhookConfiguration({
  body: {
    metadata: { name: NAME },
    webhooks: [
      {
        name: 'hold.nuo.dev',
        clientConfig: {
          url: `https://127.0.0.1:${(webhook.address() as AddressInfo).port}/hold`,
          caBundle: cluster.caCert.toString('base64'),
        },
        rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] }],
        objectSelector: { matchLabels: { hold: 'true' } },
        sideEffects: 'None',
        admissionReviewVersions: ['v1'],
        failurePolicy: 'Fail',
        timeoutSeconds: 30,
      },
    ],
  },
});

/** A ConfigMap create by the ServiceAccount; resolves with the HTTP status when it ends. */
function createHeldConfigMap(): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${cluster.server}/api/v1/namespaces/default/configmaps`,
      {
        method: 'POST',
        ca: cluster.caCert,
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify({ metadata: { generateName: 'held-', labels: { hold: 'true' } } }));
  });
}

/**
 * Keeps one of the ServiceAccount's requests running in the webhook, so APF refuses its others. Until
 * the API server has loaded the webhook, a create goes through unheld: then it tries again.
 */
async function holdOne(): Promise<{ release: () => Promise<void> }> {
  return pollUntil('a request held by the webhook', async () => {
    const reviewed = new Promise<void>((resolve) => {
      onReview = resolve;
    });
    const created = createHeldConfigMap();
    const first = await Promise.race([reviewed.then(() => 'held' as const), created]);
    if (first !== 'held') return undefined;
    return {
      release: async () => {
        for (const release of releases) release();
        releases = [];
        assert.equal(await created, 201);
      },
    };
  });
}

/** Requests APF refused for the FlowSchema so far, whatever the reason it gives. */
async function refused(): Promise<number> {
  let sum = 0;
  for (const line of (await cluster.raw.text('/metrics')).split('\n')) {
    if (
      line.startsWith('apiserver_flowcontrol_rejected_requests_total{') &&
      line.includes(`flow_schema="${NAME}"`)
    )
      sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

const client = (maxRetries: number) =>
  new LeanClient({ server: cluster.server, ca: cluster.caCert, token: () => token }, { maxRetries });

test('a refused request is sent again as the server asks, then the refusal is the answer', async () => {
  const held = await holdOne();
  const c = client(2);
  try {
    const before = await refused();
    const err = await c.getNode('node-0').then(
      () => assert.fail('APF let a request through while its level had one running and no seats'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof LeanApiError, String(err));
    assert.equal(err.status, 429);
    assert.match(err.message, /sent 3 times/);
    assert.equal((await refused()) - before, 3, 'the first request and 2 retries, each refused by APF');
  } finally {
    c.close();
    await held.release();
  }
});

test('a refused request succeeds once the server lets it through', async () => {
  const held = await holdOne();
  const c = client(60);
  try {
    const before = await refused();
    const node = c.getNode('node-0');
    await pollUntil('the client to be refused twice', async () =>
      (await refused()) - before >= 2 ? true : undefined,
    );
    await held.release();
    assert.equal((await node).metadata.name, 'node-0');
  } finally {
    c.close();
  }
});
