/**
 * Every place nuo relies on @kubernetes/client-node beyond its documented API, in one module.
 * test/unit/kube-client-node-internals.test.ts exercises each against the installed release, so an
 * upgrade that breaks one fails there, by name, instead of in a cluster.
 *
 * Wrapped here (used by the informer):
 * - Watch's private `requestTimeoutMs`, its client-side inactivity timeout: setWatchInactivityTimeout.
 * - The `statusCode` a Watch puts on the error of a watch answered with another HTTP status than 200:
 *   watchFailureStatus.
 * - ObjectSerializer, not exported from the package's index (a deep import): deserializeModel.
 *
 * Overridden or called elsewhere, covered by the same test:
 * - KubeConfig.createDispatcherOptions(cluster, agentOptions), overridden by PooledKubeConfig: called by
 *   applySecurityAuthentication for every request and watch; returns one of the kinds 'agent', 'proxy',
 *   'socks', 'none' ('none': the request goes through undici's global dispatcher).
 * - KubeConfig.applySecurityAuthentication(context), overridden by PooledKubeConfig: sets a new
 *   dispatcher on the RequestContext (getDispatcher/setDispatcher), which the Watch and the API clients
 *   then use; the Watch passes its full URL, `watch=true` included, which is how PooledKubeConfig tells
 *   watches from requests.
 * - RequestContext.setSignal in a request middleware (request-signal.ts): the API clients abort with it.
 */
import type { Watch } from '@kubernetes/client-node';
import { ObjectSerializer } from '@kubernetes/client-node/dist/gen/models/ObjectSerializer.js';

/**
 * Sets how long a watch may go without receiving data before the Watch aborts it (the library's default
 * is 30 s: quiet watches would end between bookmarks, about one a minute).
 */
export function setWatchInactivityTimeout(watch: Watch, ms: number): void {
  (watch as unknown as { requestTimeoutMs: number }).requestTimeoutMs = ms;
}

/** The HTTP status of a watch the server answered with something other than 200, from Watch's `done`. */
export function watchFailureStatus(err: unknown): number | undefined {
  const status = (err as { statusCode?: unknown } | null | undefined)?.statusCode;
  return typeof status === 'number' ? status : undefined;
}

/**
 * Parsed JSON as the library's model class `type` (e.g. 'V1Node': Date fields as Date), as its typed
 * API calls return them; a type the library does not know comes back as it was.
 */
export function deserializeModel<T>(raw: unknown, type: string): T {
  return ObjectSerializer.deserialize(raw, type, '') as T;
}
