/**
 * Plans for the harness (tests, the chaos runner): the CRD as deploy/ ships it, Plans created or replaced
 * by name in their namespace (created too when missing), Plans deleted, and a channel server — a real
 * local HTTP server answering as a release channel does (302 to /releases/tag/<version>), whose version
 * a test changes mid-rollout.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, PLAN } from '../api/crd.ts';
import type { Plan, PlanSpec } from '../api/plan.ts';
import { statusCode } from '../kube/errors.ts';
import type { LocalCluster } from './cluster/cluster.ts';

export { installPlanCrd } from './crds.ts';

const REF = { group: API_GROUP, version: API_VERSION, plural: PLAN.plural };

/** Creates the namespace unless it exists. */
export async function ensureNamespace(cluster: LocalCluster, name: string): Promise<void> {
  const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
  try {
    await core.createNamespace({ body: { metadata: { name } } });
  } catch (err) {
    if (statusCode(err) !== 409) throw err;
  }
}

export interface PlanObject {
  namespace: string;
  name: string;
  spec: PlanSpec;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** Creates the Plan, or replaces the spec (and labels) of the one by that name. */
export async function applyPlan(cluster: LocalCluster, p: PlanObject): Promise<void> {
  await ensureNamespace(cluster, p.namespace);
  const custom = cluster.kubeconfig.makeApiClient(CustomObjectsApi);
  const metadata = {
    name: p.name,
    namespace: p.namespace,
    ...(p.labels ? { labels: p.labels } : {}),
    ...(p.annotations ? { annotations: p.annotations } : {}),
  };
  const body = { apiVersion: `${API_GROUP}/${API_VERSION}`, kind: PLAN.kind, metadata, spec: p.spec };
  try {
    await custom.createNamespacedCustomObject({ ...REF, namespace: p.namespace, body });
  } catch (err) {
    if (statusCode(err) !== 409) throw err;
    const live = (await custom.getNamespacedCustomObject({
      ...REF,
      namespace: p.namespace,
      name: p.name,
    })) as Plan;
    const replaced = { ...body, metadata: { ...metadata, resourceVersion: live.metadata.resourceVersion } };
    await custom.replaceNamespacedCustomObject({
      ...REF,
      namespace: p.namespace,
      name: p.name,
      body: replaced,
    });
  }
}

export async function readPlan(cluster: LocalCluster, namespace: string, name: string): Promise<Plan> {
  const custom = cluster.kubeconfig.makeApiClient(CustomObjectsApi);
  return (await custom.getNamespacedCustomObject({ ...REF, namespace, name })) as Plan;
}

/** Deletes the Plan; one already gone is fine. */
export async function deletePlan(cluster: LocalCluster, namespace: string, name: string): Promise<void> {
  const custom = cluster.kubeconfig.makeApiClient(CustomObjectsApi);
  try {
    await custom.deleteNamespacedCustomObject({ ...REF, namespace, name });
  } catch (err) {
    if (statusCode(err) !== 404) throw err;
  }
}

/** A release channel on loopback: GET /channel answers 302 to /releases/tag/<version>. */
export class ChannelServer {
  version: string;
  /** Requests answered so far. */
  requests = 0;
  /** The headers of each request, in order. */
  readonly headers: IncomingHttpHeaders[] = [];
  readonly #server: Server;

  constructor(version: string) {
    this.version = version;
    this.#server = createServer((req, res) => {
      this.requests++;
      this.headers.push(req.headers);
      if (req.url !== '/channel') {
        res.writeHead(404).end();
        return;
      }
      res
        .writeHead(302, { location: `${this.url.replace(/\/channel$/, '')}/releases/tag/${this.version}` })
        .end();
    });
  }

  get url(): string {
    const { port } = this.#server.address() as AddressInfo;
    return `http://127.0.0.1:${port}/channel`;
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
  }

  async stop(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
