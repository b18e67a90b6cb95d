/**
 * Widgets: a tiny namespaced custom resource whose `status.health` a test or a chaos run flips, which a
 * policy's health check reads as it would a CephCluster's.
 */
import { ApiextensionsV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { statusCode } from '../kube/errors.ts';
import { pollUntil } from '../util/poll.ts';

export interface WidgetKind {
  group: string;
  version: string;
  plural: string;
}

/** Installs the Widget CRD in `kind`'s group (already there: kept) and waits until `namespace` serves them. */
export async function installWidgetCrd(
  kubeconfig: KubeConfig,
  kind: WidgetKind,
  namespace: string,
): Promise<void> {
  await kubeconfig
    .makeApiClient(ApiextensionsV1Api)
    .createCustomResourceDefinition({
      body: {
        metadata: { name: `${kind.plural}.${kind.group}` },
        spec: {
          group: kind.group,
          scope: 'Namespaced',
          names: { kind: 'Widget', plural: kind.plural, singular: 'widget', listKind: 'WidgetList' },
          versions: [
            {
              name: kind.version,
              served: true,
              storage: true,
              schema: {
                openAPIV3Schema: {
                  type: 'object',
                  properties: { status: { type: 'object', properties: { health: { type: 'string' } } } },
                },
              },
            },
          ],
        },
      },
    })
    .catch((err: unknown) => {
      if (statusCode(err) !== 409) throw err;
    });
  const custom = kubeconfig.makeApiClient(CustomObjectsApi);
  await pollUntil('Widgets to be served', () =>
    custom.listNamespacedCustomObject({ ...kind, namespace }).then(
      () => true,
      () => undefined,
    ),
  );
}
