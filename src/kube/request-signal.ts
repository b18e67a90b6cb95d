/**
 * Deadlines for API requests: @kubernetes/client-node's typed clients take an AbortSignal only through a
 * request middleware (RequestContext.setSignal, client-node-internals.ts lists it), and its
 * KubernetesObjectApi not even that way, so a read that must not outlive its deadline races it too.
 */
import {
  type ConfigurationOptions,
  Observable,
  type RequestContext,
  type ResponseContext,
} from '@kubernetes/client-node';

/** Request options that abort the request when `signal` aborts or after `timeoutMs`. */
export function withSignal(signal: AbortSignal | undefined, timeoutMs: number): ConfigurationOptions {
  const timeout = AbortSignal.timeout(timeoutMs);
  const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
  return {
    middleware: [
      {
        pre: (ctx: RequestContext) => {
          ctx.setSignal(combined);
          return new Observable(Promise.resolve(ctx));
        },
        post: (res: ResponseContext) => new Observable(Promise.resolve(res)),
      },
    ],
    middlewareMergeStrategy: 'append',
  };
}

/** `promise`, or a rejection with the signal's reason once it aborts: the caller never waits past it. */
export function settledBy<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}
