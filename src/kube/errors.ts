/** Reading the Kubernetes API's failures from @kubernetes/client-node's ApiException. */
import { ApiException } from '@kubernetes/client-node';

/** The `Status` object the API server returns with a failure (the fields nuo uses). */
export interface ApiStatus {
  message?: string;
  reason?: string;
  code?: number;
  details?: { causes?: Array<{ reason?: string; message?: string; field?: string }> };
}

/** HTTP status of an API failure, or undefined for a transport error (refused, reset, timeout). */
export function statusCode(err: unknown): number | undefined {
  return err instanceof ApiException ? err.code : undefined;
}

export function apiStatus(err: unknown): ApiStatus | undefined {
  if (!(err instanceof ApiException)) return undefined;
  const body: unknown = err.body;
  if (typeof body === 'string') {
    try {
      return JSON.parse(body) as ApiStatus;
    } catch {
      return { message: body };
    }
  }
  return (body ?? undefined) as ApiStatus | undefined;
}

/** A one-line description: the server's message when there is one, else the transport error. */
export function describeError(err: unknown): string {
  const status = apiStatus(err);
  if (status?.message) return `${status.message} (HTTP ${statusCode(err)})`;
  if (err instanceof ApiException) return `HTTP ${err.code}`;
  const e = err as { message?: string; cause?: { code?: string; message?: string } };
  const cause = e.cause?.code ?? e.cause?.message;
  return cause ? `${e.message ?? String(err)} (${cause})` : (e.message ?? String(err));
}
