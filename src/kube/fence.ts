/**
 * Fencing for requests that are not conditional. A node or ledger write carries the resourceVersion it
 * was decided on, so a stale leader's write is refused (409); an eviction, an Event or a drain's cordon
 * read-modify-write carries nothing of the kind, and a process paused past its Lease (a GC pause, a
 * frozen VM) would send what it had queued as soon as it resumes. The fence checks every request right
 * before it is written to its connection (undici's onRequestStart: after any wait in the pool's queue),
 * and drops it when:
 * - it would change something (not a read) and this replica does not lead now (the guard), or
 * - it belongs to an attempt whose signal has aborted (a drain ended by a step-down or a timeout): a
 *   request queued by a drain is never sent after the drain is over.
 * A dropped request fails with a FencedError; its caller treats it as the end of what it was doing.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Dispatcher } from 'undici';

/** Why a request was not sent. */
export class FencedError extends Error {
  constructor(reason: string) {
    super(`request not sent: ${reason}`);
    this.name = 'FencedError';
  }
}

/** The error, or one of its causes (a client wraps what the dispatcher threw), is a FencedError. */
export function isFenced(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++)
    if (e instanceof FencedError) return true;
  return false;
}

const READS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Why a request must not leave, or undefined: `notLeading` is the guard's reason (undefined while this
 * replica leads), `attempt` the request's attempt signal, if it was sent within one.
 */
export function fenceVerdict(
  method: string,
  notLeading: string | undefined,
  attempt: AbortSignal | undefined,
): string | undefined {
  if (attempt?.aborted) return 'its attempt has ended';
  if (notLeading !== undefined && !READS.has(method.toUpperCase())) return notLeading;
  return undefined;
}

type Handler = Dispatcher.DispatchHandler;

export class Fence {
  readonly #attempts = new AsyncLocalStorage<AbortSignal>();
  readonly #guard: () => string | undefined;

  /** `guard` says why this process may not change anything now (e.g. "not leading"), or undefined. */
  constructor(guard: () => string | undefined) {
    this.#guard = guard;
  }

  /** Runs `fn` as part of the attempt `signal` ends: every request it sends, now or later, is fenced by it. */
  run<T>(signal: AbortSignal, fn: () => T): T {
    return this.#attempts.run(signal, fn);
  }

  /** An undici interceptor applying the fence to every request dispatched through it. */
  readonly interceptor: Dispatcher.DispatcherComposeInterceptor = (dispatch) => (options, handler) => {
    // The attempt is the caller's, captured when the request is dispatched; the check is made later.
    const attempt = this.#attempts.getStore();
    const method = options.method ?? 'GET';
    return dispatch(options, this.#checked(handler, method, attempt));
  };

  #checked(handler: Handler, method: string, attempt: AbortSignal | undefined): Handler {
    const onRequestStart: Handler['onRequestStart'] = (controller, context) => {
      const reason = fenceVerdict(method, this.#guard(), attempt);
      if (reason !== undefined) {
        controller.abort(new FencedError(reason));
        return;
      }
      handler.onRequestStart?.(controller, context);
    };
    // Every other callback is the handler's own, bound to it (handlers keep private state).
    return new Proxy(handler, {
      get(target, prop) {
        if (prop === 'onRequestStart') return onRequestStart;
        const value = Reflect.get(target, prop, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  }
}
